import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@testable import ContainerKitCLI

struct RunCommandTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path
    static let music = root + "/Containers/GTM-MUSIC01.json"
    static let session = root + "/Containers/events/music-session.jsonl"
    static let braze = "com.appboy.googletagmanager.BrazeGtmTagProvider"

    static func temporaryPath(_ name: String) -> String {
        NSTemporaryDirectory() + "containerkit-run-\(UUID().uuidString)-\(name)"
    }

    static func write(_ lines: [String]) throws -> String {
        let path = temporaryPath("events.jsonl")
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func run(_ arguments: [String], environment: [String: String] = [:]) async -> (
        code: Int32, out: String, err: String
    ) {
        let captured = CapturedOutput()
        let code = await CLI.main(["run"] + arguments, output: captured.output, environment: environment)
        return (code, captured.standardOutput, captured.standardError)
    }

    func jsonLines(_ text: String) throws -> [ValueMap] {
        try text.split(separator: "\n").map { line in try #require(try Value(json: String(line)).objectValue) }
    }

    @Test func jsonFormatPrintsOneObjectPerInputLineWithTypedParameters() async throws {
        let result = await run([
            Self.music, "--events", Self.session, "--format", "json", "--context", "app_id=com.example.music",
        ])
        #expect(result.code == 0)
        let lines = try jsonLines(result.out)
        #expect(lines.count == 7)
        #expect(
            lines.map { $0["event"] } == [
                "login", "played song", "played song", "played song", .null, "genre selected", "purchase",
            ]
        )
        let played = try #require(lines[1]["fired"]?.arrayValue?.first?.objectValue)
        #expect(played["tag_id"] == 1)
        #expect(played["status"] == "unhandled")
        #expect(played["parameters"]?.objectValue?["duration"] == 545)
        #expect(played["parameters"]?.objectValue?["app"] == "app:com.example.music")
        #expect(lines[2]["fired"] == [])
    }

    @Test func aLineWithAMessageIDTheSessionHasSeenIsADuplicateAndNotAppliedAgain() async throws {
        let events = try Self.write([
            #"{"event": "played song", "title": "So What", "duration": 545, "message_id": "m-1"}"#,
            #"{"event": "played song", "title": "Blue in Green", "duration": 1, "message_id": "m-1"}"#,
            #"{"event": "played song", "message_id": 7}"#,
            #"{"event": "played song", "message_id": ""}"#,
        ])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let json = await run([Self.music, "--events", events, "--format", "json"])
        #expect(json.code == ExitCode.failedInput, "two lines have a bad message_id")
        let lines = try jsonLines(json.out)
        #expect(lines.count == 4)
        #expect(lines[0]["duplicate"] == nil)
        let original = try #require(lines[0]["fired"]?.arrayValue?.first?.objectValue)
        #expect(lines[1]["duplicate"] == true)
        let remembered = try #require(lines[1]["fired"]?.arrayValue?.first?.objectValue)
        #expect(remembered["tag_id"] == original["tag_id"] && remembered["status"] == original["status"])
        #expect(lines[2]["error"]?.objectValue?["code"] == "invalid_event_id")
        #expect(lines[3]["error"]?.objectValue?["code"] == "invalid_event_id")
        #expect(
            json.err.contains("line 3:40: 'message_id' must be a string of 1 to 256 bytes without NUL, not number\n")
        )
        #expect(json.err.contains("line 4:40: 'message_id' is refused: an event id must not be empty\n"))
        #expect(lines[2]["error"]?.objectValue?["column"] == 40)

        let text = await run([Self.music, "--events", events])
        #expect(text.out.contains("line 2: event \"played song\"\n  duplicate of the push applied at"))
        #expect(text.out.contains("(tag_id 1) unhandled"))
    }

    /// `"message_id": null` is no ID (as TagService reads it): the line is pushed, and not merged as a key.
    @Test func aNullMessageIDIsNoID() async throws {
        let events = try Self.write([
            #"{"event": "played song", "title": "So What", "duration": 545, "message_id": null}"#,
            #"{"event": "played song", "title": "So What", "duration": 545, "message_id": null}"#,
        ])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let json = await run([Self.music, "--events", events, "--format", "json"])
        #expect(json.code == 0, "\(json.err)")
        let lines = try jsonLines(json.out)
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0["duplicate"] == nil && $0["error"] == nil })
    }

    @Test func aDefaultValueContainerSaysHowManyValuesItHas() async throws {
        let events = try Self.write([#"{"event": "app open"}"#])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([Self.root + "/Containers/GTM-DEFAULT1.plist", "--events", events])
        #expect(result.code == 0)
        #expect(
            result.out.hasPrefix(
                "container GTM-DEFAULT1 version 0 (flat_values, mobile): 0 tags, 0 variables, 0 rules, 5 values\n"
            )
        )
    }

    @Test func badLinesAreReportedWithTheirNumberAndTheRunGoesOn() async throws {
        let events = try Self.write([
            #"{"event": "login", "user_id": "u"}"#, "{not json", "42", #"{"event": "purchase"}"#,
        ])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([Self.music, "--events", events, "--format", "json"])
        #expect(result.code == 2)
        #expect(try jsonLines(result.out).count == 4)
        #expect(result.err.contains("line 2:"))
        #expect(
            result.err.contains("line 3:1: a push must be a JSON object (or a gtag command, a JSON array), not number")
        )
    }

    @Test func anUnclosedObjectIsPlacedOnItsOwnInputLine() async throws {
        let events = try Self.write([#"{"event": "login"}"#, "", "", #"{"event": "y","#])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([Self.music, "--events", events])
        #expect(result.code == 2)
        #expect(
            result.err.contains(
                "containerkit run: line 4:15: unexpected end of file inside object that starts at column 1\n"
            )
        )
    }

    @Test func jsonOutputPairsEveryInputLineWithOneObjectEvenWhenALineIsBad() async throws {
        let events = try Self.write([
            #"{"event": "login", "user_id": "u"}"#, "", #"{"event": "x",}"#, "42", #"{"event": "purchase"}"#,
        ])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([Self.music, "--events", events, "--format", "json"])
        let lines = try jsonLines(result.out)
        try #require(lines.count == 4)
        #expect(lines[0]["event"] == "login")
        #expect(lines[1]["line"] == 3)
        let syntax = try #require(lines[1]["error"]?.objectValue)
        #expect(syntax["code"] == "syntax_error")
        #expect(syntax["column"] == 15)
        #expect(syntax["message"]?.stringValue?.isEmpty == false)
        #expect(lines[2]["line"] == 4)
        #expect(lines[2]["error"]?.objectValue?["code"] == "not_an_object")
        #expect(lines[2]["error"]?.objectValue?["column"] == 1)
        #expect(lines[3]["event"] == "purchase")
    }

    @Test(arguments: [
        ([], "missing <container-file>"), (["a.json", "--format", "xml"], "--format"),
        (["a.json", "--context", "nokey"], "key=value"),
        (["a.json", "--context", "colour=red"], "unknown context key"),
        (["a.json", "--sink", "kafka:x"], "--sink"), (["a.json", "--sink", "braze:ftp://x"], "http(s)"),
        (
            ["a.json", "--sink", "braze:https://rest.iad-01.braze.com?x"],
            "--sink braze:<REST endpoint>: 'https://rest.iad-01.braze.com?x' has a query"
        ),
        (["a.json", "--bogus"], "unknown option"),
    ])
    func usageErrorsExitSixtyFour(arguments: [String], message: String) async {
        let result = await run(arguments)
        #expect(result.code == 64)
        #expect(result.err.contains(message))
    }

    @Test func textSummaryNamesTheContainersPlatform() async throws {
        let events = try Self.write([#"{"event": "login"}"#])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([Self.music, "--events", events])
        #expect(result.out.hasPrefix("container GTM-MUSIC01 version "))
        #expect(result.out.contains("(compiled_resource, mobile): "))
    }

    @Test func anUnloadableContainerExitsOne() async throws {
        let path = Self.temporaryPath("GTM-BROKEN.json")
        try "{\"resource\": [".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = await run([path, "--events", Self.session])
        #expect(result.code == 1)
        #expect(result.err.contains("GTM-BROKEN.json:1:"))
    }

    @Test func brazeRecordsAppearInTheRecordsFieldOfEachLine() async throws {
        let result = await run([Self.music, "--events", Self.session, "--format", "json", "--braze", Self.braze])
        #expect(result.code == 0)
        let lines = try jsonLines(result.out)
        let types = lines.map {
            $0["records"]?.arrayValue?.compactMap { $0.objectValue?["type"]?.stringValue } ?? []
        }
        #expect(types == [["change_user"], ["custom_event"], [], [], [], ["custom_attribute"], ["purchase"]])
        #expect(lines.allSatisfy { $0["event"] != nil && $0["fired"] != nil })
        let braze = try #require(lines[1]["fired"]?.arrayValue?.first { $0.objectValue?["records"] != nil })
        #expect(braze.objectValue?["status"] == "ok")
        let event = try #require(lines[1]["records"]?.arrayValue?.first?.objectValue)
        #expect(event["external_id"] == "user-42")
        #expect(event["name"] == "played song")
        #expect(event["properties"]?.objectValue?["duration"] == 545)
    }

    /// `--time-key`: a recorded log's own times are its records' times; the member is taken out of the push, and one
    /// that is not a time is refused in its line's place. Without the option the member is data, as any other.
    @Test func aTimeKeyMakesEachLinesTimeTheTimeOfItsRecords() async throws {
        let events = try Self.write([
            #"{"event": "login", "user_id": "ada", "timestamp": "2024-05-01T12:00:00Z"}"#,
            #"{"event": "played song", "title": "So What", "duration": 545, "timestamp": "2024-05-01T14:05:00.5+02:00"}"#,
            #"{"event": "played song", "title": "Later", "duration": 545, "timestamp": "soon"}"#,
            #"{"event": "played song", "title": "Now", "duration": 545}"#,
        ])
        defer { try? FileManager.default.removeItem(atPath: events) }
        let timed = await run([
            Self.music, "--events", events, "--format", "json", "--braze", Self.braze, "--time-key", "timestamp",
        ])
        #expect(timed.code == 2)
        let lines = try jsonLines(timed.out)
        func times(_ line: ValueMap) -> [String] {
            line["records"]?.arrayValue?.compactMap { $0.objectValue?["time"]?.stringValue } ?? []
        }
        #expect(times(lines[0]) == ["2024-05-01T12:00:00.000Z"])
        #expect(times(lines[1]) == ["2024-05-01T12:05:00.500Z"])
        #expect(lines[1]["fired"]?.arrayValue?.first?.objectValue?["parameters"]?.objectValue?["timestamp"] == nil)
        #expect(lines[2]["error"]?.objectValue?["code"] == "invalid_time")
        #expect(lines[2]["error"]?.objectValue?["column"] == 74)
        #expect(timed.err.contains("line 3:74: 'timestamp' (--time-key) must be an ISO-8601 time"))
        #expect(times(lines[3]).count == 1 && !times(lines[3])[0].hasPrefix("2024"))

        let untimed = await run([Self.music, "--events", events, "--format", "json", "--braze", Self.braze])
        #expect(untimed.code == 0)
        let plain = try jsonLines(untimed.out)
        #expect(!times(plain[1]).isEmpty && !times(plain[1])[0].hasPrefix("2024"))
        #expect(await run([Self.music, "--time-key", ""]).code == 64)
    }

    @Test func brazeSinkDeliversThroughTheQueueToUsersTrack() async throws {
        let server = try BrazeTestServer()
        defer { server.stop() }
        let queue = Self.temporaryPath("queue")
        defer { try? FileManager.default.removeItem(atPath: queue) }
        let result = await run(
            [
                Self.music, "--events", Self.session, "--format", "json", "--braze", Self.braze,
                "--sink", "braze:\(server.endpoint.absoluteString)", "--queue", queue,
            ],
            environment: ["BRAZE_REST_API_KEY": server.apiKey]
        )
        #expect(result.code == 0, "\(result.err)")
        // `run` drains the sink before it exits: everything is already at the server.
        #expect(server.acceptedObjectCount == 4)
        #expect(server.violations.isEmpty)
        #expect(server.acceptedEvents.first?.objectValue?["name"] == "played song")
        #expect(server.acceptedPurchases.first?.objectValue?["product_id"] == "premium-month")
        #expect(server.acceptedEvents.allSatisfy { $0.objectValue?["external_id"] == "user-42" })
        #expect(try SegmentRecordStore.pendingRecords(in: queue).isEmpty)
    }

    @Test(arguments: [false, true])
    func recordsDroppedAtDeliveryGiveTheirOwnExitCode(throughTheQueue: Bool) async throws {
        let server = try BrazeTestServer()
        defer { server.stop() }
        server.fail(next: 10, with: .badRequest(message: "Invalid payload", errors: ["events[0] is bad"]))
        let queue = Self.temporaryPath("queue")
        defer { try? FileManager.default.removeItem(atPath: queue) }
        let result = await run(
            [Self.music, "--events", Self.session, "--format", "json", "--braze", Self.braze]
                + ["--sink", "braze:\(server.endpoint.absoluteString)"] + (throughTheQueue ? ["--queue", queue] : []),
            environment: ["BRAZE_REST_API_KEY": server.apiKey]
        )
        #expect(result.code == 3, "\(result.err)")
        #expect(result.err.contains("dropped at delivery"))
        #expect(server.acceptedObjectCount == 0)
    }

    @Test func theObjectLimitPerRequestSplitsWhatGoesToUsersTrack() async throws {
        let server = try BrazeTestServer()
        defer { server.stop() }
        let result = await run(
            [
                Self.music, "--events", Self.session, "--format", "json", "--braze", Self.braze,
                "--sink", "braze:\(server.endpoint.absoluteString)", "--braze-objects-per-request", "1",
            ],
            environment: ["BRAZE_REST_API_KEY": server.apiKey]
        )
        #expect(result.code == 0, "\(result.err)")
        #expect(server.acceptedObjectCount == 4)
        #expect(server.requests.count == 4)
        #expect(server.requests.allSatisfy { $0.objectCount == 1 })
    }

    @Test(arguments: [
        (["--sink", "braze:http://127.0.0.1:9/", "--braze-objects-per-request", "76"], "1 to 75 objects per request"),
        (["--sink", "braze:http://127.0.0.1:9/", "--braze-objects-per-request", "each"], "'each' is not"),
        (["--braze-objects-per-request", "50"], "applies to --sink braze:<REST endpoint> only"),
    ])
    func anObjectLimitBrazeDoesNotAllowIsAUsageError(arguments: [String], message: String) async {
        let result = await run([Self.music, "--events", Self.session] + arguments)
        #expect(result.code == 64)
        #expect(result.err.contains(message), "\(result.err)")
    }

    @Test func brazeSinkWithoutAnAPIKeyFailsBeforeRunning() async {
        let result = await run([Self.music, "--events", Self.session, "--sink", "braze:http://127.0.0.1:9/"])
        #expect(result.code == 1)
        #expect(result.err.contains("BRAZE_REST_API_KEY"))
    }

    @Test func aLaterRunWithTheSameQueueDeliversWhatIsPending() async throws {
        let queue = Self.temporaryPath("queue")
        let delivered = Self.temporaryPath("delivered.jsonl")
        defer {
            try? FileManager.default.removeItem(atPath: queue)
            try? FileManager.default.removeItem(atPath: delivered)
        }
        // A first "run" whose downstream never confirms: its records are durable but pending.
        struct RefusingDestination: AnalyticsDestination {
            func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
                .retry(records, DeliveryError(.transport, "unreachable"))
            }
        }
        var configuration = DeliverySettings()
        configuration.logger = InMemoryLogger()
        configuration.drainTimeout = .zero
        let first = try DeliveryPipeline.durable(
            directory: queue,
            destination: RefusingDestination(),
            settings: configuration
        )
        let record = AnalyticsRecord(
            id: "pending-1",
            time: Date(timeIntervalSince1970: 1_700_000_000),
            user: .externalID("user-7"),
            payload: .customEvent(name: "queued", properties: ["n": 1])
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await first.run() }
            try await first.append([record])
            group.cancelAll()
            try await group.waitForAll()
        }
        #expect(try SegmentRecordStore.pendingRecords(in: queue).map(\.id) == ["pending-1"])

        let empty = try Self.write([])
        defer { try? FileManager.default.removeItem(atPath: empty) }
        let result = await run([
            Self.music, "--events", empty, "--braze", Self.braze, "--queue", queue, "--sink", "jsonl:\(delivered)",
        ])
        #expect(result.code == 0, "\(result.err)")
        let lines = try String(contentsOfFile: delivered, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1)
        #expect(try AnalyticsRecord(jsonLine: String(lines[0])).id == "pending-1")
        #expect(try SegmentRecordStore.pendingRecords(in: queue).isEmpty)
    }
}

