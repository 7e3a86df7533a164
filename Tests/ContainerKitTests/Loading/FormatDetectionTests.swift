import ContainerKit
import Foundation
import Testing

extension Loading {
    @Suite struct FormatDetectionTests {
        @Test func skipsByteOrderMarkAndLeadingWhitespace() throws {
            let document = try readDocument([0xEF, 0xBB, 0xBF] + Array(" \n\t {\"a\": 1}".utf8))
            #expect(document.value == ["a": 1])
            #expect(document.location(of: "/a")?.description == "2:9")
        }

        @Test func refusesUTF16Files() throws {
            let error = try #require(readError([0xFF, 0xFE, 0x7B, 0x00, 0x7D, 0x00]))
            #expect(error.code == .syntax)
            #expect(error.message.contains("utf-16"))
            // Without a byte order mark too: the NUL bytes between the characters say so.
            let unmarked = try #require(readError([0x00, 0x7B, 0x00, 0x7D]))
            #expect(
                unmarked.message
                    == "file is utf-16 or utf-32 encoded (NUL bytes between its characters); save it as utf-8"
            )
        }

        @Test func refusesTextThatIsNeitherJSONNorAPropertyList() throws {
            let error = try #require(readError("\n  hello world"))
            #expect(error.code == .syntax)
            #expect(error.message == "not json or a property list: unexpected 'hello'")
            #expect(error.location?.description == "2:3")
            // Markup is read as a property list, and an HTML page (a login or error page where a container was
            // expected) is told so by its root element.
            let page = try #require(readError("<!doctype html>\n<html><body>Sign in</body></html>"))
            #expect(page.message == "the root element is <html>, not <plist>: this is not a property list")
            #expect(page.location?.description == "2:1")
        }

        /// Text pasted in front of a container (a real file in a public repository begins "I'm…" before its JSON).
        @Test func textBeforeAContainerSaysWhereTheObjectStarts() throws {
            let error = try #require(readError("I'm the export\n  {\"exportFormatVersion\": 2}"))
            #expect(
                error.message
                    == "not json or a property list: unexpected 'I'; a JSON object starts at 2:3: remove what comes before it"
            )
            #expect(error.location?.description == "1:1")
        }

        @Test(
            arguments: [
                [0x0A, 0x03] + Array("abc".utf8) + [0x12, 0x00],  // protobuf: field 1 "abc", empty field 2
                [0x12, 0x05, 0x08, 0x01, 0x10, 0x02, 0x18],
            ] as [[UInt8]]
        )
        func refusesProtobufFilesAsLegacyContainers(bytes: [UInt8]) throws {
            let error = try #require(readError(bytes))
            #expect(error.code == .legacyBinary)
        }

        @Test(
            arguments: [
                ([0x00, 0x01, 0x02, 0x03], ""),
                ([0x89] + Array("PNG\r\n".utf8) + [0x1A, 0x0A, 0x00], " (a png image)"),
                ([0xC3, 0x28, 0x41, 0x42], ""),  // invalid UTF-8
                ([0x1F, 0x8B, 0x08, 0x00, 0x00], " (gzip-compressed: decompress it first)"),
                (Array("PK".utf8) + [0x03, 0x04, 0x14, 0x00], " (a zip archive: extract the container from it)"),
            ] as [([UInt8], String)]
        )
        func refusesOtherBinaryFilesAsNoContainerAtAll(bytes: [UInt8], hint: String) throws {
            // Only a file that starts like a protobuf message is taken for a legacy container.
            let error = try #require(readError(bytes))
            #expect(error.code == .syntax)
            #expect(error.message == "binary data, not json or a property list" + hint)
            #expect(error.location?.description == "1:1")
        }

        @Test func readsJSONThatStartsWithANewlineAsJSON() throws {
            // 0x0a is also the protobuf tag of field 1; text without control characters is still JSON.
            #expect(try readDocument("\n{\"a\": [1]}\n").value == ["a": [1]])
            #expect(try readDocument("\n\"abc\"").value == "abc")
        }

        @Test func reportsInvalidUTF8InsideJSONAsASyntaxError() throws {
            let error = try #require(readError(Array("{\"name\": \"caf".utf8) + [0xE9] + Array("\"}".utf8)))
            #expect(error.code == .syntax)
            #expect(error.message == "invalid utf-8 byte 0xe9 in string")
            #expect(error.location?.description == "1:14")
            #expect(error.pointer == "/name")
        }

        @Test func honoursASmallerFileSizeLimit() throws {
            let error = try #require(readError("[1, 2, 3]", options: LoadOptions(maximumFileSize: 4)))
            #expect(error.code == .fileTooLarge)
            #expect(error.message == "file is 9 bytes, more than the limit of 4 bytes")
        }

        @Test func buildsDocumentsFromValues() {
            let document = SourceDocument(value: ["a": 1], file: "memory")
            #expect(document.syntax == .json)
            #expect(document.locate("/a") == nil)
            #expect(document.duplicateKeys.isEmpty)
        }
    }
}
