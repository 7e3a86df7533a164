import ContainerKit
import Foundation
import Testing

extension Loading {
    @Suite struct PropertyListReadingTests {
        /// A container-like structure in Foundation types, and the value it must read back as.
        static var plistObject: [String: Any] {
            [
                "resource": [
                    "version": "12",
                    "macros": [["function": "__e", "instance_name": "Event Name"]],
                    "tags": [["function": "__funct", "once_per_event": true, "tag_id": 3, "ratio": 0.25]],
                ] as [String: Any],
                "flags": [true, false, 1, 0, 2.0, -7, "é€😀"] as [Any],
                "empty": [String: Any](),
                "nothing": [Any](),
            ]
        }

        static let expected: Value = [
            "resource": [
                "version": "12",
                "macros": [["function": "__e", "instance_name": "Event Name"]],
                "tags": [["function": "__funct", "once_per_event": true, "tag_id": 3, "ratio": 0.25]],
            ],
            "flags": [true, false, 1, 0, .double(2), -7, "é€😀"],
            "empty": .object([:]),
            "nothing": [],
        ]

        static func plist(_ object: Any, _ format: PropertyListSerialization.PropertyListFormat) throws -> [UInt8] {
            [UInt8](try PropertyListSerialization.data(fromPropertyList: object, format: format, options: 0))
        }

        @Test func readsXMLPropertyLists() throws {
            let document = try readDocument(try Self.plist(Self.plistObject, .xml))
            #expect(document.syntax == .xmlPropertyList)
            #expect(document.value == Self.expected)
            #expect(document.sourceMap == nil)
            #expect(document.locate("/flags") == nil)
        }

        @Test func readsBinaryPropertyLists() throws {
            let document = try readDocument(try Self.plist(Self.plistObject, .binary))
            #expect(document.syntax == .binaryPropertyList)
            #expect(document.value == Self.expected)
        }

        @Test func keepsBooleansIntegersAndDoublesApart() throws {
            for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
                let value = try readDocument(
                    try Self.plist([true, 1, 1.0, false, 0, 0.0, UInt64.max] as [Any], format)
                ).value
                let list = try #require(value.arrayValue)
                #expect(list[0] == .bool(true))
                #expect(list[1] == .int(1))
                #expect(list[2] == .double(1))
                #expect(list[3] == .bool(false))
                #expect(list[4] == .int(0))
                #expect(list[5] == .double(0))
                #expect(list[6] == .double(Double(UInt64.max)))
            }
        }

