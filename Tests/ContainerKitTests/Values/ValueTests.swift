import ContainerKit
import Testing

struct ValueTests {
    @Test(arguments: [
        (Value.int(42), "42"), (.double(2.5), "2.5"), (.double(3), "3"), (.bool(true), "true"),
        (.null, "null"), (.undefined, "undefined"), (.string("x"), "x"), (.array([1, "a", .null]), "1,a,"),
        (.object(["a": 1]), "[object Object]"), (.double(1e21), "1e+21"), (.double(1e-7), "1e-7"),
    ])
    func jsStringFollowsJavaScript(value: Value, expected: String) {
        #expect(value.jsString == expected)
    }

    // The byte writer's fast path (Swift's own digits when they are in fixed notation) must print every
    // number as JavaScript does, like the slow path.
    @Test(arguments: [
        4.5, -0.001, 0.0001, 0.00001, 1e-7, 123.456, 0.1 + 0.2, 4503599627370495.5, 1e15, 2e15, 1.5e20, 1e21,
        -1e-300, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude, 3, -0.5,
    ])
    func theByteWriterPrintsNumbersAsJavaScript(number: Double) {
        var writer = JSONByteWriter()
        writer.keepsNumberTypes = false
        writer.double(number)
        #expect(writer.text == Value.double(number).jsString)
    }

    @Test(arguments: [
        (Value.string("42"), 42.0 as Double?), (.string(" -1.5 "), -1.5), (.string("1e3"), 1000), (.int(7), 7),
        (.string(""), nil), (.string("abc"), nil), (.string("nan"), nil), (.string("0x10"), nil), (.bool(true), nil),
        (.null, nil), (.undefined, nil),
    ])
    func jsNumberIsNilForNonNumericValues(value: Value, expected: Double?) {
        #expect(value.jsNumber == expected)
    }