/// Events lines that are not text, and containers with a repeated top-level key.
struct RunCommandInputTests {
    func run(_ arguments: [String]) async -> (code: Int32, out: String, err: String) {
        let captured = CapturedOutput()
        let code = await CLI.main(["run"] + arguments, output: captured.output, environment: [:])
        return (code, captured.standardOutput, captured.standardError)
    }

    static func write(_ bytes: [UInt8], _ name: String) throws -> String {
        let path = RunCommandTests.temporaryPath(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test func anEventsLineWithBinaryBytesIsDescribedAsAnEventsLineNotAContainer() async throws {
        let events = try Self.write(Array("{\"event\": \"login\"}\n".utf8) + [0, 1, 0x61, 0x62, 0x0A], "events.jsonl")
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([RunCommandTests.music, "--events", events])
        #expect(result.code == 2)
        #expect(result.err.contains("line 2:1: control byte 0x00 (not json text)"))
        #expect(!result.err.contains("protobuf"))
    }

    @Test func invalidUTF8InsideAnEventsLineIsAnErrorThatSaysWhere() async throws {
        let events = try Self.write(Array(#"{"event": "caf"#.utf8) + [0xFF] + Array("\"}\n".utf8), "events.jsonl")
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([RunCommandTests.music, "--events", events, "--format", "json"])
        #expect(result.code == 2)
        #expect(
            result.out.contains(
                #"{"line":1,"error":{"code":"syntax_error","message":"invalid utf-8 byte 0xff in string","column":15}}"#
            )
        )
        #expect(result.err.contains("line 1:15: invalid utf-8 byte 0xff in string"))
    }

    @Test func aRepeatedTopLevelKeyInTheContainerIsWarnedAbout() async throws {
        let text =
            #"{"resource": {"version": "1", "macros": [{"function": "__e"}]},"# + "\n"
            + #" "resource": {"version": "2"}}"#
        let container = try Self.write(Array(text.utf8), "GTM-DUP1.json")
        defer { try? FileManager.default.removeItem(atPath: container) }
        let events = try Self.write(Array("{\"event\": \"login\"}\n".utf8), "events.jsonl")
        defer { try? FileManager.default.removeItem(atPath: events) }
        let result = await run([container, "--events", events])
        #expect(result.code == 0)
        #expect(
            result.err.contains(
                "\(container):2:2: top-level key 'resource' appears more than once; only the last value is used"
            )
        )
    }
}
