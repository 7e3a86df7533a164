import Foundation
import Testing

@testable import ContainerKit
@testable import ContainerKitLint

/// Malformed inputs give findings or clear errors, never a crash.
struct MalformedInputTests {
    private func ruleIDs(_ bytes: [UInt8], file: String = "GTM-TEST.json") -> [String] {
        Linter().lint(bytes: bytes, file: file).map(\.ruleID)
    }

    private static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "containerkit-lint-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    @Test func truncatedFilesAreSyntaxErrors() {
        let text = #"{"resource": {"version": "2", "macros": [{"function": "__e", "instance_name": "Event"#
        for length in stride(from: 1, to: text.utf8.count, by: 7) {
            let ids = ruleIDs(Array(text.utf8.prefix(length)))
            #expect(ids == ["syntax_error"], "prefix of \(length) bytes gave \(ids)")
        }
    }

    @Test func emptyFilesAreSyntaxErrors() {
        #expect(ruleIDs([]) == ["syntax_error"])
    }

    @Test(arguments: [
        #"{"resource": "macros"}"#,
        #"{"resource": {"macros": [1, "two", null], "tags": {"a": 1}, "predicates": 3, "rules": [7]}}"#,
        #"{"resource": {"macros": [{"function": 5}], "rules": [[["if", "x"], ["add"], []]]}}"#,
        #"{"exportFormatVersion": 2, "containerVersion": []}"#,
        #"{"exportFormatVersion": 2, "containerVersion": {"tag": "x", "trigger": [1], "variable": [{"name": 3}]}}"#,
        #"{"exportFormatVersion": 2, "containerVersion": {"tag": [{"firingTriggerId": "1", "parameter": 4}]}}"#,
    ])
    func wrongTypesGiveFindings(text: String) {
        let findings = Linter().lint(bytes: Array(text.utf8), file: "GTM-TEST.json")
        #expect(!findings.isEmpty, "no finding for \(text)")
    }

    @Test func deepNestingIsAFindingNotACrash() {
        let depth = 10_000
        let text =
            #"{"resource": {"macros": "# + String(repeating: "[", count: depth) + String(repeating: "]", count: depth)
            + "}}"
        let findings = Linter().lint(bytes: Array(text.utf8), file: "GTM-TEST.json")
        #expect(findings.map(\.ruleID) == ["syntax_error"])
    }

    @Test func aFiftyMegabyteFileIsTooLarge() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/GTM-HUGE.json"
        var chunk = Data(#"{"values": ["#.utf8)
        chunk.append(Data(repeating: 0x30, count: 50 * 1024 * 1024))
        chunk.append(Data("]}".utf8))
        try chunk.write(to: URL(fileURLWithPath: path))
        let findings = try Linter().lint(path: path)
        #expect(findings.map(\.ruleID) == ["file_too_large"])
        #expect(findings.first?.message.contains("limit") == true)
    }

    @Test func binaryGarbageIsNotACrash() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            let bytes = (0..<512).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(!Linter().lint(bytes: bytes, file: "GTM-TEST.json").isEmpty)
        }
    }

    @Test func binaryDataThatIsNoProtobufIsASyntaxErrorNotALegacyContainer() {
        // A compressed container, an image, random bytes: an error (lint fails), not the legacy warning.
        let gzip: [UInt8] = [0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xAB, 0x56]
        let findings = Linter().lint(bytes: gzip, file: "GTM-TEST.json.gz")
        #expect(findings.map(\.ruleID) == ["syntax_error"])
        #expect(findings.first?.severity == .error)
        #expect(findings.first?.message.contains("gzip-compressed") == true)
        #expect(ruleIDs([0x00, 0x00, 0xFF, 0x10, 0x42]) == ["syntax_error"])
        // A legacy container (protobuf: field 1, the key "function") is still the warning.
        #expect(
            ruleIDs([0x0A, 0x08] + Array("function".utf8) + [0x0A, 0x02, 0x01, 0x02], file: "GTM-X") == [
                "legacy_binary"
            ]
        )
    }

    @Test func aMissingFileIsAToolFailure() {
        #expect(throws: ContainerError.self) { try Linter().lint(path: "/nonexistent/GTM-NONE.json") }
    }
}
