import ContainerKit
import Foundation
import TestSupport
import Testing

@testable import ContainerKitCLI

/// `containerkit diff` on the two bundled versions of GTM-MUSIC01 and the recorded traffic log.
struct DiffCommandTests {
    static let root = Fixtures.packageRoot.path
    static let old = root + "/Containers/GTM-MUSIC01.json"
    static let new = root + "/Containers/next/GTM-MUSIC01.json"
    static let traffic = root + "/Containers/events/music-traffic.jsonl"

    func diff(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(["diff"] + arguments, output: captured.output)
        return (code, captured.standardOutput, captured.standardError)
    }

    static func write(_ lines: [String]) throws -> String {
        let path = NSTemporaryDirectory() + "containerkit-diff-\(UUID().uuidString).jsonl"
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test func theBundledVersionsDifferAndTheJSONReportSaysHowOnTheRecordedTraffic() async throws {
        let result = await diff([Self.old, Self.new, "--events", Self.traffic, "--reporter", "json"])
        #expect(result.code == 2)
        let report = try #require(try Value(json: result.out).objectValue)
        let structural = try #require(report["structural"]?.arrayValue)
        let summary = structural.map { entry -> String in
            let map = entry.objectValue ?? ValueMap()
            let side = (map["new"]?.objectValue ?? map["old"]?.objectValue) ?? ValueMap()
            let label = side["id"]?.stringValue ?? side["name"]?.stringValue ?? "-"
            return "\(map["kind"]?.jsString ?? "") \(map["element"]?.jsString ?? "") \(label)"
        }
        #expect(
            summary == [
                "changed tag 1", "changed tag 2", "added tag 6", "changed trigger -", "added trigger -",
                "changed variable Currency",
            ]
        )
        let replay = try #require(report["replay"]?.objectValue)
        let replayed = try #require(replay["events_replayed"]?.jsNumber)
        #expect(replayed == 218)
        let groups = try #require(replay["groups"]?.arrayValue?.compactMap { $0.objectValue })
        #expect(
            Set(groups.compactMap { $0["kind"]?.stringValue }) == ["only_old", "only_new", "changed"]
        )
        let renamed = try #require(groups.first { $0["arguments"]?.arrayValue?.count == 2 })
        #expect(renamed["match"] == "id")
        let arguments = try #require(renamed["arguments"]?.arrayValue?.compactMap { $0.objectValue })
        #expect(arguments.map { $0["argument"] } == ["title", "song_title"])
        #expect(arguments[0]["new_present"] == false)
        #expect(groups.allSatisfy { ($0["count"]?.jsNumber ?? 0) >= 1 })
    }

    @Test func aContainerDiffedWithItselfIsEmptyAndExitsZero() async throws {
        let result = await diff([Self.old, Self.old, "--events", Self.traffic])
        #expect(result.code == 0)
        #expect(result.out.contains("structure: no tag, trigger or variable added, removed or changed"))
        #expect(result.out.contains("218 event(s), 0 with differences"))
        #expect(!result.out.contains("differences, grouped"))
    }

    @Test func twoVersionsOfADefaultValueContainerDifferInTheirValues() async throws {
        let bundled = Self.root + "/Containers/GTM-DEFAULT1.plist"
        let directory = NSTemporaryDirectory() + "containerkit-diff-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        // The next version as JSON: one value changed, one removed, one added.
        let next = directory + "/GTM-DEFAULT1.json"
        try """
        {
          "accent_color": "#FF5500",
          "max_skips_per_hour": 7,
          "price_multiplier": 1.25,
          "welcome_message": "Hello from the default container",
          "dark_mode": true
        }
        """.write(toFile: next, atomically: true, encoding: .utf8)
        let result = await diff([bundled, next])
        #expect(result.code == 2)
        let lines = result.out.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        #expect(
            Array(lines.dropFirst(2)) == [
                "structure: 1 added, 1 removed, 1 changed",
                "  ~ value 'max_skips_per_hour' (matched by key) (\(next):3:25)",
                "      value: 6 → 7",
                "  - value 'shuffle_enabled' (\(bundled):12:2)",
                "  + value 'dark_mode' (\(next):6:16)",
                "",
            ]
        )
        let same = await diff([bundled, bundled])
        #expect(same.code == 0)
        #expect(same.out.contains("structure: no tag, trigger, variable or value added, removed or changed"))
    }

    @Test func withTheBrazeProviderOnBothSidesASelfDiffStaysEmpty() async throws {
        let braze = "com.appboy.googletagmanager.BrazeGtmTagProvider"
        let same = await diff([Self.old, Self.old, "--events", Self.traffic, "--braze", braze])
        #expect(same.code == 0)
        #expect(same.out.contains("218 event(s), 0 with differences"))
        let changed = await diff([Self.old, Self.new, "--events", Self.traffic, "--braze", braze])
        #expect(changed.code == 2)
    }

    @Test func failOnRemovedIgnoresAdditionsButNotAPausedTag() async throws {
        // Adding a tag only: nothing that fired stops firing.
        let added = await diff([Self.old, Self.old, "--fail-on", "removed"])
        #expect(added.code == 0)
        let paused = await diff([Self.old, Self.new, "--fail-on", "removed"])
        #expect(paused.code == 2)
        let none = await diff([Self.old, Self.new, "--events", Self.traffic, "--fail-on", "none"])
        #expect(none.code == 0)
        #expect(none.out.contains("fires only in the old version"))
    }

    @Test func theGitHubReporterAnnotatesTheContainerAndTheEventsFile() async throws {
        let result = await diff([Self.old, Self.new, "--events", Self.traffic, "--reporter", "github"])
        #expect(result.code == 2)
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.allSatisfy { $0.hasPrefix("::warning file=") })
        #expect(lines.contains { $0.contains("next/GTM-MUSIC01.json,line=52,col=7") && $0.contains("'Currency'") })
        #expect(
            lines.contains {
                $0.contains("music-traffic.jsonl,line=")
                    && $0.contains("'Braze - favorite genre' fires only in the old")
            }
        )
    }

    @Test func anUnreadableEventLineFailsWithItsLineAndColumn() async throws {
        let events = try Self.write([#"{"event": "login", "user_id": "u"}"#, #"{"event": x}"#])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await diff([Self.old, Self.old, "--events", events])
        #expect(result.code == 1)
        #expect(result.err.contains("cannot read events file '\(events)': line 2:11:"))
    }

    @Test func anUnreadableContainerFailsNamingTheFileAndPosition() async throws {
        let broken = try Self.write(["{\"resource\": {\"macros\": [1,]}}"])
        defer { try? FileManager.default.removeItem(atPath: broken) }
        let result = await diff([Self.old, broken])
        #expect(result.code == 1)
        #expect(result.err.contains("cannot read the new container '\(broken)'"))
        #expect(result.err.contains(":1:"))
        let missing = await diff([Self.old, Self.old, "--events", "/nonexistent/events.jsonl"])
        #expect(missing.code == 1)
    }

    @Test(arguments: [
        ["only-one.json"], [old, new, "--reporter", "sarif"], [old, new, "--fail-on", "sometimes"],
        [old, new, "--max-events", "-1"], [old, new, "--bogus"],
    ])
    func usageErrorsExit64(_ arguments: [String]) async {
        let result = await diff(arguments)
        #expect(result.code == 64)
        #expect(result.err.contains("usage: containerkit diff"))
    }

    /// Recorded pushes keep their `message_id`: a retried push (a seen ID) is a duplicate on both sides, as in
    /// production, so it neither fires again nor counts as a difference.
    @Test func aRetriedPushWithTheSameMessageIDIsReplayedOnceOnBothSides() async throws {
        let lines = [
            #"{"event": "played song", "title": "So What", "duration": 545, "message_id": "m-1"}"#,
            #"{"event": "played song", "title": "So What", "duration": 545, "message_id": "m-1"}"#,
        ]
        let events = try Fixtures.directory(["events.jsonl": Array(lines.joined(separator: "\n").utf8)])
        let once = await diff([Self.old, Self.new, "--events", events + "/events.jsonl", "--format", "json"])
        let single = try Fixtures.directory(["events.jsonl": Array(lines[0].utf8)])
        let alone = await diff([Self.old, Self.new, "--events", single + "/events.jsonl", "--format", "json"])
        let replayed = try #require(try Value(json: once.out).objectValue?["replay"]?.objectValue)
        let reference = try #require(try Value(json: alone.out).objectValue?["replay"]?.objectValue)
        #expect(replayed["events_with_differences"] == reference["events_with_differences"])
        #expect(replayed["tags"] == reference["tags"], "the retry fired nothing on either side")
    }

    @Test func aNumberOfTheWrongKindSaysWhichKindItNeeds() async {
        let events = await diff([Self.old, Self.new, "--max-events", "-1"])
        #expect(events.err.contains("--max-events needs a whole number, 0 or more, not '-1'"))
        let seed = await diff([Self.old, Self.new, "--seed", "1.5"])
        #expect(seed.code == 64)
        #expect(seed.err.contains("--seed needs a whole number from 0 to 18446744073709551615, not '1.5'"))
    }

    @Test func helpDescribesTheCommand() async {
        let result = await diff(["--help"])
        #expect(result.code == 0)
        #expect(result.out.contains("--fail-on"))
    }
}
