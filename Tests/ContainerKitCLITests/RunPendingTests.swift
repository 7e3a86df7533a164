import ContainerKit
import Foundation
import TestSupport
import Testing

@testable import ContainerKitCLI

/// `containerkit run` with Braze tags in a session that has no user yet: the tags are `pending`, their records
/// wait in the session, and the push that names the user releases them with their IDs and times.
struct RunPendingTests {
    /// The corpus' Braze sample: one `logEvent` tag (class path `com.appboy.googletagmanager.BrazeGtmTagProvider`)
    /// for the event `logEvent`, its name from the pushed `eventName`; no `changeUser` tag.
    static var brazeSample: String? {
        Fixtures.corpusDirectory?.appendingPathComponent("v5-mobile/Appboy__appboy-android-sdk__GTM-5HM9ZRX.json").path
    }

    static let brazeClassPath = "com.appboy.googletagmanager.BrazeGtmTagProvider"

    static let stream = [
        #"{"event": "logEvent", "eventName": "app_open", "stringParam": "home"}"#,
        #"{"event": "logEvent", "eventName": "search", "intParam": 3}"#,
        #"{"event": "changeUser", "externalUserId": "user-7"}"#,
        #"{"event": "logEvent", "eventName": "after login"}"#,
    ]

    func run(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(["run"] + arguments, output: captured.output, environment: [:])
        return (code, captured.standardOutput, captured.standardError)
    }