    @Test(
        arguments: [0x00, 0x09, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x41, 0x7F, 0x80, 0xA2, 0xDC, 0xFF]
            as [UInt8]
    )
    func theEscapeScanFindsEachByteThatNeedsEscapingAtEveryPosition(byte: UInt8) {
        let needed = byte < 0x20 || byte == 0x22 || byte == 0x5C
        // Every length around the eight-byte words, the byte at every position, between letters and between
        // bytes that are one off from the ones looked for.
        for filler in [0x61, 0x21, 0x23, 0x5B, 0x5D, 0x20] as [UInt8] {
            for count in 1...19 {
                for position in 0..<count {
                    var bytes = [UInt8](repeating: filler, count: count)
                    bytes[position] = byte
                    for start in 0...count {
                        let first = bytes.withUnsafeBufferPointer {
                            JSONByteWriter.firstByteToEscape(in: $0, from: start)
                        }
                        let expected = needed && position >= start ? position : count
                        #expect(
                            first == expected,
                            "byte \(byte) at \(position) of \(count) among \(filler), from \(start)"
                        )
                    }
                }
            }
        }
        #expect([UInt8]().withUnsafeBufferPointer { JSONByteWriter.firstByteToEscape(in: $0, from: 0) } == 0)
    }

    @Test func theEscapeScanReportsTheFirstOfSeveralBytesToEscape() {
        // A zero byte borrows from the lane above it; the scan must still name the lowest lane that matched,
        // whatever the bytes after it are.
        let specials: [UInt8] = [0x00, 0x1F, 0x22, 0x5C]
        let others: [UInt8] = [0x00, 0x01, 0x20, 0x21, 0x22, 0x23, 0x5B, 0x5C, 0x5D, 0x61, 0x80, 0xFF]
        for count in 2...17 {
            for first in 0..<(count - 1) {
                for special in specials {
                    for other in others {
                        var bytes = [UInt8](repeating: 0x61, count: count)
                        bytes[first] = special
                        bytes[first + 1] = other
                        let found = bytes.withUnsafeBufferPointer { JSONByteWriter.firstByteToEscape(in: $0, from: 0) }
                        #expect(found == first, "\(special) at \(first) then \(other), \(count) bytes")
                    }
                }
            }
        }
    }

    @Test func theByteWriterWritesStringsThatReadBackTheSame() throws {
        for text in [
            "", "plain", "a longer plain string of several words", "\"", "ends with a quote\"",
            "\\ starts with a backslash", "tab\tin the middle of a long string", "\u{1F}", "caf\u{E9} \u{1F3B5}",
            "twenty-four bytes long\n!",
        ] {
            var writer = JSONByteWriter()
            writer.string(text)
            #expect(try Value(jsonBytes: writer.bytes) == .string(text), "\(text.debugDescription)")
        }
    }

    @Test func theByteWriterGrowsFromAnyCapacityAndKeepsEveryByte() throws {
        // One value of every kind, long enough to outgrow the writer's buffer many times over.
        var map = ValueMap()
        for index in 0..<400 {
            map["key \(index) \"quoted\""] = .array([
                .int(Int64(index)), .double(Double(index) + 0.25),
                .string("value \(index)\n\(String(repeating: "x", count: index))"),
                .bool(index % 2 == 0), .null, .object(["nested": .int(-Int64(index))]),
            ])
        }
        let value = Value.object(map)
        for capacity in [0, 1, 16, 17, 4096] {
            var writer = JSONByteWriter(capacity: capacity)
            writer.value(value)
            #expect(writer.count == writer.bytes.count)
            #expect(try Value(jsonBytes: writer.bytes) == value, "capacity \(capacity)")
        }
        // Reading from an offset, and overwriting a byte in place.
        var writer = JSONByteWriter(capacity: 1)
        Array("[1,".utf8).withUnsafeBufferPointer { writer.append($0) }
        let start = writer.count
        writer.string("ab")
        writer.raw(0x5D)
        #expect(writer.withBytes(from: start) { Array($0) } == Array("\"ab\"]".utf8))
        writer[start + 1] = 0x63
        #expect(writer.text == "[1,\"cb\"]")
    }

    @Test func jsonWriterEscapesAndKeepsKeyOrder() {
        var map = ValueMap()
        map["z"] = "quote \" backslash \\ newline \n tab \t bell \u{07}"
        map["a"] = .array([.int(1), .double(1.5), .bool(false), .null, .undefined])
        map["skipped"] = .undefined
        #expect(
            JSONWriter.string(.object(map))
                == #"{"z":"quote \" backslash \\ newline \n tab \t bell \u0007","a":[1,1.5,false,null,null]}"#
        )
    }

    @Test func jsonWriterBytesAreTheUTF8OfItsText() {
        var map = ValueMap()
        map["text"] = "caf\u{E9} \u{1F3B7} \"q\" \u{1F}"
        map["numbers"] = .array([.int(-9_223_372_036_854_775_808), .int(0), .int(42), .double(2), .double(0.1)])
        map["nested"] = .object(["b": true, "a": .null])
        for sorted in [false, true] {
            for keeps in [false, true] {
                let value = Value.object(map)
                let text = JSONWriter.string(value, sortedKeys: sorted, keepsNumberTypes: keeps)
                #expect(JSONWriter.bytes(value, sortedKeys: sorted, keepsNumberTypes: keeps) == Array(text.utf8))
            }
        }
        #expect(
            JSONWriter.string(.object(map), sortedKeys: true, keepsNumberTypes: true)
                == #"{"nested":{"a":null,"b":true},"numbers":[-9223372036854775808,0,42,2.0,0.1],"#
                + #""text":"caf\#u{E9} \#u{1F3B7} \"q\" \u001f"}"#
        )
    }

    @Test func valueMapEqualityIgnoresOrderButIterationKeepsIt() {
        let a: ValueMap = ["x": 1, "y": 2]
        let b: ValueMap = ["y": 2, "x": 1]
        #expect(a == b)
        #expect(a.keys == ["x", "y"])
        var c = a
        c["x"] = nil
        #expect(c.keys == ["y"])
    }

    @Test func parsesJSONText() throws {
        let value = try Value(json: #"{"a": [1, 2.5, true, null, "s"]}"#)
        #expect(value == ["a": [1, 2.5, true, nil, "s"]])
        #expect(throws: ContainerError.self) { try Value(json: "{") }
    }

    static let nested: Value = ["a": ["b": [10, ["c": "deep"]]]]

    @Test(arguments: [
        ([String](), nested), (["a", "b", "0"], Value.int(10)), (["a", "b", "1", "c"], Value.string("deep")),
        (["a", "x"], Value.undefined), (["a", "b", "2"], Value.undefined), (["a", "b", "-1"], Value.undefined),
        (["a", "b", "first"], Value.undefined), (["a", "b", "0", "c"], Value.undefined),
    ])
    func aPathWalksMapsAndArraysTheSameFromAnArrayAndAnyCollection(path: [String], expected: Value) {
        #expect(Self.nested.value(atPath: path) == expected)
        #expect(Self.nested.value(atPath: path[...]) == expected)
    }
}
