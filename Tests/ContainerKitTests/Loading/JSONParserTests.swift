import ContainerKit
import Foundation
import Testing

extension Loading {
@Suite struct JSONParserTests {
    @Test func readsEveryKindOfValue() throws {
        let document = try readDocument(#"{"s": "text", "i": 42, "n": -7, "d": 1.5, "e": 1e3, "t": true, "f": false, "z": null, "a": [1, [], {}]}"#)
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
        var pointer: String = ""
        var testDescription: String { text.debugDescription }
    }

    @Test(arguments: [
        Malformed(text: "{\"a\": 1 \"b\": 2}", message: "expected ',' or '}' after object member, found '\"'", line: 1, column: 9),
        Malformed(text: "[1 2]", message: "expected ',' or ']' after array element, found '2'", line: 1, column: 4),
        Malformed(text: "{\"a\" 1}", message: "expected ':' after object key 'a', found '1'", line: 1, column: 6, pointer: "/a"),
        Malformed(text: "{a: 1}", message: "expected '\"' to start an object key, found 'a'", line: 1, column: 2),
        Malformed(text: "[1, 2,]", message: "trailing comma before ']'", line: 1, column: 7),
        Malformed(text: "{\"a\": [],\n}", message: "trailing comma before '}'", line: 2, column: 1),
        Malformed(text: "[1,,2]", message: "expected a value, found ','", line: 1, column: 4, pointer: "/1"),
        Malformed(text: "{\"a\":}", message: "expected a value, found '}'", line: 1, column: 6, pointer: "/a"),
        Malformed(text: "[NaN]", message: "expected a value, found 'NaN'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[-Infinity]", message: "invalid number '-Infinity'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[tru]", message: "invalid literal 'tru'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[nullx]", message: "invalid literal 'nullx'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[True]", message: "expected a value, found 'True'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "// comment\n{}", message: "comments are not allowed in json", line: 1, column: 1),
        Malformed(text: "[1] /* c */", message: "unexpected '/' after the json document", line: 1, column: 5),
        Malformed(text: "{} {}", message: "unexpected '{' after the json document", line: 1, column: 4),
        Malformed(text: "[0123]", message: "leading zeros are not allowed in number '0123'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[-01]", message: "leading zeros are not allowed in number '-01'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[1.]", message: "invalid number '1.]'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[.5]", message: "expected a value, found '.'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[+1]", message: "expected a value, found '+'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[1e]", message: "invalid number '1e]'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[1e999]", message: "number '1e999' is out of range", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "[0x1F]", message: "invalid number '0x1F'", line: 1, column: 2, pointer: "/0"),
        Malformed(text: "{\"k\": \"a\\qb\"}", message: "invalid escape '\\q'", line: 1, column: 9, pointer: "/k"),
        Malformed(text: "[\"\\u12G4\"]", message: "invalid unicode escape '\\u12G'", line: 1, column: 3, pointer: "/0"),
        Malformed(text: "[\"\\ud800\"]", message: "lone surrogate '\\ud800' in string", line: 1, column: 3, pointer: "/0"),
        Malformed(text: "[\"\\ud800\\u0041\"]", message: "lone surrogate '\\ud800' in string", line: 1, column: 3, pointer: "/0"),
        Malformed(text: "[\"x\\udc00\"]", message: "lone surrogate '\\udc00' in string", line: 1, column: 4, pointer: "/0"),
        Malformed(text: "[\"a\tb\"]", message: "control character U+0009 must be escaped in a string", line: 1, column: 4, pointer: "/0"),
        Malformed(text: "{\"a\":\n\"line\nbreak\"}", message: "control character U+000A must be escaped in a string", line: 2, column: 6, pointer: "/a"),
        Malformed(text: "{\"a\": [1, {\"b\": \"é", message: "unexpected end of file inside string that starts at 1:17", line: 1, column: 19, pointer: "/a/1/b"),
        Malformed(text: "{\"a\": [1, 2", message: "unexpected end of file inside array that starts at 1:7", line: 1, column: 12, pointer: "/a"),
        Malformed(text: "{\"a\": 1,\n  ", message: "unexpected end of file inside object that starts at 1:1", line: 2, column: 3),
        Malformed(text: "[\"\\", message: "unexpected end of file inside string that starts at 1:2", line: 1, column: 4, pointer: "/0"),
        Malformed(text: "[-", message: "unexpected end of file inside number '-'", line: 1, column: 3, pointer: "/0"),
        Malformed(text: "\r\n\r\n  [1,\r\n x]", message: "expected a value, found 'x'", line: 4, column: 2, pointer: "/1"),
        Malformed(text: "[\"é\", é]", message: "expected a value, found 'é'", line: 1, column: 7, pointer: "/1"),
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

    @Test(arguments: [
        ([0x5B, 0x22, 0xFF, 0x22, 0x5D], "invalid utf-8 byte 0xff in string", 3),
        ([0x5B, 0x22, 0xC3, 0x22, 0x5D], "invalid utf-8 byte 0xc3 in string", 3),
        ([0x5B, 0x22, 0xC0, 0xAF, 0x22, 0x5D], "invalid utf-8 byte 0xc0 in string", 3),  // overlong '/'
        ([0x5B, 0x22, 0xED, 0xA0, 0x80, 0x22, 0x5D], "invalid utf-8 byte 0xed in string", 3),  // UTF-8 surrogate
        ([0x5B, 0x22, 0xF4, 0x90, 0x80, 0x80, 0x22, 0x5D], "invalid utf-8 byte 0xf4 in string", 3),  // > U+10FFFF
        ([0x5B, 0x31, 0x2C, 0x80, 0x5D], "expected a value, found invalid utf-8 byte 0x80", 4),
    ] as [([UInt8], String, Int)])
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
