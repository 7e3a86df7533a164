import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@testable import ContainerKitCLI

/// `run --session-key` (and `diff`'s): a log of many users runs each user's pushes in a session of their own, as a
/// service keeps one per user, where one session for the whole log mixes their data layers and once-per-load tags.
struct SessionKeyTests {
    /// On `e`: tag 1 (`welcome`) once per load, tag 2 (`tier`) with the data layer's `user.tier`.
    static let container = Array(
        """
        {"resource": {"version": "1",
          "macros": [
            {"function": "__e", "instance_name": "Event Name"},
            {"function": "__v", "instance_name": "Tier", "vtp_name": "user.tier", "vtp_dataLayerVersion": 2}],
          "tags": [
            {"function": "__funct", "tag_id": 1, "vtp_classPath": "welcome", "once_per_load": true},
            {"function": "__funct", "tag_id": 2, "vtp_classPath": "tier",
             "vtp_functionArgument": ["list", ["map", "key", "tier", "value", ["macro", 1]]]}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}],
          "rules": [[["if", 0], ["add", 0, 1]]]}}
        """.utf8
    )

    /// Two users, one after the other and then back; a line without `user_id` is the last named user's.
    static let events = """
        {"event": "e", "user_id": "a", "user.tier": "gold"}
        {"event": "e", "user_id": "b"}
        ["consent", "update", {"ad_storage": "granted"}]
        {"event": "e", "user_id": "a"}
        {"event": "e"}
        {"event": "e", "user_id": 7}
        {"event": "e", "user_id": {"id": "a"}}
        """

    func files() throws -> (container: String, events: String) {
        let directory = try Fixtures.directory([
            "GTM-SK1.json": Self.container, "events.jsonl": Array(Self.events.utf8),
        ])
        return (directory + "/GTM-SK1.json", directory + "/events.jsonl")
    }

    func run(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(arguments, output: captured.output)
        return (code, captured.standardOutput, captured.standardError)
    }

    func jsonLines(_ text: String) throws -> [ValueMap] {
        try text.split(separator: "\n").map { line in try #require(try Value(json: String(line)).objectValue) }
    }

    /// Each fired tag's class path and, for `tier`, its argument: what a push did.
    func outcome(_ line: ValueMap) -> [String] {
        (line["fired"]?.arrayValue ?? []).compactMap { tag in
            guard let tag = tag.objectValue, let path = tag["class_path"]?.stringValue else { return nil }
            let tier = tag["parameters"]?.objectValue?["tier"]
            return tier.map { "\(path)=\(JSONWriter.string($0))" } ?? path
        }
    }

    @Test func eachNamedUserHasTheirOwnSessionAndALineWithoutTheKeyIsTheLastOnes() async throws {
        let (container, events) = try files()
        let result = await run([
            "run", container, "--events", events, "--format", "json", "--session-key", "user_id", "--log-level",
            "error",
        ])
        #expect(result.code == ExitCode.failedInput, "the last line's user_id is an object")
        let lines = try jsonLines(result.out)
        try #require(lines.count == 7)
        #expect(lines.map { $0["session"] } == ["a", "b", "b", "a", "a", "7", nil])
        // Each user's first event fires the once-per-load tag; b does not see a's tier.
        #expect(outcome(lines[0]) == ["welcome", #"tier="gold""#])
        #expect(outcome(lines[1]) == ["welcome", "tier"])
        #expect(lines[2]["command"] != nil)
        #expect(outcome(lines[3]) == [#"tier="gold""#])
        #expect(outcome(lines[4]) == [#"tier="gold""#])
        #expect(outcome(lines[5]) == ["welcome", "tier"])
        let error = try #require(lines[6]["error"]?.objectValue)
        #expect(error["code"] == "invalid_session")
        #expect(error["message"] == "'user_id' (--session-key) must be a non-empty string or an integer, not object")
        #expect(error["column"] == 27)
    }

    /// The same log in one session: what the option changes.
    @Test func withoutTheKeyTheLogIsOneSession() async throws {
        let (container, events) = try files()
        let result = await run(["run", container, "--events", events, "--format", "json", "--log-level", "error"])
        let lines = try jsonLines(result.out)
        try #require(lines.count == 7)
        #expect(lines.allSatisfy { $0["session"] == nil })
        #expect(outcome(lines[0]) == ["welcome", #"tier="gold""#])
        #expect(outcome(lines[1]) == [#"tier="gold""#])
    }

    @Test func textNamesEachLinesSession() async throws {
        let (container, events) = try files()
        let result = await run([
            "run", container, "--events", events, "--session-key", "user_id", "--log-level", "error",
        ])
        let titles = result.out.split(separator: "\n").filter { $0.hasPrefix("line ") }
        #expect(
            titles == [
                #"line 1 [a]: event "e""#, #"line 2 [b]: event "e""#,
                #"line 3 [b]: gtag consent update {"ad_storage":"granted"}"#, #"line 4 [a]: event "e""#,
                #"line 5 [a]: event "e""#, #"line 6 [7]: event "e""#,
            ]
        )
    }

