import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@testable import ContainerKitCLI

/// gtm.js starts a page by evaluating `gtm.init_consent` and `gtm.init` before the page's first event, and puts
/// neither on the data layer (served gtm.js 1331, run under node): `run`, `preview` and `diff` evaluate them before a
/// web session's first event, so Consent Initialization and Initialization tags fire from a browser's dump.
struct PageStartTests {
    /// A web container (`permissions`: a served script's data) with one tag per event: `consent-init` on
    /// `gtm.init_consent`, `init` on `gtm.init`, `page` on `gtm.js`.
    static let container = Array(
        """
        {"resource": {"version": "1",
          "macros": [{"function": "__e"}],
          "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "consent-init"},
                   {"function": "__funct", "tag_id": 2, "vtp_classPath": "init"},
                   {"function": "__funct", "tag_id": 3, "vtp_classPath": "page"}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.init_consent"},
                         {"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.init"},
                         {"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.js"}],
          "rules": [[["if", 0], ["add", 0]], [["if", 1], ["add", 1]], [["if", 2], ["add", 2]]]},
         "permissions": {}}
        """.utf8
    )

    /// A page's dump: a consent default before the snippet, then gtm.js and gtm.dom.
    static let dump = """
        [{"0":"consent","1":"default","2":{"ad_storage":"denied"}},{"gtm.start":1,"event":"gtm.js"},{"event":"gtm.dom"}]
        """

    func command(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(arguments + ["--log-level", "error"], output: captured.output)
        return (code, captured.standardOutput, captured.standardError)
    }

    /// The container as `GTM-WEBI1.json` and each events text, in one directory.
    func files(_ events: [String: String], container: [UInt8] = PageStartTests.container) throws -> String {
        var contents = ["GTM-WEBI1.json": container]
        for (name, text) in events { contents[name] = Array(text.utf8) }
        return try Fixtures.directory(contents)
    }

    func objects(_ text: String) throws -> [ValueMap] {
        try text.split(separator: "\n").map { try #require(try Value(json: String($0)).objectValue) }
    }

    static func classPaths(_ line: ValueMap) -> [String] {
        (line["fired"]?.arrayValue ?? []).compactMap { $0.objectValue?["class_path"]?.stringValue }
    }

    @Test func aWebPagesFirstEventIsPrecededByGtmsInitEventsInTheSameOutputLine() async throws {
        let directory = try files(["dump.json": Self.dump])
        let arguments = ["run", directory + "/GTM-WEBI1.json", "--events", directory + "/dump.json"]
        let json = await command(arguments + ["--format", "json"])
        #expect(json.code == ExitCode.success, "\(json.err)")
        let lines = try objects(json.out)
        // One object per input item still: the page's start is a member of its first event's.
        try #require(lines.count == 3)
        #expect(lines[0]["command"] != nil && lines[0][PageStart.jsonKey] == nil)
        #expect(Self.classPaths(lines[1]) == ["page"])
        let items = try #require(lines[1][PageStart.jsonKey]?.arrayValue)
        let started = items.compactMap(\.objectValue)
        #expect(started.map { $0["event"] } == ["gtm.init_consent", "gtm.init"])
        #expect(started.map(Self.classPaths) == [["consent-init"], ["init"]])
        #expect(lines[2]["event"] == "gtm.dom" && lines[2][PageStart.jsonKey] == nil)

        let text = await command(arguments)
        #expect(
            text.out.contains(
                """
                dataLayer[1] (line 1), before it (gtm.js starts the page): event "gtm.init_consent"
                  tag 1 __funct → consent-init [unhandled]

                dataLayer[1] (line 1), before it (gtm.js starts the page): event "gtm.init"
                  tag 2 __funct → init [unhandled]

                dataLayer[1] (line 1): event "gtm.js"
                """
            ),
            "\(text.out)"
        )

        // Traced: the events' traces, each one as `PushTrace` reads it.
        let explained = try objects(await command(arguments + ["--format", "json", "--explain"]).out)
        let traces = try #require(explained[1][PageStart.jsonKey]?.arrayValue)
        let first = try PushTrace(json: JSONWriter.string(traces[0]))
        #expect(first.event == "gtm.init_consent")
        #expect(try PushTrace(json: JSONWriter.string(.object(explained[1]))).event == "gtm.js")
    }

