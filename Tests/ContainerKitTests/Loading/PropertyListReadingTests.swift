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

        /// A random property-list object: dictionaries, arrays, strings with markup characters and non-ASCII text,
        /// integers of every size, reals, booleans, dates and data.
        static func randomObject(depth: Int, _ generator: inout RegexSeededGenerator) -> Any {
            let texts = [
                "", "a", "<key>", "&amp;", "]]>", "x < y & z > w", "\"'", "é€😀", " padded ", "line\nbreak", "tab\t",
            ]
            switch Int.random(in: 0..<(depth < 3 ? 9 : 7), using: &generator) {
            case 0: return texts.randomElement(using: &generator)!
            case 1: return Int64.random(in: .min ... .max, using: &generator)
            case 2: return Int.random(in: -1000...1000, using: &generator)
            case 3: return Double.random(in: -1e6...1e6, using: &generator)
            case 4: return Bool.random(using: &generator)
            case 5: return Date(timeIntervalSince1970: Double(Int.random(in: 0...2_000_000_000, using: &generator)))
            case 6:
                return Data(
                    (0..<Int.random(in: 0...9, using: &generator)).map { _ in
                        UInt8.random(in: 0...255, using: &generator)
                    }
                )
            case 7:
                return (0..<Int.random(in: 0...4, using: &generator)).map { _ in
                    randomObject(depth: depth + 1, &generator)
                }
            default:
                var dictionary: [String: Any] = [:]
                for _ in 0..<Int.random(in: 0...4, using: &generator) {
                    let key = texts.randomElement(using: &generator)! + String(Int.random(in: 0...9, using: &generator))
                    dictionary[key] = randomObject(depth: depth + 1, &generator)
                }
                return dictionary
            }
        }

        static func plist(_ object: Any, _ format: PropertyListSerialization.PropertyListFormat) throws -> [UInt8] {
            [UInt8](try PropertyListSerialization.data(fromPropertyList: object, format: format, options: 0))
        }

        @Test func readsXMLPropertyListsWithThePositionsOfTheirValues() throws {
            let bytes = try Self.plist(Self.plistObject, .xml)
            let document = try readDocument(bytes)
            #expect(document.syntax == .xmlPropertyList)
            #expect(document.value == Self.expected)
            // Each value is where its element starts, each member where its <key> starts, as in JSON.
            let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            func line(of element: String, after marker: String) -> (line: Int, column: Int)? {
                guard let markerLine = lines.firstIndex(where: { $0.contains(marker) }) else { return nil }
                for index in markerLine..<lines.count {
                    if let range = lines[index].range(of: element) {
                        return (
                            index + 1, lines[index].distance(from: lines[index].startIndex, to: range.lowerBound) + 1
                        )
                    }
                }
                return nil
            }
            let flags = try #require(document.locate("/flags"))
            let flagsKey = try #require(document.locateKey("/flags"))
            #expect((flagsKey.line, flagsKey.column) == line(of: "<key>flags</key>", after: "<key>flags</key>")!)
            #expect((flags.line, flags.column) == line(of: "<array>", after: "<key>flags</key>")!)
            let ratio = try #require(document.location(of: "/resource/tags/0/ratio"))
            #expect((ratio.line, ratio.column) == line(of: "<real>0.25</real>", after: "<key>ratio</key>")!)
            let sixth = try #require(document.location(of: "/flags/6"))
            #expect((sixth.line, sixth.column) == line(of: "<string>é€😀</string>", after: "<key>flags</key>")!)
            #expect(document.location(of: "/flags/7") == nil && document.location(of: "/nope") == nil)
            #expect(try readDocument(bytes, positions: false).sourceMap == nil)
        }

        @Test func readsXMLPropertyListsAsFoundationDoes() throws {
            // Objects of every kind a property list holds, with the characters XML must escape, read by ContainerKit
            // and by Foundation: the same values.
            var generator = RegexSeededGenerator(state: 7)
            for round in 0..<60 {
                let object = Self.randomObject(depth: 0, &generator)
                let bytes = try Self.plist(object, .xml)
                let ours = try readDocument(bytes).value
                let binary = try readDocument(try Self.plist(object, .binary)).value
                #expect(ours == binary, "round \(round)")
            }
            let handWritten: [(String, Value)] = [
                (
                    "<plist><string>a<![CDATA[<&>]]>b&#65;&#x42;&lt;&gt;&amp;&quot;&apos;</string></plist>",
                    "a<&>bAB<>&\"'"
                ),
                ("<plist><string>a\r\nb</string></plist>", "a\r\nb"),
                (
                    "<plist><array><integer>0x1F</integer><integer>-0X10</integer><integer>+007</integer></array></plist>",
                    [31, -16, 7]
                ),
                (
                    "<plist><array><integer>-9223372036854775808</integer><integer>18446744073709551615</integer></array></plist>",
                    [.int(.min), .double(Double(UInt64.max))]
                ),
                (
                    "<plist><array><real>1e3</real><real>.5</real><real>3</real><real>-2.5E-1</real></array></plist>",
                    [.double(1000), .double(0.5), .double(3), .double(-0.25)]
                ),
                (
                    "<plist><array><key>k</key><true></true><false/><string/><dict/><array></array></array></plist>",
                    ["k", true, false, "", .object([:]), []]
                ),
                ("<?xml version=\"1.0\"?>\n<dict><key>a</key><integer>1</integer></dict>\n<!-- end -->\n", ["a": 1]),
                ("<plist version=\"1.0\"><string a=\"1\" b='2' >x</string ></plist >", "x"),
                ("<plist><data>\n  AAEC\n  +g==\n</data></plist>", "AAEC+g=="),
                ("<plist><date>2024-02-29T23:59:59Z</date></plist>", "2024-02-29T23:59:59Z"),
            ]
            // Comments and processing instructions inside text are left out, as XML says (Foundation refuses them).
            #expect(try readDocument("<plist><string>a<!-- not text -->b<?pi x?>c</string></plist>").value == "abc")
            // What Foundation also reads, compared with Foundation only: dates whose fields roll over and dates
            // before the Gregorian calendar, base64 with odd padding, whitespace before numbers.
            let readLikeFoundation = [
                "<plist><date>2023-02-29T00:00:00Z</date></plist>", "<plist><date>2024-12-31T24:00:00Z</date></plist>",
                "<plist><date>2024-13-01T00:00:00Z</date></plist>", "<plist><date>1000-01-01T00:00:00Z</date></plist>",
                "<plist><date>0001-01-01T00:00:00Z</date></plist>", "<plist><date>12345-06-07T08:09:10Z</date></plist>",
                "<plist><data>AAECAw</data></plist>", "<plist><data>QQ==QQ==</data></plist>",
                "<plist><data>QQ=</data></plist>", "<plist><data>Q===</data></plist>",
                "<plist><data>AAECA</data></plist>",
                "<plist><array><integer> 5</integer><integer>- 5</integer>"
                    + "<real> 1.5</real><integer>\u{0B}5</integer><real>\u{0C}1.5</real></array></plist>",
                "<plist><date>2024-00-01T00:00:00Z</date></plist>", "<plist><date>2024-14-01T00:00:00Z</date></plist>",
                // A text that starts with a newline (a protobuf field's tag) and holds a control byte is markup.
                "\n<plist><string>\u{01}</string><!-- padding padding padding padding padding --></plist>",
            ]
            for text in readLikeFoundation {
                let foundation = try PropertyListSerialization.propertyList(from: Data(text.utf8), format: nil)
                let binary = try readDocument(try Self.plist(foundation, .binary)).value
                #expect(try readDocument(text).value == binary, "\(text)")
            }
            for (text, expected) in handWritten {
                #expect(try readDocument(text).value == expected, "\(text)")
                let foundation = try PropertyListSerialization.propertyList(from: Data(text.utf8), format: nil)
                let binary = try readDocument(try Self.plist(foundation, .binary)).value
                #expect(binary == expected, "Foundation reads \(text) the same way")
            }
        }

        @Test func keepsTheLastOfARepeatedXMLKeyAndReportsIt() throws {
            let text =
                "<plist>\n<dict>\n  <key>a</key><integer>1</integer>\n  <key>a</key><integer>2</integer>\n</dict>\n</plist>"
            let document = try readDocument(text)
            #expect(document.value == ["a": 2])
            #expect(document.duplicateKeys.map(\.description) == ["4:3: duplicate key 'a' in object at ''"])
            #expect(document.locate("/a")?.description == "4:15")
            // Keys are told apart by their bytes, as in JSON: a composed and a decomposed "é" are two members.
            let equivalent = "<plist><dict><key>caf\u{E9}</key><true/><key>cafe\u{301}</key><false/></dict></plist>"
            #expect(try readDocument(equivalent).value.objectValue?.count == 2)
        }

        @Test func aKeyRepeatedManyTimesDeepInsideIsReportedEachTimeWithItsDictionarysPointer() throws {
            let outer = (0..<10).map { "<dict><key>\(String(repeating: "k", count: 100))\($0)</key>" }.joined()
            let inner = "<dict>" + String(repeating: "<key>a</key><true/>", count: 5_000) + "</dict>"
            let text = "<plist>" + outer + inner + String(repeating: "</dict>", count: 10) + "</plist>"
            let document = try readDocument(text)
            #expect(document.duplicateKeys.count == 4_999)
            let pointer = (0..<10).map { "/" + String(repeating: "k", count: 100) + "\($0)" }.joined()
            #expect(document.duplicateKeys.allSatisfy { $0.pointer == pointer && $0.key == "a" })
            // Many XML declarations before the root are each checked for an encoding, within their own text.
            let declared = String(repeating: "<?xml version=\"1.0\"?>", count: 2_000) + "<plist><true/></plist>"
            #expect(try readDocument(declared).value == true)
        }

        @Test func decodesLatin1AndRefusesOtherDeclaredEncodings() throws {
            let latin1: [UInt8] =
                Array("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><plist><string>caf".utf8) + [0xE9]
                + Array("</string></plist>".utf8)
            #expect(try readDocument(latin1).value == "café")
            let withEntity =
                Array("<?xml version='1.0' encoding='latin1'?><plist><string>".utf8) + [0xE9]
                + Array("&amp;</string></plist>".utf8)
            #expect(try readDocument(withEntity).value == "é&")
            let error = try #require(
                readError("<?xml version=\"1.0\" encoding=\"Shift_JIS\"?>\n<plist><string/></plist>")
            )
            #expect(error.code == .syntax)
            #expect(error.location?.description == "1:31")
            #expect(
                error.message
                    == "the file declares encoding 'Shift_JIS': property lists are read as utf-8 (or iso-8859-1); save it as utf-8"
            )
        }

        @Test(arguments: [
            (
                "<plist>\n<dict><key>a</key></dict></plist>", "2:19", "the <dict> ends after key 'a' without its value",
                "/a"
            ),
            (
                "<plist><dict>\n <key>r</key><dict><key>v</key><string>1</strin></dict></dict></plist>", "2:41",
                "'</strin>' does not close the <string> that starts at column 32", "/r/v"
            ),
            ("<plist><array><integer>abc</integer></array></plist>", "1:15", "'abc' is not an integer", "/0"),
            ("<plist><integer/></plist>", "1:8", "empty <integer>", ""),
            (
                "<plist><integer>99999999999999999999</integer></plist>", "1:8",
                "integer '99999999999999999999' is out of range", ""
            ),
            ("<plist><real>1,5</real></plist>", "1:8", "'1,5' is not a real number", ""),
            ("<plist><true!/></plist>", "1:13", "expected whitespace, '/' or '>' after <true, found '!'", ""),
            ("<plist><string>&#+65;</string></plist>", "1:16", "invalid character reference '&#+65;'", ""),
            ("<plist><integer>１２</integer></plist>", "1:8", "'１２' is not an integer", ""),
            ("<plist><date>yesterday</date></plist>", "1:8", "'yesterday' is not a date (YYYY-MM-DDThh:mm:ssZ)", ""),
            ("<plist><data>AA!=</data></plist>", "1:8", "invalid base64 character '!' in <data>", ""),
            (
                "<plist><dict><string>a</string></dict></plist>", "1:14",
                "expected a <key> in the <dict>, found <string>", ""
            ),
            ("<plist><array>hello</array></plist>", "1:15", "unexpected text inside <array>: found 'hello'", "/0"),
            ("<plist><String>x</String></plist>", "1:8", "unknown element <String>", ""),
            (
                "<plist><string>a<b</string></plist>", "1:17",
                "unexpected element <b> inside <string> (write '<' in text as &lt;)", ""
            ),
            ("<plist><string>&nbsp;</string></plist>", "1:16", "unknown entity '&nbsp;'", ""),
            (
                "<plist><string>a & b</string></plist>", "1:18",
                "'&' does not start an entity (write '&' in text as &amp;)", ""
            ),
            ("<plist><string>&#xD800;</string></plist>", "1:16", "'&#xD800;' is not a unicode character", ""),
            ("<plist><true>x</true></plist>", "1:14", "<true> must be empty", ""),
            ("<plist></plist>", "1:8", "<plist> holds no value", ""),
            ("</plist>", "1:1", "expected the <plist> element, found </plist>", ""),
            (
                "<plist><string/><string/></plist>", "1:17",
                "<plist> holds more than one value: found <string> after the first", ""
            ),
            ("<plist><string/></plist>junk", "1:25", "unexpected content after the property list: found 'junk'", ""),
            (
                "<?xml version=\"1.0\"?>\n<html><body/></html>", "2:1",
                "the root element is <html>, not <plist>: this is not a property list", ""
            ),
            (
                "<plist><array>\n<string>a</string>", "2:19",
                "unexpected end of file inside <array> that starts at 1:8", "/1"
            ),
            ("<plist><string>ab", "1:18", "unexpected end of file inside <string> that starts at column 8", ""),
            ("<plist><!-- a", "1:14", "unexpected end of file inside comment that starts at column 8", ""),
            ("<plist><string>a\u{FF}</string></plist>", "1:17", "", ""),
        ])
        func anXMLPropertyListErrorSaysWhatAndWhere(text: String, location: String, message: String, pointer: String)
            throws
        {
            var bytes = Array(text.utf8)
            if message.isEmpty {
                // An invalid UTF-8 byte (0xff) where the text has ÿ.
                bytes = Array("<plist><string>a".utf8) + [0xFF] + Array("</string></plist>".utf8)
            }
            let error = try #require(readError(bytes))
            #expect(error.code == .syntax)
            #expect(error.location?.description == location)
            #expect(error.message == (message.isEmpty ? "invalid utf-8 byte 0xff in <string>" : message))
            #expect(error.pointer == pointer)
            #expect(error.file == "test.json")
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

        @Test func refusesEveryCutOfAnXMLPropertyList() throws {
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

        @Test func refusesDeeplyNestedXMLPropertyLists() throws {
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
