import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@testable import ContainerKitCLI

/// `run` and `preview` read a JSON array line as a gtag consent command, take the visitor's location from
/// `--context country=… --context region=…`, and show tags blocked by consent.
struct ConsentInputTests {
    /// Tag 1 (`ads`) requires `ad_storage`, tag 2 (`plain`) nothing; both fire on `e`.
    static let container = Array(
        """
        {"resource": {"version": "3",
          "macros": [{"function": "__e", "instance_name": "Event Name"}],
          "tags": [
            {"function": "__funct", "tag_id": 1, "vtp_classPath": "ads", "consent": ["list", "ad_storage"]},
            {"function": "__funct", "tag_id": 2, "vtp_classPath": "plain"}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}],
          "rules": [[["if", 0], ["add", 0, 1]]]}}
        """.utf8
    )

    static let events = """
        ["consent", "default", {"ad_storage": "denied", "region": ["ES"]}]
        {"event": "e"}
        ["consent", "update", {"ad_storage": "granted"}]
        {"event": "e"}
        ["config", "G-1"]
        """

    func run(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(arguments, output: captured.output)
        return (code, captured.standardOutput, captured.standardError)
    }

    func files() throws -> (container: String, events: String) {
        let directory = try Fixtures.directory([
            "GTM-K1T5.json": Self.container, "events.jsonl": Array(Self.events.utf8),
        ])
        return (directory + "/GTM-K1T5.json", directory + "/events.jsonl")
    }

    func jsonLines(_ text: String) throws -> [ValueMap] {
        try text.split(separator: "\n").map { line in try #require(try Value(json: String(line)).objectValue) }
    }

    @Test func runAppliesCommandsLinesInOrderAndBlocksTagsInTheRegion() async throws {
        let (container, events) = try files()
        let result = await run([
            "run", container, "--events", events, "--format", "json", "--context", "country=ES",
            "--context", "region=ES-MD",
        ])
        #expect(result.code == 0)  // the Google tag's `config` command is skipped, not refused
        let lines = try jsonLines(result.out)
        try #require(lines.count == 5)
        #expect(lines[0]["command"] == ["consent", "default", ["ad_storage": "denied", "region": ["ES"]]])
        #expect(lines[0]["consent"] == ["ad_storage": ["default": "denied", "region": "ES"]])
        let blocked = try #require(lines[1]["fired"]?.arrayValue?.first?.objectValue)
        #expect(blocked["status"] == "blocked_by_consent")
        #expect(blocked["message"] == "consent not granted: 'ad_storage'")
        #expect(lines[1]["fired"]?.arrayValue?.last?.objectValue?["status"] == "unhandled")
        #expect(lines[3]["fired"]?.arrayValue?.first?.objectValue?["status"] == "unhandled")
        #expect(lines[4]["command"] == ["config", "G-1"])
        let skipped = "gtag command 'config' sets the Google tag up (gtag.js); a container sees nothing of it"
        #expect(lines[4]["skipped"] == .string(skipped))
        #expect(!result.err.contains("config"))
    }

    @Test func runElsewhereDoesNotApplyTheRegionalDefault() async throws {
        let (container, events) = try files()
        let result = await run(["run", container, "--events", events, "--format", "json", "--context", "country=FR"])
        let lines = try jsonLines(result.out)
        #expect(lines[1]["fired"]?.arrayValue?.first?.objectValue?["status"] == "unhandled")
    }

    @Test func runTextShowsTheCommandAndTheConsentState() async throws {
        let (container, events) = try files()
        let result = await run(["run", container, "--events", events, "--context", "country=ES"])
        #expect(result.out.contains(#"line 1: gtag consent default {"ad_storage":"denied","region":["ES"]}"#))
        #expect(result.out.contains("  consent: ad_storage denied (default denied for ES)"))
        #expect(result.out.contains("ads [blocked_by_consent: consent not granted: 'ad_storage']"))
        #expect(result.out.contains("  consent: ad_storage granted (update granted, default denied for ES)"))
    }

    @Test func aBadLocationIsAUsageError() async throws {
        let (container, events) = try files()
        let result = await run(["run", container, "--events", events, "--context", "country=Spain"])
        #expect(result.code == 64)
        #expect(result.err.contains("ISO 3166-1"))
    }

    /// `--context region=… --context country=…` in either order: a region outside the country is refused, and a
    /// region is kept (before, a country given after the region cleared it without a word).
    @Test(arguments: [["region=FR-75", "country=ES"], ["country=ES", "region=FR-75"]])
    func aRegionOutsideTheCountryIsAUsageErrorInEitherOrder(_ pairs: [String]) async throws {
        let (container, events) = try files()
        let result = await run(["run", container, "--events", events] + pairs.flatMap { ["--context", $0] })
        #expect(result.code == 64)
        #expect(result.err.contains("context key 'region' 'FR-75' is not in the country 'ES'"))
        let arguments = try Arguments(
            ["--context", "region=ES-MD", "--context", "country=ES"],
            valued: ["--context"],
            flags: []
        )
        #expect(try arguments.context().region == "ES-MD")
    }

    @Test func previewShowsCommandsAndBlockedTags() async throws {
        let (container, events) = try files()
        let drafts = URL(fileURLWithPath: container).deletingLastPathComponent().path
        let url = "tagmanager.c.com.example.app://preview/p?id=GTM-K1T5&gtm_auth=secret&gtm_preview=7"
        let text = await run(["preview", url, "--drafts", drafts, "--events", events, "--context", "region=ES-MD"])
        #expect(text.out.contains("line 1: gtag consent default"))
        #expect(text.out.contains("[blocked_by_consent: consent not granted: 'ad_storage']"))
        let json = await run([
            "preview", url, "--drafts", drafts, "--events", events, "--context", "region=ES-MD", "--format", "json",
        ])
        let lines = try jsonLines(json.out)
        try #require(lines.count == 5)
        #expect(lines[0]["consent"]?.objectValue?["ad_storage"] == ["default": "denied", "region": "ES"])
        // The push's trace: the tag its consent settings block, with the types not granted.
        let trace = try PushTrace(json: JSONWriter.string(.object(lines[1])))
        let blocked = try #require(trace.tags.first { $0.outcome == .blockedByConsent })
        #expect(blocked.status?.name == "blocked_by_consent")
        #expect(blocked.reason == "blocked by consent: 'ad_storage' not granted")
        #expect(trace.records.isEmpty)
        // A command line's trace: what it changed, per consent type, before → after.
        let command = try PushTrace(json: JSONWriter.string(try #require(lines[2]["trace"])))
        #expect(command.consent?.kind == "update")
        #expect(command.consent?.types.map(\.type) == ["ad_storage"])
        #expect(command.consent?.types.first?.before == "denied" && command.consent?.types.first?.after == "granted")
        #expect(text.out.contains("  consent update:\n    ad_storage: denied → granted\n"))
    }

    @Test func runExplainShowsWhatACommandChanged() async throws {
        let (container, events) = try files()
        let result = await run(["run", container, "--events", events, "--context", "region=ES-MD", "--explain"])
        #expect(result.out.contains("  consent default (regions ES):\n    ad_storage: not set → denied\n"))
        #expect(result.out.contains("  consent update:\n    ad_storage: denied → granted\n"))
        // Without --explain, the command lines print as before.
        let plain = await run(["run", container, "--events", events, "--context", "region=ES-MD"])
        #expect(!plain.out.contains("consent update:"))
    }
}
