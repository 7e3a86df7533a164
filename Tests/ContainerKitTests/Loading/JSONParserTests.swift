import ContainerKit
import Foundation
import Testing

extension Loading {
    @Suite struct JSONParserTests {
        @Test func readsEveryKindOfValue() throws {
            let text =
                #"{"s": "text", "i": 42, "n": -7, "d": 1.5, "e": 1e3, "t": true, "f": false, "z": null, "#
                + #""a": [1, [], {}]}"#
            let document = try readDocument(text)
            #expect(document.syntax == .json)
            let expected: Value = [
                "s": "text", "i": 42, "n": -7, "d": 1.5, "e": .double(1000), "t": true, "f": false, "z": nil,
                "a": [1, [], .object([:])],
            ]
            #expect(document.value == expected)
            #expect(document.duplicateKeys.isEmpty)
        }

        @Test func keepsKeysInFileOrder() throws {
            let document = try readDocument(#"{"zebra": 1, "apple": 2, "mango": 3}"#)
            #expect(document.value.objectValue?.keys == ["zebra", "apple", "mango"])
        }

        @Test func readsTopLevelScalars() throws {
            #expect(try readDocument("42").value == .int(42))
            #expect(try readDocument(" \"x\" ").value == .string("x"))
            #expect(try readDocument("null").value == .null)
        }

        @Test(arguments: [
            ("0", Value.int(0)),
            ("-0", .int(0)),
            ("9223372036854775807", .int(.max)),
            ("-9223372036854775808", .int(.min)),
            ("9223372036854775808", .double(9_223_372_036_854_775_808)),
            ("-9223372036854775809", .double(-9_223_372_036_854_775_808)),
            ("123456789012345678901234567890", .double(1.2345678901234568e29)),
            ("1.0", .double(1)),
            ("2E2", .double(200)),
            ("-1.25e-2", .double(-0.0125)),
            ("1e-400", .double(0)),
            ("0.1", .double(0.1)),
        ])
        func readsNumbersAsJSONWritesThem(text: String, expected: Value) throws {
            #expect(try readDocument(text).value == expected)
        }

        @Test func decodesEscapesAndUnicode() throws {
            let text = #"["a\"b\\c\/d", "\b\f\n\r\t", "\u00e9\u20AC", "\ud83d\ude00", "é€😀", "\u0000"]"#
            let document = try readDocument(text)
            #expect(document.value == ["a\"b\\c/d", "\u{8}\u{C}\n\r\t", "é€", "😀", "é€😀", "\u{0}"])
        }

        @Test func readsLongStringsWithEscapesInTheMiddle() throws {
            let long = String(repeating: "abcdefgh", count: 100)
            let document = try readDocument("[\"\(long)\\n\(long)é\(long)\"]")
            #expect(document.value == [.string(long + "\n" + long + "é" + long)])
        }

        @Test func recordsDuplicateKeysAndKeepsTheLastValue() throws {
            let text = "{\"a\": 1,\n \"b\": {\"x\": 1, \"x\": 2, \"x\": 3},\n \"a\": 4}"
            let document = try readDocument(text, positions: false)
            #expect(document.value == ["a": 4, "b": ["x": 3]])
            #expect(document.value.objectValue?.keys == ["a", "b"])
            let duplicates = document.duplicateKeys.map { "\($0.pointer) \($0.key) \($0.location)" }
            #expect(duplicates == ["/b x 2:16", "/b x 2:24", " a 3:2"])
        }

        @Test func acceptsTheDepthLimitExactly() throws {
            let text = String(repeating: "[", count: 256) + String(repeating: "]", count: 256)
            #expect(throws: Never.self) { try readDocument(text) }
        }

        @Test func refusesTenThousandLevelsOfNestingWithoutRecursing() throws {
            let error = try #require(readError(String(repeating: "[", count: 10_000)))
            #expect(error.code == .nestingTooDeep)
            #expect(error.message == "arrays and objects nest deeper than the limit of 256")
            #expect(error.location == ContainerKit.SourceLocation(line: 1, column: 257, offset: 256))
            #expect(error.pointer == String(repeating: "/0", count: 256))

            let objects = String(repeating: #"{"k":"#, count: 10_000)
            let objectError = try #require(readError(objects, options: LoadOptions(maximumDepth: 3)))
            #expect(objectError.code == .nestingTooDeep)
            #expect(objectError.pointer == "/k/k/k")
            #expect(objectError.location?.column == 16)
        }

        @Test func reportsEmptyAndBlankFiles() throws {
            let empty = try #require(readError(""))
            #expect(empty.code == .syntax)
            #expect(empty.message == "file is empty")
            let blank = try #require(readError(" \n\t\r\n "))
            #expect(blank.code == .syntax)
            #expect(blank.message == "file contains only whitespace")
        }

        @Test func refusesFilesOverTheSizeLimitBeforeParsing() throws {
            let bytes = [UInt8](repeating: 0x20, count: 50 * 1024 * 1024)
            let error = try #require(readError(bytes))
            #expect(error.code == .fileTooLarge)
            #expect(error.message == "file is 52428800 bytes, more than the limit of 16777216 bytes")
            #expect(error.file == "test.json")
        }

        struct Malformed: Sendable, CustomTestStringConvertible {
            var text: String
            var message: String
            var line: Int
            var column: Int
            var pointer: String
            var testDescription: String { text.debugDescription }

            init(_ text: String, _ message: String, _ line: Int, _ column: Int, _ pointer: String = "") {
                (self.text, self.message, self.line, self.column, self.pointer) = (text, message, line, column, pointer)
            }
        }

        @Test(arguments: [
            Malformed("{\"a\": 1 \"b\": 2}", "expected ',' or '}' after object member, found '\"'", 1, 9),
            Malformed("[1 2]", "expected ',' or ']' after array element, found '2'", 1, 4),
            Malformed("{\"a\" 1}", "expected ':' after object key 'a', found '1'", 1, 6, "/a"),
            Malformed("{a: 1}", "expected '\"' to start an object key, found 'a'", 1, 2),
            Malformed("[1, 2,]", "trailing comma before ']'", 1, 7),
            Malformed("{\"a\": [],\n}", "trailing comma before '}'", 2, 1),
            Malformed("[1,,2]", "expected a value, found ','", 1, 4, "/1"),
            Malformed("{\"a\":}", "expected a value, found '}'", 1, 6, "/a"),
            Malformed("[NaN]", "expected a value, found 'NaN'", 1, 2, "/0"),
            Malformed("[-Infinity]", "invalid number '-Infinity'", 1, 2, "/0"),
            Malformed("[tru]", "invalid literal 'tru'", 1, 2, "/0"),
            Malformed("[nullx]", "invalid literal 'nullx'", 1, 2, "/0"),
            Malformed("[True]", "expected a value, found 'True'", 1, 2, "/0"),
            Malformed("// comment\n{}", "comments are not allowed in json", 1, 1),
            Malformed("[1] /* c */", "unexpected '/' after the json document", 1, 5),
            Malformed("{} {}", "unexpected '{' after the json document", 1, 4),
            Malformed("[0123]", "leading zeros are not allowed in number '0123'", 1, 2, "/0"),
            Malformed("[-01]", "leading zeros are not allowed in number '-01'", 1, 2, "/0"),
            Malformed("[1.]", "invalid number '1.]'", 1, 2, "/0"),
            Malformed("[.5]", "expected a value, found '.'", 1, 2, "/0"),
            Malformed("[+1]", "expected a value, found '+'", 1, 2, "/0"),
            Malformed("[1e]", "invalid number '1e]'", 1, 2, "/0"),
            Malformed("[1e999]", "number '1e999' is out of range", 1, 2, "/0"),
            Malformed("[0x1F]", "invalid number '0x1F'", 1, 2, "/0"),
            Malformed("{\"k\": \"a\\qb\"}", "invalid escape '\\q'", 1, 9, "/k"),
            Malformed("[\"\\u12G4\"]", "invalid unicode escape '\\u12G'", 1, 3, "/0"),
            Malformed("[\"\\ud800\"]", "lone surrogate '\\ud800' in string", 1, 3, "/0"),
            Malformed("[\"\\ud800\\u0041\"]", "lone surrogate '\\ud800' in string", 1, 3, "/0"),
            Malformed("[\"x\\udc00\"]", "lone surrogate '\\udc00' in string", 1, 4, "/0"),
            Malformed("[\"a\tb\"]", "control character U+0009 must be escaped in a string", 1, 4, "/0"),
            Malformed("{\"a\":\n\"line\nbreak\"}", "control character U+000A must be escaped in a string", 2, 6, "/a"),
            Malformed(
                "{\"a\": [1, {\"b\": \"é",
                "unexpected end of file inside string that starts at column 17",
                1,
                19,
                "/a/1/b"
            ),
            Malformed("{\"a\": [1, 2", "unexpected end of file inside array that starts at column 7", 1, 12, "/a"),
            Malformed("{\"a\": 1,\n  ", "unexpected end of file inside object that starts at 1:1", 2, 3),
            Malformed("[\"\\", "unexpected end of file inside string that starts at column 2", 1, 4, "/0"),
            Malformed("[-", "unexpected end of file inside number '-'", 1, 3, "/0"),
            Malformed("\r\n\r\n  [1,\r\n x]", "expected a value, found 'x'", 4, 2, "/1"),
            Malformed("[\"é\", é]", "expected a value, found 'é'", 1, 7, "/1"),
        ])
        func reportsMalformedJSONPrecisely(_ malformed: Malformed) throws {
            let error = try #require(readError(malformed.text))
            #expect(error.code == .syntax)
            #expect(error.message == malformed.message)
            #expect(error.location?.line == malformed.line)
            #expect(error.location?.column == malformed.column)
            #expect(error.pointer == malformed.pointer)
            #expect(error.file == "test.json")
        }

        @Test(
            arguments: [
                ([0x5B, 0x22, 0xFF, 0x22, 0x5D], "invalid utf-8 byte 0xff in string", 3),
                ([0x5B, 0x22, 0xC3, 0x22, 0x5D], "invalid utf-8 byte 0xc3 in string", 3),
                // An overlong '/', an encoded surrogate, a scalar above U+10FFFF.
                ([0x5B, 0x22, 0xC0, 0xAF, 0x22, 0x5D], "invalid utf-8 byte 0xc0 in string", 3),
                ([0x5B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x5D], "invalid utf-8 byte 0xed in string", 3),
                ([0x5B, 0x22, 0xF4, 0x90, 0x80, 0x80, 0x22, 0x5D], "invalid utf-8 byte 0xf4 in string", 3),
                ([0x5B, 0x31, 0x2C, 0x80, 0x5D], "expected a value, found invalid utf-8 byte 0x80", 4),
            ] as [([UInt8], String, Int)]
        )
        func refusesInvalidUTF8(bytes: [UInt8], message: String, column: Int) throws {
            let error = try #require(readError(bytes))
            #expect(error.code == .syntax)
            #expect(error.message == message)
            #expect(error.location?.column == column)
        }

        @Test func refusesControlCharactersInStrings() throws {
            for scalar in [0x00, 0x01, 0x1F] as [UInt8] {
                let error = try #require(readError([0x22, scalar, 0x22]))
                #expect(error.message.hasPrefix("control character U+00"))
            }
        }

        @Test func errorDescriptionsNameFileLineAndPointer() throws {
            let error = try #require(readError("{\"a\": [1, 2,]}"))
            #expect(error.description == "test.json:1:13: trailing comma before ']' (syntax_error) at /a")
        }

        @Test func pointersEscapeSlashAndTildeInKeys() throws {
            let error = try #require(readError(#"{"a/b": {"c~d": [tru]}}"#))
            #expect(error.pointer == "/a~1b/c~0d/0")
        }
    }
}