    @Test func anInputThatPushesTheInitEventsItselfGetsNoMoreAndEachSessionIsAPage() async throws {
        let own = #"{"event":"gtm.init_consent"}"# + "\n" + #"{"event":"gtm.init"}"# + "\n" + #"{"event":"gtm.js"}"#
        // A push without an event, or with a falsy one, does not start the page.
        let sessions = [
            #"{"user":"a","event":""}"#, #"{"user":"a","event":"gtm.js"}"#, #"{"user":"b","event":"gtm.js"}"#,
            #"{"user":"a","event":"gtm.js"}"#,
        ].joined(separator: "\n")
        let directory = try files(["own.jsonl": own, "sessions.jsonl": sessions])
        let container = directory + "/GTM-WEBI1.json"
        let pushed = try objects(
            await command(["run", container, "--events", directory + "/own.jsonl", "--format", "json"]).out
        )
        #expect(pushed.map { $0[PageStart.jsonKey] } == [nil, nil, nil])
        #expect(pushed.map(Self.classPaths) == [["consent-init"], ["init"], ["page"]])

        let keyed = try objects(
            await command([
                "run", container, "--events", directory + "/sessions.jsonl", "--format", "json", "--session-key",
                "user",
            ]).out
        )
        #expect(keyed.map { $0[PageStart.jsonKey]?.arrayValue?.count } == [nil, 2, 2, nil])
    }

    /// Mobile runtimes have no such events.
    @Test func aMobileContainerHasNoPageStart() async throws {
        let web = String(decoding: Self.container, as: UTF8.self)
        let mobile = Array(web.replacingOccurrences(of: ",\n \"permissions\": {}", with: "").utf8)
        #expect(mobile.count < Self.container.count)
        let directory = try files(["dump.json": Self.dump], container: mobile)
        let result = await command([
            "run", directory + "/GTM-WEBI1.json", "--events", directory + "/dump.json", "--format", "json",
        ])
        let lines = try objects(result.out)
        try #require(lines.count == 3)
        #expect(lines[1][PageStart.jsonKey] == nil)
        #expect(Self.classPaths(lines[1]) == ["page"])
    }

    @Test func previewTracesThePageStartAndDiffReplaysIt() async throws {
        let changed = Array(
            String(decoding: Self.container, as: UTF8.self)
                .replacingOccurrences(of: #""arg1": "gtm.init"}"#, with: #""arg1": "gtm.init.x"}"#).utf8
        )
        let directory = try files(["dump.json": Self.dump])
        let newDirectory = try files([:], container: changed)
        let preview = await command([
            "preview", "tagmanager.c.com.example.app://preview/p?id=GTM-WEBI1&gtm_auth=a&gtm_preview=1",
            "--drafts", directory, "--events", directory + "/dump.json",
        ])
        #expect(preview.code == ExitCode.success, "\(preview.err)")
        #expect(preview.out.contains(#"dataLayer[1] (line 1), before it (gtm.js starts the page): event "gtm.init""#))

        let diff = await command([
            "diff", directory + "/GTM-WEBI1.json", newDirectory + "/GTM-WEBI1.json", "--events",
            directory + "/dump.json",
        ])
        #expect(diff.out.contains(#"line 1: event "gtm.init""#), "\(diff.out)")
        #expect(diff.out.contains("tag 2 fires only in the old version"))
    }

    /// A dump is one page, whose gtm.js event gtm.js evaluates once: a second one (a snippet installed twice) is
    /// merged and not evaluated. Lines may be many pages, so there it is evaluated again.
    @Test func aDumpsSecondGtmJsIsMergedNotEvaluatedAndALogsIsEvaluated() async throws {
        let dump = #"[{"gtm.start":1,"event":"gtm.js"},{"event":"gtm.dom"},{"gtm.start":2,"event":"gtm.js"}]"#
        let lines = #"{"event":"gtm.js"}"# + "\n" + #"{"event":"gtm.js"}"#
        let directory = try files(["dump.json": dump, "lines.jsonl": lines])
        let container = directory + "/GTM-WEBI1.json"
        let json = try objects(
            await command(["run", container, "--events", directory + "/dump.json", "--format", "json"]).out
        )
        try #require(json.count == 3)
        #expect(Self.classPaths(json[0]) == ["page"])
        #expect(json[2]["event"] == "gtm.js" && Self.classPaths(json[2]) == [])
        #expect(json[2][PageStart.repeatedJSONKey]?.stringValue?.hasPrefix("gtm.js evaluates a page's gtm.js") == true)
        // Merged all the same: the trace's data layer has the second gtm.start.
        let traced = try objects(
            await command([
                "run", container, "--events", directory + "/dump.json", "--format", "json", "--explain",
            ]).out
        )
        let trace = try PushTrace(json: JSONWriter.string(.object(traced[2])))
        #expect(trace.dataLayer.objectValue?["gtm"]?.objectValue?["start"] == 2)
        #expect(traced[2][PageStart.repeatedJSONKey] != nil)

        let log = try objects(
            await command(["run", container, "--events", directory + "/lines.jsonl", "--format", "json"]).out
        )
        #expect(log.map(Self.classPaths) == [["page"], ["page"]])
        #expect(log[1][PageStart.repeatedJSONKey] == nil)
    }
}
