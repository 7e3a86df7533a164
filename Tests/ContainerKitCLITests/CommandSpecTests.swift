import ContainerKit
import ContainerKitLint
import Foundation
import Testing

@testable import ContainerKitCLI

/// The commands share one option parser: `--help`, `--format` and `--log-level` read the same everywhere.
struct CommandSpecTests {
    static let specs = [RunCommand.spec, PreviewCommand.spec, LintCommand.spec, DiffCommand.spec]

    func main(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(arguments, output: captured.output, environment: [:])
        return (code, captured.standardOutput, captured.standardError)
    }

    @Test func versionPrintsTheLibraryVersion() async {
        let result = await main(["--version"])
        #expect(result.code == 0)
        #expect(result.out == "containerkit \(ContainerKitVersion.version)\n")
    }

    @Test(arguments: ["run", "preview", "lint", "diff"])
    func helpIsRenderedFromTheCommandsSpec(command: String) async throws {
        let spec = try #require(Self.specs.first { $0.name == command })
        let result = await main([command, "--help"])
        #expect(result.code == 0)
        #expect(result.out == spec.usage + "\n")
        #expect(result.out.hasPrefix("usage: containerkit \(command) "))
        #expect(result.out.contains("\n  --format"))
        #expect(result.out.contains("\n  --help "))
    }

    @Test func everyCommandListsTheLogLevelsTheSameWay() {
        let lines = Self.specs.compactMap { spec in spec.options.first { $0.name == "--log-level" }?.help.first }
        #expect(lines.count == 3)  // lint logs nothing
        for line in lines {
            #expect(
                line.replacingOccurrences(of: " (default)", with: "") == "verbose, debug, info, warning, error, none"
            )
        }
    }

    @Test(arguments: [
        ["run", "c.json", "--log-level", "loud"],
        ["preview", "u", "--drafts", "d", "--log-level", "loud"],
        ["diff", "a.json", "b.json", "--log-level", "loud"],
        ["run", "c.json", "--format", "xml"],
        ["preview", "u", "--drafts", "d", "--format", "xml"],
        ["diff", "a.json", "b.json", "--format", "xml"],
    ])
    func aValueOutsideTheChoicesIsAUsageError(arguments: [String]) async {
        let result = await main(arguments)
        #expect(result.code == ExitCode.usage)
        #expect(result.err.contains("must be one of"), "\(result.err)")
    }

    @Test(arguments: ["run", "lint", "preview", "diff"])
    func aUsageErrorShowsTheSynopsisAndWhereTheOptionsAreNotTheWholeHelp(command: String) async {
        let result = await main([command, "--bogus"])
        #expect(result.code == ExitCode.usage)
        #expect(result.err.hasPrefix("containerkit \(command): "), "\(result.err)")
        #expect(result.err.contains("usage: containerkit \(command) "))
        #expect(result.err.hasSuffix("Run 'containerkit \(command) --help' for the options and exit codes.\n"))
        #expect(!result.err.contains("options:"))
    }

    @Test func anAliasIsReadAsItsOption() throws {
        let diff = try DiffCommand.parse(["a.json", "b.json", "--reporter", "json"])
        #expect(diff.reporter == "json")
        let lint = try LintCommand.parse(["--reporter=sarif"])
        #expect(type(of: lint.reporter).identifier == "sarif")
    }

    @Test func aChoiceIsReadInAnyCase() throws {
        let run = try RunCommand.parse(["c.json", "--log-level", "INFO", "--format", "Json"])
        #expect(run.logLevel == .info && run.json)
        let diff = try DiffCommand.parse(["a.json", "b.json", "--reporter=GitHub", "--fail-on", "REMOVED"])
        #expect(diff.reporter == "github" && diff.failOn == .removed)
        let lint = try LintCommand.parse(["--format", "SARIF"])
        #expect(type(of: lint.reporter).identifier == "sarif")
        #expect(try LintCommand.parse(["--list-rules", "--format", "Markdown"]).catalogFormat == "markdown")
    }

    @Test func defaultsComeFromTheSpec() throws {
        let run = try RunCommand.parse(["c.json"])
        #expect(run.logLevel == .warning && !run.json)
        let diff = try DiffCommand.parse(["a.json", "b.json"])
        #expect(diff.logLevel == .error && diff.reporter == "text" && diff.failOn == .changes)
    }

    @Test func aFailedInputLineExitsWithItsOwnCode() async throws {
        let events = NSTemporaryDirectory() + "spec-events-\(UUID().uuidString).jsonl"
        try Data("{\"event\": \"login\"}\n{not json\n".utf8).write(to: URL(fileURLWithPath: events))
        defer { try? FileManager.default.removeItem(atPath: events) }
        let music = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Containers/GTM-MUSIC01.json").path
        let result = await main(["run", music, "--events", events])
        #expect(result.code == ExitCode.failedInput)
        #expect(result.err.contains("line 2:"))
        #expect(RunCommand.usage.contains("2 some input lines failed"))
    }
}
