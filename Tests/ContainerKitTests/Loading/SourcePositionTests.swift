import ContainerKit
import Foundation
import Testing

extension Loading {
    @Suite struct SourcePositionTests {
        /// CRLF line endings, a multi-byte character before values on the same line, nested arrays and objects.
        static let text =
            "{\r\n  \"a\": [1, {\"b\": \"é\"}],\r\n  \"ü\": \"x\", \"c\": {\"d\": [true, null]},\r\n"
            + "  \"a/b~\": [[[], [2]]]\r\n}\r\n"

        static let expected: [(pointer: String, line: Int, column: Int)] = [
            ("", 1, 1),
            ("/a", 2, 8),
            ("/a/0", 2, 9),
            ("/a/1", 2, 12),
            ("/a/1/b", 2, 18),
            ("/ü", 3, 8),
            ("/c", 3, 18),
            ("/c/d", 3, 24),
            ("/c/d/0", 3, 25),
            ("/c/d/1", 3, 31),
            ("/a~1b~0", 4, 11),
            ("/a~1b~0/0", 4, 12),
            ("/a~1b~0/0/1/0", 4, 18),
        ]

        @Test func recordsLineAndColumnOfValues() throws {
            let document = try readDocument(Self.text)
            let map = try #require(document.sourceMap)
            for (pointer, line, column) in Self.expected {
                let location = map.location(of: pointer)
                #expect(location?.line == line, "\(pointer)")
                #expect(location?.column == column, "\(pointer)")
                #expect(document.location(of: pointer) == location)
            }
        }

        @Test func offsetsAreBytesAndColumnsAreScalars() throws {
            let document = try readDocument(Self.text)
            let location = try #require(document.location(of: "/ü"))
            let bytes = Array(Self.text.utf8)
            #expect(bytes[location.offset] == UInt8(ascii: "\""))
            #expect(String(decoding: bytes[location.offset..<(location.offset + 3)], as: UTF8.self) == "\"x\"")
            #expect(location.column == 8)
        }

        @Test func recordsKeyLocations() throws {
            let document = try readDocument(Self.text)
            #expect(document.keyLocation(of: "/a")?.description == "2:3")
            #expect(document.keyLocation(of: "/a/1/b")?.description == "2:13")
            #expect(document.keyLocation(of: "/c/d")?.description == "3:19")
            #expect(document.keyLocation(of: "") == nil)
            #expect(document.keyLocation(of: "/a/0") == nil)
        }

        @Test func unknownPointersHaveNoLocation() throws {
            let document = try readDocument(Self.text)
            for pointer in ["/nope", "/a/2", "/a/-", "/a/01", "/a/0/x", "a", "/c/d/1/x", "/a~2"] {
                #expect(document.location(of: pointer) == nil, "\(pointer)")
                #expect(document.locate(pointer) == nil, "\(pointer)")
            }
        }

        @Test func locatesWithoutRecordedPositions() throws {
            let document = try readDocument(Self.text, positions: false)
            #expect(document.sourceMap == nil)
            #expect(document.location(of: "/a") == nil)
            for (pointer, line, column) in Self.expected {
                #expect(
                    document.locate(pointer)
                        == ContainerKit.SourceLocation(
                            line: line,
                            column: column,
                            offset: document.locate(pointer)?.offset ?? -1
                        ),
                    "\(pointer)"
                )
            }
            #expect(document.locateKey("/c/d")?.description == "3:19")
        }