    /// Records held before a user is known are released to that user alone: in one session for the whole log, the
    /// first `login` filed another user's event as its own.
    @Test func eachUsersPendingRecordsAreReleasedToThatUserAlone() async throws {
        let events = try Fixtures.directory([
            "events.jsonl": Array(
                """
                {"event": "played song", "title": "A", "genre": "jazz", "duration": 300, "user_id": "u1"}
                {"event": "played song", "title": "B", "genre": "jazz", "duration": 300, "user_id": "u2"}
                {"event": "login", "user_id": "u1"}
                {"event": "login", "user_id": "u2"}
                """.utf8
            )
        ])
        let released = { (arguments: [String]) async throws -> [[String]] in
            let result = await run(
                [
                    "run", RunCommandTests.music, "--events", events + "/events.jsonl", "--format", "json",
                    "--braze", RunCommandTests.braze, "--log-level", "error",
                ] + arguments
            )
            #expect(result.code == 0, "\(result.err)")
            return try jsonLines(result.out).map { line in
                (line["records"]?.arrayValue ?? []).compactMap { record -> String? in
                    guard let record = record.objectValue, let user = record["external_id"]?.stringValue else {
                        return nil
                    }
                    let title = record["properties"]?.objectValue?["title"]?.stringValue
                    return title.map { "\(user): \($0)" } ?? "\(user)"
                }
            }
        }
        #expect(try await released(["--session-key", "user_id"]) == [[], [], ["u1", "u1: A"], ["u2", "u2: B"]])
        #expect(try await released([]) == [[], [], ["u1", "u1: A", "u1: B"], ["u2"]])
    }

    /// `--braze-user` names one Braze user: with sessions for many users it would file them all as that one.
    @Test func aBrazeUserForEverySessionIsAUsageError() async throws {
        let (container, events) = try files()
        let result = await run(["run", container, "--events", events, "--session-key", "user_id", "--braze-user", "u"])
        #expect(result.code == ExitCode.usage)
        #expect(result.err.contains("--braze-user names the Braze user of one session"))
        let empty = await run(["run", container, "--events", events, "--session-key", ""])
        #expect(empty.code == ExitCode.usage)
    }

    /// `diff --session-key` replays each user's pushes in their own pair of sessions: the once-per-load tag fires once
    /// per user on both sides.
    @Test func diffReplaysEachUserInTheirOwnSessions() async throws {
        let (container, events) = try files()
        let counts = { (arguments: [String]) async throws -> Value? in
            let result = await run(["diff", container, container, "--events", events, "--format", "json"] + arguments)
            let report = try #require(try Value(json: result.out).objectValue)
            let tags = report["replay"]?.objectValue?["tags"]?.arrayValue
            return tags?.first?.objectValue?["old_fired"]
        }
        #expect(try await counts(["--session-key", "user_id"]) == 3)
        #expect(try await counts([]) == 1)
    }

    /// `preview --session-key` traces each user's pushes in a debug session of their own, named by the key.
    @Test func previewTracesEachUserInTheirOwnSession() async throws {
        let (container, events) = try files()
        let drafts = (container as NSString).deletingLastPathComponent
        let url = "tagmanager.c.com.example://preview/p?id=GTM-SK1&gtm_auth=t&gtm_preview=1"
        let result = await run([
            "preview", url, "--drafts", drafts, "--events", events, "--format", "json", "--session-key", "user_id",
        ])
        #expect(result.code == ExitCode.failedInput, "the last line's user_id is an object")
        let lines = try jsonLines(result.out)
        try #require(lines.count == 7)
        #expect(lines.map { $0["session_id"] ?? $0["session"] } == ["a", "b", "b", "a", "a", "7", nil])
        let welcomed = lines.map { line in
            (line["evaluations"]?.arrayValue?.first?.objectValue?["tags"]?.arrayValue ?? []).contains {
                $0.objectValue?["class_path"] == "welcome" && $0.objectValue?["outcome"] == "fired"
            }
        }
        #expect(welcomed == [true, true, false, false, false, true, false])
        let both = await run(["preview", url, "--drafts", drafts, "--session-key", "user_id", "--braze-user", "u"])
        #expect(both.code == ExitCode.usage)
    }

    /// `diff --time-key` takes each push's time out as `run` does; a line whose time is not one is not replayed.
    @Test func diffTakesATimeKeyOutAsRunDoes() async throws {
        let directory = try Fixtures.directory([
            "GTM-SK1.json": Self.container,
            "events.jsonl": Array(
                """
                {"event": "e", "user.tier": "gold", "at": "2024-05-01T12:30:00Z"}
                {"event": "e", "at": "noon"}
                """.utf8
            ),
        ])
        let container = directory + "/GTM-SK1.json"
        let events = directory + "/events.jsonl"
        let result = await run([
            "diff", container, container, "--events", events, "--time-key", "at", "--format", "json",
        ])
        #expect(result.code == ExitCode.failure, "one line could not be read")
        #expect(result.err.contains("line 2:22: 'at' (--time-key) must be an ISO-8601 time"))
        let report = try #require(try Value(json: result.out).objectValue)
        #expect(report["replay"]?.objectValue?["events_replayed"] == 1)
    }
}
