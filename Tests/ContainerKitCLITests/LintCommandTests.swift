import ContainerKit
import ContainerKitBrazeLint
import ContainerKitLint
import Foundation
import Testing

@testable import ContainerKitCLI

struct LintCommandTests {
    private static let goldenDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Golden").path

    private static func temporaryDirectory() throws -> String {
        let path = NSTemporaryDirectory() + "containerkit-lint-cli-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    private static let clean = #"""
        {"resource": {"version": "1", "macros": [{"function": "__e", "instance_name": "Event Name"}],
          "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "com.example.Tag"}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "go"}],
          "rules": [[["if", 0], ["add", 0]]]}}
        """#
    private static let warningOnly = #"""
        {"resource": {"macros": [{"function": "__jsm"}], "tags": [{"function": "__funct", "tag_id": 1,
          "vtp_classPath": "A", "vtp_functionArgument": ["list", ["map", "key", "k", "value", ["macro", 0]]]}],
          "predicates": [], "rules": [[["add", 0]]]}}
        """#
    private static let broken = #"{"resource": {"macros": [], "tags": [], "predicates": [], "rules": [[["add", 4]]]}}"#

    /// Writes `files` (name → content) into a new directory and returns its path.
    private static func fixture(_ files: [String: String]) throws -> String {
        let directory = try temporaryDirectory()
        for (name, text) in files { try text.write(toFile: directory + "/" + name, atomically: true, encoding: .utf8) }
        return directory
    }

    private func run(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(["lint"] + arguments, output: captured.output)
        return (code, captured.standardOutput, captured.standardError)
    }

    // MARK: Exit codes and summary

    @Test func cleanFilesExitZeroWithASummaryOnStandardError() async throws {
        let directory = try Self.fixture(["GTM-CLEAN.json": Self.clean])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = await run([directory])
        #expect(result.code == 0)
        #expect(result.out.isEmpty)
        #expect(result.err == "no problems in 1 file\n")
    }

    @Test func warningsExitZeroUnlessStrict() async throws {
        let directory = try Self.fixture(["GTM-WARN.json": Self.warningOnly])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let lenient = await run([directory])
        #expect(lenient.code == 0)
        #expect(
            lenient.out.contains(
                ": warning: browser-only variable type '__jsm' is not supported (unsupported_template)"
            )
        )
        #expect(lenient.err == "1 warning in 1 file\n")
        let strict = await run([directory, "--strict"])
        #expect(strict.code == 2)
        #expect(strict.out.contains(": error: browser-only variable type '__jsm'"))
        #expect(strict.err == "1 error in 1 file\n")
    }

    @Test func errorsExitTwoAndTheReportListsEveryFile() async throws {
        let directory = try Self.fixture([
            "GTM-BAD.json": Self.broken, "GTM-OK.json": Self.clean, "GTM-W.json": Self.warningOnly,
        ])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = await run([directory])
        #expect(result.code == 2)
        let lines = result.out.split(separator: "\n")
        #expect(
            lines.first?.hasSuffix(
                "GTM-BAD.json:1:78: error: rule refers to tag '4', but there are no tags (dangling_reference)"
            ) == true
        )
        #expect(lines.count == 2)
        #expect(result.err == "1 error, 1 warning in 3 files\n")
    }

    @Test func aMissingPathIsAToolFailure() async throws {
        let directory = try Self.fixture(["GTM-OK.json": Self.clean])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = await run([directory + "/GTM-OK.json", directory + "/missing"])
        #expect(result.code == 1)
        #expect(result.err.contains("containerkit lint: no such file or directory '\(directory)/missing'"))
        #expect(result.err.hasSuffix("no problems in 1 file; 1 path could not be read\n"))
    }

    @Test(arguments: [["--reporter", "xml"], ["--bogus"], ["--config"], ["--list-rules", "--format", "sarif"]])
    func usageErrorsExitSixtyFour(arguments: [String]) async {
        let result = await run(arguments)
        #expect(result.code == 64)
        #expect(result.err.hasPrefix("containerkit lint: "))
        #expect(result.out.isEmpty)
    }

    @Test func helpAndRuleCatalog() async {
        let help = await run(["--help"])
        #expect(help.code == 0)
        #expect(help.out.hasPrefix("usage: containerkit lint"))
        let catalog = await run(["--list-rules"])
        #expect(catalog.code == 0)
        #expect(catalog.out.split(separator: "\n").count == Linter.allRules.count)
        let markdown = await run(["--list-rules", "--format", "markdown"])
        #expect(markdown.out == LintRuleCatalog.markdown(Linter.allRules.map { $0.description }))
    }

    @Test func configurationFileChangesWhatRuns() async throws {
        let directory = try Self.fixture([
            "GTM-W.json": Self.warningOnly,
            "strict.json": #"{"severity": {"unsupported_template": "error"}, "disabled_rules": ["unused_variable"]}"#,
            "broken.json": #"{"severity": []}"#,
        ])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configured = await run([directory + "/GTM-W.json", "--config", directory + "/strict.json"])
        #expect(configured.code == 2)
        #expect(configured.err == "1 error in 1 file\n")
        let invalid = await run([directory + "/GTM-W.json", "--config", directory + "/broken.json"])
        #expect(invalid.code == 1)
        #expect(invalid.err.contains("cannot use configuration"))
        // Discovered by walking up from the file.
        try #"{"disabled_rules": ["unsupported_template"]}"#.write(
            toFile: directory + "/.containerkit-lint.json",
            atomically: true,
            encoding: .utf8
        )
        let discovered = await run([directory + "/GTM-W.json"])
        #expect(discovered.code == 0)
        #expect(discovered.err == "no problems in 1 file\n")
    }

    @Test func anInvalidDiscoveredConfigurationIsSaidOnceAndItsFilesAreNotLinted() async throws {
        let directory = try Self.fixture([
            "GTM-W.json": Self.warningOnly,
            "GTM-X.json": Self.warningOnly,
            ".containerkit-lint.json": "{\n  \"excluded\": [\"old/**\", 7]\n}",
        ])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = await run([directory + "/GTM-W.json", directory + "/GTM-X.json"])
        #expect(result.code == 1)
        let lines = result.err.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "the configuration's error is said once, not once per file: \(lines)")
        #expect(lines.first?.hasPrefix("containerkit lint: ") == true)
        #expect(
            lines.first?.hasSuffix(
                "/.containerkit-lint.json:2:26: 'excluded' must be an array of strings; element 1 is number "
                    + "(invalid_structure) at /excluded/1"
            ) == true
        )
        #expect(lines.last == "no problems in 0 files; 2 paths were not linted: their configuration is invalid")
        // Walking the directory reads the same configuration (for its `excluded` patterns): the same error, once.
        let walked = await run([directory])
        #expect(walked.code == 1)
        #expect(
            walked.err.split(separator: "\n").map(String.init) == [
                lines[0], "no problems in 0 files; 1 path was not linted: its configuration is invalid",
            ]
        )
        // A configuration that only has unknown keys is used, and says where they are.
        try "{\"colour\": \"red\"}".write(
            toFile: directory + "/.containerkit-lint.json",
            atomically: true,
            encoding: .utf8
        )
        let warned = await run([directory + "/GTM-W.json"])
        #expect(warned.code == 0)
        #expect(warned.err.contains(".containerkit-lint.json:1:2: unknown configuration key 'colour'\n"))
    }

    @Test func jsonReportIsValidJSON() async throws {
        let directory = try Self.fixture(["GTM-BAD.json": Self.broken])
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let result = await run([directory, "--reporter", "json"])
        let value = try Value(json: result.out)
        let first = try #require(value.arrayValue?.first?.objectValue)
        #expect(first["rule_id"] == "dangling_reference")
        #expect(first["pointer"] == "/resource/rules/0/0/1")
    }

    // MARK: Golden reports

    /// A report with a finding at a position, one without, and one whose text needs escaping.
    static let goldenReport = LintReport(
        findings: [
            LintFinding(
                ruleID: "dangling_reference",
                severity: .error,
                message: "macro reference '7' does not name one of the 1 macros",
                file: "Containers/GTM-A1B2.json",
                pointer: "/resource/macros/0/vtp_value",
                location: SourceLocation(line: 3, column: 17)
            ),
            LintFinding(
                ruleID: "file_name_container_id",
                severity: .warning,
                message: "file name 'GTM-A1B2.json' says 'GTM-A1B2' but the container's publicId is 'GTM-ZZZZ'",
                file: "Containers/GTM-A1B2.json",
                pointer: "/containerVersion/container/publicId"
            ),
            LintFinding(
                ruleID: "paused_tag",
                severity: .note,
                message: "tag 'a, b: 100%\nnew line' is paused",
                file: "Containers/my app/GTM-C3.plist",
                pointer: "/resource/tags/2"
            ),
        ],
        files: ["Containers/GTM-A1B2.json", "Containers/my app/GTM-C3.plist"],
        rules: Linter.allRules.map { $0.description }
    )

    @Test(arguments: ["text", "json", "sarif", "github"])
    func reportsMatchTheirGoldenFiles(reporter name: String) throws {
        let reporter = try #require(LintReporters.reporter(named: name))
        let rendered = reporter.render(Self.goldenReport).replacingOccurrences(
            of: ContainerKitVersion.version,
            with: "VERSION"
        )
        let path = Self.goldenDirectory + "/lint-report.\(name).golden"
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try rendered.write(toFile: path, atomically: true, encoding: .utf8)
        }
        let golden = try String(contentsOfFile: path, encoding: .utf8)
        #expect(rendered == golden, "regenerate with UPDATE_GOLDEN=1 swift test --filter LintCommandTests")
    }
}