        @Test func sortsDictionaryKeys() throws {
            let object: [String: Any] = ["zebra": 1, "apple": 2, "mango": 3, "Banana": 4]
            for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
                let value = try readDocument(try Self.plist(object, format)).value
                #expect(value.objectValue?.keys == ["Banana", "apple", "mango", "zebra"])
            }
        }

        @Test func writesDatesAsISO8601AndDataAsBase64() throws {
            let object: [String: Any] = [
                "when": Date(timeIntervalSince1970: 1_600_000_000),
                "bytes": Data([0, 1, 2, 250]),
            ]
            for format in [PropertyListSerialization.PropertyListFormat.xml, .binary] {
                let value = try readDocument(try Self.plist(object, format)).value
                #expect(value == ["when": "2020-09-13T12:26:40Z", "bytes": "AAEC+g=="])
            }
        }

        @Test func acceptsXMLPropertyListsWithoutDeclarations() throws {
            let document = try readDocument(
                "\n<plist version=\"1.0\"><dict><key>a</key><integer>1</integer></dict></plist>"
            )
            #expect(document.value == ["a": 1])
            let doctype = "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"x\"><plist><array/></plist>"
            #expect(try readDocument(doctype).value == [])
        }

        @Test func reportsMalformedXMLPropertyLists() throws {
            let error = try #require(readError("<?xml version=\"1.0\"?>\n<plist><dict><key>a</key></dict></plist>"))
            #expect(error.code == .syntax)
            #expect(error.message.hasPrefix("malformed xml property list: "))
            #expect(error.message.contains("line"))
            #expect(error.file == "test.json")

            let xml = try Self.plist(Self.plistObject, .xml)
            for length in stride(from: 1, to: xml.count - 10, by: 37) {
                let error = readError(Array(xml[..<length]))
                #expect(error?.code == .syntax, "cut at \(length)")
            }
        }

        @Test func refusesRealsThatAreNotFinite() throws {
            let error = try #require(
                readError("<plist><dict><key>k</key><array><real>nan</real></array></dict></plist>")
            )
            #expect(error.code == .syntax)
            #expect(error.message == "real number 'nan' is not finite")
            #expect(error.pointer == "/k/0")
        }

        @Test func refusesDeeplyNestedXMLPropertyListsBeforeFoundationRecurses() throws {
            let text =
                "<plist>\n" + String(repeating: "<array>", count: 10_000) + String(repeating: "</array>", count: 10_000)
                + "</plist>"
            let error = try #require(readError(text))
            #expect(error.code == .nestingTooDeep)
            #expect(error.location?.description == "2:1793")  // the 257th <array>: 1 + 256 × 7
            let fine =
                "<plist>" + String(repeating: "<array>", count: 256) + String(repeating: "</array>", count: 256)
                + "</plist>"
            #expect(throws: Never.self) { try readDocument(fine) }
        }

        @Test func reportsCorruptBinaryPropertyLists() throws {
            for bytes in [
                Array("bplist00".utf8), Array("bplist00garbage".utf8),
                Array("bplist00".utf8) + [UInt8](repeating: 0xFF, count: 40),
            ] {
                let error = try #require(readError(bytes))
                #expect(error.code == .syntax)
                #expect(error.message.hasPrefix("malformed binary property list: "))
            }
            let binary = try Self.plist(Self.plistObject, .binary)
            for length in stride(from: 0, to: binary.count, by: 7) {
                let error = readError(Array("bplist00".utf8) + Array(binary[8..<max(8, length)]))
                #expect(error?.code == .syntax, "cut at \(length)")
            }
        }

        @Test func neverCrashesOnMutatedBinaryPropertyLists() throws {
            let binary = try Self.plist(Self.plistObject, .binary)
            var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
            func next() -> UInt64 {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return seed >> 33
            }
            var failures = 0
            for _ in 0..<400 {
                var bytes = binary
                for _ in 0..<(1 + Int(next() % 3)) {
                    let position = 8 + Int(next() % UInt64(bytes.count - 8))
                    bytes[position] = UInt8(truncatingIfNeeded: next())
                }
                do {
                    _ = try ContainerLoader().readDocument(bytes: bytes)
                } catch {
                    failures += 1
                }
            }
            #expect(failures > 0)
        }

        @Test func refusesDeeplyNestedBinaryPropertyLists() throws {
            var builder = BinaryPlistBuilder()
            for index in 0..<1000 { builder.add(BinaryPlistBuilder.array([index + 1])) }
            builder.add(BinaryPlistBuilder.array([]))
            let error = try #require(readError(builder.build()))
            #expect(error.code == .nestingTooDeep)
        }

        @Test func refusesBinaryPropertyListsThatContainThemselves() throws {
            var builder = BinaryPlistBuilder()
            builder.add(BinaryPlistBuilder.array([1]))
            builder.add(BinaryPlistBuilder.array([2, 0]))
            builder.add(BinaryPlistBuilder.string("x"))
            let error = try #require(readError(builder.build()))
            #expect(error.code == .syntax)
            #expect(error.message == "malformed binary property list: object 0 contains itself")
        }

        @Test func refusesBinaryPropertyListsThatExpandExponentially() throws {
            var builder = BinaryPlistBuilder()
            for index in 0..<60 { builder.add(BinaryPlistBuilder.array([index + 1, index + 1])) }
            builder.add(BinaryPlistBuilder.string("x"))
            let error = try #require(readError(builder.build()))
            #expect(error.code == .tooLarge)
        }

        /// The 46-byte file that killed `run`, `lint` and `preview` with SIGSEGV inside Foundation: a set of one
        /// integer.
        static let setOfOneInteger: [UInt8] =
            Array("bplist00".utf8) + [0xC1, 0x01, 0x10, 0x01, 0x08, 0x0A] + [0, 0, 0, 0, 0, 0, 1, 1]
            + [0, 0, 0, 0, 0, 0, 0, 2] + [0, 0, 0, 0, 0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 0x0C]

        @Test func refusesBinaryPropertyListsHoldingASetBeforeFoundationSeesThem() throws {
            #expect(Self.setOfOneInteger.count == 46)
            let error = try #require(readError(Self.setOfOneInteger))
            #expect(error.code == .syntax)
            #expect(
                error.message
                    == "malformed binary property list: object 0 has type set, which a property list cannot hold"
            )
        }

        @Test(arguments: [
            ([0xB0] as [UInt8], "ordered set"), ([0x80, 0x01], "uid"), ([0x00], "null"), ([0x0F], "fill"),
            ([0x71, 0x41], "utf-8 string"), ([0x0C], "0xc"), ([0x15] + [UInt8](repeating: 0, count: 32), "0x15"),
            ([0x21, 0, 0], "0x21"), ([0x30, 0], "0x30"), ([0x90], "0x90"), ([0xE0], "0xe0"), ([0xF0], "0xf0"),
        ])
        func refusesEveryTypeAPropertyListCannotHold(object: [UInt8], name: String) throws {
            var builder = BinaryPlistBuilder()
            builder.add(BinaryPlistBuilder.array([1]))
            builder.add(object)
            let error = try #require(readError(builder.build()))
            #expect(
                error.message
                    == "malformed binary property list: object 1 has type \(name), which a property list cannot hold"
            )
        }

        @Test func readsSharedObjectsInHandWrittenBinaryPropertyLists() throws {
            var builder = BinaryPlistBuilder()
            builder.add(BinaryPlistBuilder.array([1, 2, 1]))
            builder.add(BinaryPlistBuilder.string("x"))
            builder.add([0x09])  // true
            #expect(try readDocument(builder.build()).value == ["x", true, "x"])
        }
    }
}

/// Writes minimal bplist00 files by hand (2-byte object references, 4-byte offsets).
struct BinaryPlistBuilder {
    var objects: [[UInt8]] = []

    mutating func add(_ object: [UInt8]) { objects.append(object) }

    static func array(_ references: [Int]) -> [UInt8] {
        var bytes: [UInt8] =
            references.count < 15
            ? [0xA0 | UInt8(references.count)]
            : [0xAF, 0x11, UInt8(references.count >> 8), UInt8(references.count & 0xFF)]
        for reference in references { bytes += [UInt8(reference >> 8), UInt8(reference & 0xFF)] }
        return bytes
    }

    static func string(_ ascii: String) -> [UInt8] {
        [0x50 | UInt8(ascii.utf8.count)] + Array(ascii.utf8)
    }

    func build(top: Int = 0) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let tableOffset = bytes.count
        for offset in offsets { bytes += bigEndian(UInt64(offset), size: 4) }
        bytes += [0, 0, 0, 0, 0, 0, 4, 2]
        bytes += bigEndian(UInt64(objects.count), size: 8)
        bytes += bigEndian(UInt64(top), size: 8)
        bytes += bigEndian(UInt64(tableOffset), size: 8)
        return bytes
    }

    private func bigEndian(_ value: UInt64, size: Int) -> [UInt8] {
        (0..<size).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64(size - 1 - $0))) }
    }
}