    func write(_ lines: [String]) throws -> String {
        let path = NSTemporaryDirectory() + "containerkit-run-pending-\(UUID().uuidString).jsonl"
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func jsonLines(_ text: String) throws -> [ValueMap] {
        try text.split(separator: "\n").map { line in try #require(try Value(json: String(line)).objectValue) }
    }

    @Test(.enabled(if: RunPendingTests.brazeSample != nil, Fixtures.corpusMissing))
    func theCorpusBrazeSampleWithoutAUserIsPendingAndALaterUserEventReleasesItsRecords() async throws {
        let events = try write(Self.stream)
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([
            try #require(Self.brazeSample), "--events", events, "--format", "json", "--braze-user-event", "changeUser",
        ])
        #expect(result.code == 0, "\(result.err)")
        let lines = try jsonLines(result.out)
        #expect(lines.count == 4)

        // Lines 1 and 2: the tag is pending; its record waits (shown, not sent), without an identity.
        var held: [ValueMap] = []
        for line in lines.prefix(2) {
            let tag = try #require(line["fired"]?.arrayValue?.first?.objectValue)
            #expect(tag["status"] == "pending")
            #expect(tag["message"]?.stringValue?.contains("until the session has a Braze user") == true)
            #expect(line["records"] == [])
            let record = try #require(tag["pending_records"]?.arrayValue?.first?.objectValue)
            #expect(record["external_id"] == nil)
            held.append(record)
        }
        #expect(held.map { $0["name"] } == ["app_open", "search"])

        // Line 3 names the user: no tag fires, and the push's records are the held ones, for that user, with
        // their IDs and original times.
        #expect(lines[2]["fired"] == [])
        let released = try #require(lines[2]["records"]?.arrayValue).compactMap(\.objectValue)
        #expect(released.map { $0["name"] } == ["app_open", "search"])
        #expect(released.allSatisfy { $0["external_id"] == "user-7" })
        #expect(released.map { $0["id"] } == held.map { $0["id"] })
        #expect(released.map { $0["time"] } == held.map { $0["time"] })
        #expect(released.map { $0["properties"] } == held.map { $0["properties"] })

        // Line 4: the session has its user; the tag runs at once.
        let after = try #require(lines[3]["fired"]?.arrayValue?.first?.objectValue)
        #expect(after["status"] == "ok")
        #expect(lines[3]["records"]?.arrayValue?.first?.objectValue?["external_id"] == "user-7")
    }

    @Test(.enabled(if: RunPendingTests.brazeSample != nil, Fixtures.corpusMissing))
    func theTextOutputSaysPendingAndWhatWasReleased() async throws {
        let events = try write(Array(Self.stream.prefix(3)))
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([try #require(Self.brazeSample), "--events", events, "--braze-user-event", "changeUser"])
        #expect(result.code == 0, "\(result.err)")
        #expect(
            result.out.contains("[pending: braze tag 11: held 'logEvent' (1 record) until the session has a Braze user")
        )
        #expect(result.out.contains("⋯ pending: {\"type\":\"custom_event\""))
        #expect(result.out.contains("released 2 pending records"))
        #expect(result.out.contains("\"external_id\":\"user-7\",\"name\":\"app_open\""))
    }

    @Test(.enabled(if: RunPendingTests.brazeSample != nil, Fixtures.corpusMissing))
    func withoutAnyUserEverythingStaysPending() async throws {
        let events = try write(Array(Self.stream.prefix(2)))
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([
            try #require(Self.brazeSample), "--events", events, "--format", "json", "--braze",
            "com.appboy.googletagmanager.BrazeGtmTagProvider",
        ])
        #expect(result.code == 0, "\(result.err)")
        let lines = try jsonLines(result.out)
        #expect(lines.map { $0["fired"]?.arrayValue?.first?.objectValue?["status"] } == ["pending", "pending"])
        #expect(lines.allSatisfy { $0["records"] == [] })
    }

    /// `preview --braze`: the same statuses in the draft's timeline, the held records under their tag.
    @Test(.enabled(if: RunPendingTests.brazeSample != nil, Fixtures.corpusMissing))
    func previewShowsTheBrazeTagPendingWithItsHeldRecord() async throws {
        let sample = try Data(contentsOf: URL(fileURLWithPath: try #require(Self.brazeSample)))
        let drafts = try Fixtures.directory(["GTM-5HM9ZRX.json": Array(sample)])
        let events = try write(Array(Self.stream.prefix(1)))
        defer { try? FileManager.default.removeItem(atPath: events) }
        let url = "tagmanager.c.com.example.app://preview/p?id=GTM-5HM9ZRX&gtm_auth=tok3n&gtm_preview=1"
        let captured = CapturedOutput()
        let code = await CLI.main(
            ["preview", url, "--drafts", drafts, "--events", events, "--braze", Self.brazeClassPath],
            output: captured.output
        )
        #expect(code == 0, "\(captured.standardError)")
        #expect(captured.standardOutput.contains("[pending: braze tag 11: held 'logEvent' (1 record)"))
        #expect(captured.standardOutput.contains("⋯ held {\"type\":\"custom_event\""))

        let json = CapturedOutput()
        _ = await CLI.main(
            [
                "preview", url, "--drafts", drafts, "--events", events, "--braze", Self.brazeClassPath, "--format",
                "json",
            ],
            output: json.output
        )
        let trace = try PushTrace(json: try #require(json.standardOutput.split(separator: "\n").first.map(String.init)))
        let tag = try #require(trace.tags.first { $0.tagID == 11 })
        #expect(tag.outcome == .pending && tag.status?.name == "pending")
        #expect(trace.records.map(\.state) == [.held])
        #expect(trace.records.first?.durability == .session && trace.records.first?.tagID == 11)
    }

    @Test func aBrazeUserFromTheStartSendsAtOnce() async throws {
        let root = Fixtures.packageRoot.path
        let events = try write([#"{"event": "played song", "title": "So What", "genre": "jazz", "duration": 545}"#])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([
            root + "/Containers/GTM-MUSIC01.json", "--events", events, "--format", "json", "--braze-user", "ada",
        ])
        #expect(result.code == 0, "\(result.err)")
        let line = try #require(try jsonLines(result.out).first)
        #expect(line["fired"]?.arrayValue?.first?.objectValue?["status"] == "ok")
        #expect(line["records"]?.arrayValue?.first?.objectValue?["external_id"] == "ada")
    }
}
