import ContainerKit
import ContainerKitBraze
import ContainerKitDelivery
import ContainerKitTesting
import Foundation
import Testing

/// The trace of every push of the bundled event files through the bundled containers, text and JSON, against
/// the golden files in `Tests/ContainerKitTests/Trace/Golden/`: a change to any trace fails here.
///
/// After a deliberate change, regenerate the files and review the diff (see `Docs/Preview.md`):
/// `CONTAINERKIT_UPDATE_GOLDEN=1 swift test --filter GoldenTraceTests`.
@Suite struct GoldenTraceTests {
    /// A container file (under `Containers/`) and an event file (under `Containers/events/`).
    struct Case: Sendable, CustomTestStringConvertible {
        var container: String
        var events: String
        var testDescription: String { "\(container) × \(events)" }
        /// The golden files' name: `GTM-MUSIC01.music-session` (`next/` becomes `next-`).
        var name: String {
            container.replacingOccurrences(of: "/", with: "-").replacingOccurrences(of: ".json", with: "")
                .replacingOccurrences(of: ".plist", with: "") + "."
                + events.replacingOccurrences(of: ".jsonl", with: "")
        }
    }

    static let cases: [Case] = [
        Case(container: "GTM-MUSIC01.json", events: "music-session.jsonl"),
        Case(container: "GTM-MUSICEX.json", events: "music-session.jsonl"),
        Case(container: "next/GTM-MUSIC01.json", events: "music-session.jsonl"),
        Case(container: "GTM-DEFAULT1.plist", events: "music-session.jsonl"),
        // Consent commands (a line that is an array: gtag's arguments) between events.
        Case(container: "GTM-MUSIC01.json", events: "consent-session.jsonl"),
    ]

    static let goldenDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Golden")

    static var updating: Bool { ProcessInfo.processInfo.environment["CONTAINERKIT_UPDATE_GOLDEN"] == "1" }

    /// Runs the case's events in one session, with the Braze provider (a fixed clock and record IDs, a sink in
    /// memory) so that its records, held and released, are part of the trace; returns the text and the JSON.
    static func traces(of testCase: Case) throws -> (text: String, json: String) {
        let root = TestContainers.packageRoot.appendingPathComponent("Containers")
        let file = root.appendingPathComponent(testCase.container)
        let container = try ContainerLoader().load(
            bytes: Array(try Data(contentsOf: file)),
            file: file.lastPathComponent
        )
        let manager = TagManager(logger: InMemoryLogger(), randomSource: .seeded(44))
        manager.add(container)
        BrazeTagProvider(
            sink: InMemoryAnalyticsSink(),
            clock: { Date(timeIntervalSince1970: 1_800_000_000) },
            idGenerator: AnalyticsRecordIDGenerator(prefix: "golden")
        ).register(on: manager)
        let session = manager.makeDataLayer(sessionID: "golden")
        let events = try String(
            contentsOf: root.appendingPathComponent("events").appendingPathComponent(testCase.events),
            encoding: .utf8
        )
        var text = ""
        var json = ""
        for (number, line) in events.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { continue }
            let value = try Value(json: String(line))
            let trace: PushTrace
            if case .array(let arguments) = value {
                trace = try #require(session.push(try ConsentCommand(gtagArguments: arguments), tracing: true).trace)
            } else {
                let message = try #require(value.objectValue, "line \(number + 1)")
                trace = try #require(session.push(message, tracing: true).trace)
            }
            let title = trace.consent.map { "consent \($0.kind)" } ?? trace.event.map { "event \"\($0)\"" }
            text += "\nline \(number + 1): " + (title ?? "push (no event)") + "\n"
            text += trace.textLines.joined(separator: "\n") + "\n"
            json += trace.json() + "\n"
        }
        return (text, json)
    }

    @Test(arguments: cases)
    func theTraceOfEveryPushMatchesItsGoldenFile(_ testCase: Case) throws {
        let (text, json) = try Self.traces(of: testCase)
        let textFile = Self.goldenDirectory.appendingPathComponent(testCase.name + ".txt")
        let jsonFile = Self.goldenDirectory.appendingPathComponent(testCase.name + ".jsonl")
        if Self.updating {
            try FileManager.default.createDirectory(at: Self.goldenDirectory, withIntermediateDirectories: true)
            try text.write(to: textFile, atomically: true, encoding: .utf8)
            try json.write(to: jsonFile, atomically: true, encoding: .utf8)
            return
        }
        let regenerate: Comment = "regenerate with CONTAINERKIT_UPDATE_GOLDEN=1 swift test --filter GoldenTraceTests"
        let goldenText = try String(contentsOf: textFile, encoding: .utf8)
        let goldenJSON = try String(contentsOf: jsonFile, encoding: .utf8)
        // Line by line, so that a failure names the first line that differs.
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let goldenLines = goldenText.split(separator: "\n", omittingEmptySubsequences: false)
        if let at = lines.indices.first(where: { $0 < goldenLines.count && lines[$0] != goldenLines[$0] }) {
            Issue.record(
                "line \(at + 1) of \(testCase.name).txt: got '\(lines[at])', golden '\(goldenLines[at])'; \(regenerate)"
            )
        }
        #expect(lines.count == goldenLines.count, regenerate)
        #expect(json == goldenJSON, regenerate)
        // The golden JSON reads back into the same traces.
        for line in goldenJSON.split(separator: "\n") {
            let trace = try PushTrace(json: String(line))
            #expect(trace.json() == String(line))
        }
    }
}