        @Test func rescanningAgreesWithTheSourceMapEverywhere() throws {
            let text = #"""
                {"k": [1, 2.5, "s\"\\", {"x": {"y": []}, "x": [true, {}]}], "e\u00e9": {"": null, "é": [[]]},
                 "z": "\ud83d\ude00", "big": {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9,
                 "j": 10, "k": 11, "l": 12, "m": 13, "n": 14, "o": 15, "p": 16, "q": 17, "r": 18, "a": "last"}}
                """#
            let recorded = try readDocument(text)
            let scanned = try readDocument(text, positions: false)
            var pointers: [String] = []
            allPointers(recorded.value, into: &pointers)
            // The map also has the three values that duplicate keys overwrote.
            #expect(pointers.count + 3 == recorded.sourceMap?.valueCount)
            for pointer in pointers {
                let location = recorded.location(of: pointer)
                #expect(location != nil, "\(pointer)")
                #expect(scanned.locate(pointer) == location, "\(pointer)")
                #expect(scanned.locateKey(pointer) == recorded.keyLocation(of: pointer), "\(pointer)")
            }
            // The last of duplicate keys wins, in the map and in the rescan.
            #expect(recorded.location(of: "/k/3/x")?.column == 47)
            #expect(scanned.locate("/big/a")?.line == 3)
            #expect(recorded.location(of: "/big/a")?.line == 3)
        }

        @Test func canonicallyEquivalentKeysAreTwoMembersInBothModes() throws {
            // "é" precomposed, then decomposed: two keys, as JavaScript's JSON.parse sees them (code units).
            let text = "{\"\u{E9}\": 1, \"e\u{301}\": [2]}"
            let recorded = try readDocument(text)
            let scanned = try readDocument(text, positions: false)
            #expect(recorded.value == ["\u{E9}": 1, "e\u{301}": [2]])
            #expect(recorded.duplicateKeys.isEmpty)
            #expect(recorded.location(of: "/\u{E9}") != recorded.location(of: "/e\u{301}"))
            for pointer in ["/\u{E9}", "/e\u{301}", "/e\u{301}/0"] {
                #expect(recorded.location(of: pointer) != nil)
                #expect(scanned.locate(pointer) == recorded.location(of: pointer))
            }
        }

        @Test func countsLinesAfterByteOrderMarkAndLoneCarriageReturns() throws {
            let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("[1,\r2,\n3,\r\n\r\n 4]".utf8)
            let document = try readDocument(bytes)
            #expect(document.location(of: "")?.description == "1:1")
            #expect(document.location(of: "")?.offset == 3)
            #expect(document.location(of: "/1")?.description == "2:1")
            #expect(document.location(of: "/2")?.description == "3:1")
            #expect(document.location(of: "/3")?.description == "5:2")
            let scanned = try readDocument(bytes, positions: false)
            #expect(scanned.locate("/3") == document.location(of: "/3"))
        }

        @Test func readsTheGtmJsAssignmentWithPositionsInTheOriginalFile() throws {
            let text = "var data = {\n  \"resource\": {\"version\": \"1\"},\n  \"runtime\": [] };\n\n"
            let document = try readDocument(text)
            #expect(document.value == ["resource": ["version": "1"], "runtime": []])
            #expect(document.location(of: "")?.description == "1:12")
            #expect(document.location(of: "/resource/version")?.description == "2:27")
            #expect(document.location(of: "/runtime")?.description == "3:14")
            let scanned = try readDocument(text, positions: false)
            #expect(scanned.locate("/resource/version")?.description == "2:27")

            #expect(try readDocument("var data={\"a\":1}").value == ["a": 1])
            // Whatever follows the object is JavaScript, not read: `;;` is an empty statement.
            #expect(try readDocument("var data = {};;").value == [:])
            #expect(try #require(readError("var data {}")).message == "expected '=' after 'var data', found '{'")
            #expect(try #require(readError("var data = ")).message == "unexpected end of file, expected a value")
        }

        @Test func locationsAreComputedConsistentlyForLongLinesWithMultiByteText() throws {
            // One long line (minified) with non-ASCII text spread over several 1 KiB blocks.
            var parts: [String] = []
            for index in 0..<400 { parts.append("\"é€😀\(index)\"") }
            let text = "[" + parts.joined(separator: ",") + "]"
            let recorded = try readDocument(text)
            let scanned = try readDocument(text, positions: false)
            for index in stride(from: 0, to: 400, by: 37) {
                let location = try #require(recorded.location(of: "/\(index)"))
                #expect(location.line == 1)
                #expect(scanned.locate("/\(index)") == location)
                let prefix = String(decoding: Array(text.utf8)[..<location.offset], as: UTF8.self)
                #expect(location.column == prefix.unicodeScalars.count + 1)
            }
        }
    }
}
