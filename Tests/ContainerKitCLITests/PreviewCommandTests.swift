import ContainerKit
import ContainerKitCLI
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@Suite struct PreviewCommandTests {
    static let token = "Tok3n-_x"
    static let url = "tagmanager.c.com.example.app://preview/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=7"
    static let events = """
        {"event": "played", "song": "So What", "genre": "rock"}
        {"user": {"name": "Ada"}}
        {"event": "skipped", "genre": "jazz"}
        """

    struct Outcome {
        var code: Int32
        var out: String
        var err: String
        var lines: [String] { out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) }
    }

    func run(_ arguments: [String]) async -> Outcome {
        let captured = CapturedOutput()
        let code = await CLI.main(arguments, output: captured.output)
        return Outcome(code: code, out: captured.standardOutput, err: captured.standardError)
    }

    func eventsFile(_ text: String = PreviewCommandTests.events) throws -> String {
        try Fixtures.directory(["events.jsonl": Array(text.utf8)]) + "/events.jsonl"
    }

    /// A server that answers the draft only to the right token and preview number.
    func draftServer() throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { request in
            guard request.path == "/r", request.query("id") == "GTM-K1T5" else { return .status(404) }
            guard request.query("gtm_auth") == Self.token, request.query("gtm_preview") == "7" else {
                return .status(403)
            }
            return .container(Fixtures.draft())
        }
    }

    func expectNoToken(_ outcome: Outcome) {
        #expect(!outcome.out.contains(Self.token))
        #expect(!outcome.err.contains(Self.token))
    }

    @Test func printsATimelineOfTheDraftFetchedFromTheServer() async throws {
        let server = try draftServer()
        defer { server.stop() }
        let outcome = await run([
            "preview", Self.url, "--server", server.baseURL.absoluteString, "--events", try eventsFile(),
        ])
        #expect(outcome.code == 0, "\(outcome.err)")
        #expect(!outcome.err.contains("error"))
        let expected = [
            "preview GTM-K1T5 draft version 7 (compiled_resource) from \(server.baseURL.absoluteString): "
                + "3 tags, 3 variables, 4 rules",
            "",
            "line 1: event \"played\"",
            "  changed:",
            "    event: undefined → \"played\"",
            "    song: undefined → \"So What\"",
            "    genre: undefined → \"rock\"",
            "  GTM-K1T5 version 7:",
            "    fired:",
            "      tag 1 'Played song' __funct → com.example.Played [unhandled]",
            "          song = \"So What\"",
            "          (fired, but no handler is registered for its class path)",
            "    not fired:",
            "      tag 3 'Played jazz' __funct: rule 1: {{Genre}} equals \"jazz\" (value: \"rock\") was false",
            "      tag 4 'Skipped' __funct: rule 2: {{Event Name}} equals \"skipped\" (value: \"played\") was false",
        ]
        #expect(Array(outcome.lines.prefix(expected.count)) == expected)
        #expect(outcome.out.contains("    variables:\n      Event Name (__e) = \"played\"\n"))
        #expect(outcome.out.contains("      Song (__md) = \"So What\"\n"))
        #expect(
            outcome.out.contains(
                "line 2: push (no event)\n  changed:\n    user: undefined → {\"name\":\"Ada\"}\n  data layer: {"
            )
        )
        #expect(outcome.out.contains("line 3: event \"skipped\"\n"))
        #expect(outcome.out.contains("    fired: none\n"))
        #expect(outcome.out.contains("      tag 4 'Skipped' __funct [blocked]: blocked by rule 3"))
        #expect(server.requests.count == 1)
        #expect(server.requests.first?.queryNames == ["id", "gtm_auth", "gtm_preview"])
        expectNoToken(outcome)
    }

    @Test func printsOneJSONTraceObjectPerLineAgreeingWithRun() async throws {
        let server = try draftServer()
        defer { server.stop() }
        let events = try eventsFile()
        let outcome = await run([
            "preview", Self.url, "--server", server.baseURL.absoluteString, "--events", events, "--format", "json",
        ])
        #expect(outcome.code == 0, "\(outcome.err)")
        let lines = outcome.lines.filter { !$0.isEmpty }
        let traces = try lines.map { try PushTrace(json: $0) }
        #expect(traces.count == 3)
        #expect(traces.allSatisfy { $0.version == PushTrace.formatVersion && $0.sessionID == "preview" })

        let played = try #require(traces.first)
        #expect(played.event == "played")
        let tags = try #require(played.evaluations.first?.tags)
        #expect(tags.map(\.outcome) == [.fired, .notFired, .notFired])
        #expect(tags[0].tagID == 1 && tags[0].classPath == "com.example.Played")
        #expect(tags[0].arguments == .object(["song": "So What"]))
        #expect(tags[0].status == PushTrace.Status(name: "unhandled"))
        let failed = try #require(tags[1].failedConditions?.first)
        #expect(failed.variable == "{{Genre}}" && failed.operator == "_eq")
        #expect(failed.left == "rock" && failed.right == "jazz" && failed.role == .if)
        #expect(played.evaluations.first?.variables.contains { $0.name == "Song" && $0.value == "So What" } == true)
        #expect(played.dataLayer.objectValue?["genre"] == "rock")

        #expect(traces[1].event == nil && traces[1].evaluations.isEmpty)
        #expect(traces[1].changes.map(\.key) == ["user"] && traces[1].changes.first?.before == nil)
        #expect(traces[1].changes.first?.after == .object(["name": "Ada"]))
        #expect(traces[2].tags.last?.outcome == .blocked)
        #expect(traces[2].tags.last?.blockedBy?.map(\.index) == [3])

        // `run --explain` prints the same trace for the same container and events.
        let draftFile = try Fixtures.directory(["GTM-K1T5.json": Fixtures.draft()]) + "/GTM-K1T5.json"
        let ran = await run(["run", draftFile, "--events", events, "--format", "json", "--explain"])
        let runTraces = try ran.lines.filter { !$0.isEmpty }.map { try PushTrace(json: $0) }
        #expect(runTraces.map(\.evaluations) == traces.map(\.evaluations))
        #expect(runTraces.map(\.changes) == traces.map(\.changes))
        #expect(runTraces.map(\.dataLayer) == traces.map(\.dataLayer))
    }

    @Test func readsTheDraftFromADraftsDirectory() async throws {
        let drafts = try Fixtures.directory(["GTM-K1T5.json": Fixtures.draft()])
        let outcome = await run([
            "preview", Self.url, "--drafts", drafts, "--events", try eventsFile(), "--format", "json",
        ])
        #expect(outcome.code == 0, "\(outcome.err)")
        #expect(outcome.lines.filter { !$0.isEmpty }.count == 3)
    }

    @Test func debugURLsAreAcceptedAndShown() async throws {
        let drafts = try Fixtures.directory(["GTM-K1T5.json": Fixtures.draft()])
        let outcome = await run([
            "preview", Self.url + "&gtm_debug=x", "--drafts", drafts, "--events", try eventsFile(),
        ])
        #expect(outcome.code == 0)
        #expect(outcome.lines.first?.contains(", gtm_debug: 3 tags") == true)
    }

    static let serverFailures: [(String, LoopbackHTTPServer.Response, Int32)] = [
        ("403 refuses the token", .status(403), 4),
        ("404 refuses the token", .status(404), 4),
        ("401 refuses the token", .status(401), 4),
        ("500", .status(500), 5),
        ("redirect to another host", .redirect("http://example.com/r"), 5),
        ("truncated", .truncated(Array(Fixtures.draft().prefix(40)), declaredLength: 4000), 5),
        ("garbage answer", .garbage(Array("\u{1}\u{2}\u{3} nope\r\n\r\n".utf8)), 5),
        ("body that is not a container", .container(Array("<html>hello</html>".utf8)), 6),
        ("empty body", .container([]), 6),
    ]

    @Test(arguments: serverFailures)
    func exitsWithADistinctCodeWhenTheDraftCannotBeFetched(
        _ name: String,
        response: LoopbackHTTPServer.Response,
        code: Int32
    ) async throws {
        let server = try LoopbackHTTPServer { _ in response }
        defer { server.stop() }
        let outcome = await run(["preview", Self.url, "--server", server.baseURL.absoluteString, "--events", "-"])
        #expect(outcome.code == code, "\(name): \(outcome.err)")
        #expect(outcome.out.isEmpty)
        #expect(outcome.err.split(separator: "\n").count == 1, "\(name): \(outcome.err)")
        #expect(outcome.err.hasPrefix("containerkit preview: cannot load the draft of 'GTM-K1T5': "))
        #expect(server.requests.count == 1)
        expectNoToken(outcome)
    }

    @Test func exitsWithFiveWhenTheServerIsUnreachable() async throws {
        let refusing = try RefusingPort()
        defer { refusing.close() }
        let base = refusing.baseURL.absoluteString
        let outcome = await run(["preview", Self.url, "--server", base, "--events", "-"])
        #expect(outcome.code == 5)
        #expect(outcome.err.contains("cannot connect to '\(base)/r?id=GTM-K1T5&gtm_auth=<redacted>&gtm_preview=7'"))
        expectNoToken(outcome)
    }

    @Test func exitsWithFourWhenTheDraftsDirectoryHasNoDraft() async throws {
        let outcome = await run(["preview", Self.url, "--drafts", try Fixtures.directory([:]), "--events", "-"])
        #expect(outcome.code == 4)
    }

    static let badURLs = [
        "not a url",
        "tagmanager.c.app://preview/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=abc",
        "tagmanager.c.app://preview/p?id=GTM-k1t5&gtm_auth=\(token)&gtm_preview=7",
        "tagmanager.c.app://preview/p?id=../../etc/passwd&gtm_auth=\(token)&gtm_preview=7",
        "tagmanager.c.app://evil.example.com/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=7",
        "tagmanager.c.app://preview/p?id=GTM-K1T5&gtm_preview=",
    ]

    @Test(arguments: badURLs)
    func exitsWithThreeForAMalformedURLOrContainerID(url: String) async throws {
        let server = try draftServer()
        defer { server.stop() }
        let outcome = await run(["preview", url, "--server", server.baseURL.absoluteString, "--events", "-"])
        #expect(outcome.code == 3, "\(outcome.err)")
        #expect(outcome.err.split(separator: "\n").count == 1)
        #expect(server.requests.isEmpty)
        expectNoToken(outcome)
    }

    static let usageErrors: [[String]] = [
        ["preview"],
        ["preview", url],
        ["preview", url, "--server", "http://127.0.0.1:9", "--drafts", "/tmp"],
        ["preview", url, "--server", "ftp://127.0.0.1/"],
        ["preview", url, "--server", "file:///etc"],
        ["preview", url, "--server", "http://127.0.0.1:9/?next=http://example.com"],
        ["preview", url, "--drafts", "/tmp", "--format", "xml"],
        ["preview", url, url, "--drafts", "/tmp"],
        ["preview", url, "--drafts", "/tmp", "--bogus"],
    ]

    @Test(arguments: usageErrors)
    func exitsWithSixtyFourForAUsageError(arguments: [String]) async {
        let outcome = await run(arguments)
        #expect(outcome.code == 64, "\(outcome.err)")
        #expect(outcome.err.hasPrefix("containerkit preview: "))
        expectNoToken(outcome)
    }

    /// `--drafts` given the draft file itself, or a directory that is not there, says so (before, both said the
    /// directory has no such file).
    @Test func draftsThatIsAFileOrMissingSaysWhatItIs() async throws {
        let drafts = try Fixtures.directory(["GTM-K1T5.json": Fixtures.draft()])
        let file = await run(["preview", Self.url, "--drafts", drafts + "/GTM-K1T5.json"])
        #expect(file.code == 4, "\(file.err)")
        #expect(
            file.err.contains("'\(drafts)/GTM-K1T5.json' is a file, not a directory: give the directory that holds")
        )
        let missing = await run(["preview", Self.url, "--drafts", drafts + "/nothing-here"])
        #expect(missing.err.contains("no directory '\(drafts)/nothing-here'"))
        expectNoToken(file)
    }

    /// A line's `message_id` is its event ID, as in `run`: not merged into the data layer, and a line with an ID
    /// the session has seen is traced as a duplicate and applies nothing.
    @Test func aSeenMessageIDIsTracedAsADuplicateAndNotMerged() async throws {
        let drafts = try Fixtures.directory(["GTM-K1T5.json": Fixtures.draft()])
        let events = try eventsFile(
            """
            {"event": "played", "song": "So What", "message_id": "m-1"}
            {"event": "played", "song": "Blue in Green", "message_id": "m-1"}
            {"event": "played", "message_id": 7}
            """
        )
        let outcome = await run(["preview", Self.url, "--drafts", drafts, "--events", events, "--format", "json"])
        #expect(outcome.code == 2)
        let lines = try outcome.lines.filter { !$0.isEmpty }.map { try #require(try Value(json: $0).objectValue) }
        try #require(lines.count == 3)
        #expect(lines[0]["outcome"] != "duplicate")
        #expect(lines[0]["data_layer"]?.objectValue?["message_id"] == nil)
        #expect(lines[1]["outcome"] == "duplicate")
        #expect(lines[1]["event_id"] == "m-1")
        #expect(lines[1]["data_layer"]?.objectValue?["song"] == "So What", "nothing of the duplicate was merged")
        #expect(lines[2]["error"]?.objectValue?["code"] == "invalid_event_id")
        #expect(
            outcome.err.contains("line 3:35: 'message_id' must be a string of 1 to 256 bytes without NUL, not number")
        )
    }

    /// `--time-key` takes the time out of each push as `run --time-key` does, so the two trace the same data layer.
    @Test func aTimeKeyIsTakenOutOfEachPushAsRunTakesIt() async throws {
        let drafts = try Fixtures.directory(["GTM-K1T5.json": Fixtures.draft()])
        let events = try eventsFile(
            """
            {"event": "played", "song": "So What", "ts": "2024-05-01T12:30:00Z"}
            {"event": "played", "ts": "yesterday"}
            """
        )
        let arguments = ["--events", events, "--format", "json", "--time-key", "ts"]
        let outcome = await run(["preview", Self.url, "--drafts", drafts] + arguments)
        #expect(outcome.code == 2)
        let lines = try outcome.lines.filter { !$0.isEmpty }.map { try #require(try Value(json: $0).objectValue) }
        try #require(lines.count == 2)
        #expect(lines[0]["data_layer"]?.objectValue?["ts"] == nil)
        #expect(lines[0]["data_layer"]?.objectValue?["song"] == "So What")
        #expect(lines[1]["error"]?.objectValue?["code"] == "invalid_time")
        let ran = await run(["run", drafts + "/GTM-K1T5.json", "--explain"] + arguments)
        let runLines = try ran.lines.filter { !$0.isEmpty }.map { try #require(try Value(json: $0).objectValue) }
        #expect(runLines.map { $0["data_layer"] } == lines.map { $0["data_layer"] })
    }

    @Test func exitsWithTwoWhenSomeLinesFailAndRunsTheOthers() async throws {
        let drafts = try Fixtures.directory(["GTM-K1T5.json": Fixtures.draft()])
        let events = try eventsFile("{\"event\": \"played\"}\n42\nnot json\n{\"event\": \"skipped\"}\n")
        let outcome = await run(["preview", Self.url, "--drafts", drafts, "--events", events, "--format", "json"])
        #expect(outcome.code == 2)
        // One object per input line: the bad lines print error objects in their place.
        let lines = outcome.lines.filter { !$0.isEmpty }
        #expect(lines.count == 4)
        #expect(lines.count == 4 && lines[1].hasPrefix(#"{"line":2,"error":{"code":"not_an_object""#))
        #expect(lines.count == 4 && lines[2].hasPrefix(#"{"line":3,"error":{"code":"syntax_error""#))
        #expect(outcome.err.contains("line 2:1: a push must be a JSON object"))
        #expect(outcome.err.contains("line 3:1: "))
    }

    @Test func exitsWithOneWhenTheEventsFileCannotBeOpened() async throws {
        let drafts = try Fixtures.directory(["GTM-K1T5.json": Fixtures.draft()])
        let outcome = await run(["preview", Self.url, "--drafts", drafts, "--events", drafts + "/missing.jsonl"])
        #expect(outcome.code == 1)
    }

    @Test func helpDescribesTheExitCodes() async {
        let outcome = await run(["preview", "--help"])
        #expect(outcome.code == 0)
        #expect(outcome.out.contains("exit codes: 0 success"))
        #expect(outcome.out.contains("4 auth token refused"))
        let main = await run(["help"])
        #expect(main.out.contains("  preview   "))
    }
}
