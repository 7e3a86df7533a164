import ContainerKit
import ContainerKitBraze
import ContainerKitDelivery
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

/// A stand-in for a service's shared snapshot store (Redis, a database), for the guide's example.
final class SharedSnapshots: Sendable {
    private let stored = Mutex<[String: SessionSnapshot]>([:])
    func put(_ snapshot: SessionSnapshot) { stored.withLock { $0[snapshot.sessionID] = snapshot } }
    func take(_ userID: String) -> SessionSnapshot? { stored.withLock { $0.removeValue(forKey: userID) } }
}

/// Keeps Docs/Embedding.md honest: every Swift snippet in it appears in this file (modulo indentation),
/// and this file compiles and runs them.
struct EmbeddingGuideTests {
    @Test func everySnippetOfTheGuideIsCompiledHere() throws {
        let source = try String(contentsOfFile: #filePath, encoding: .utf8)
        let guide = try String(
            contentsOfFile: TestContainers.packageRoot.appendingPathComponent("Docs/Embedding.md").path,
            encoding: .utf8
        )
        func normalized(_ line: Substring) -> String {
            line.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
        }
        let sourceLines = Set(source.split(separator: "\n").map(normalized))
        var inSwift = false
        var checked = 0
        for line in guide.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") {
                inSwift = line == "```swift"
                continue
            }
            let trimmed = normalized(line)
            guard inSwift, !trimmed.isEmpty else { continue }
            #expect(sourceLines.contains(trimmed), "this test lacks the guide's line: \(trimmed)")
            checked += 1
        }
        #expect(checked > 20)
    }

    /// The consent snippet: a regional default blocks a tag that needs `ad_storage`; the update lets it fire.
    @Test func theConsentSnippetRuns() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(
            try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags:
                    #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "ads", "consent": ["list", "ad_storage"]}]"#,
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "purchase"}]"#,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
        )
        manager.register(tagHandler: RecordingHandler(), for: "ads")
        var context = ClientContext(platform: "web")
        context.region = "ES-MD"  // ISO 3166-2; the country, ES, follows
        let visitor = manager.makeDataLayer(context: context)
        visitor.push(
            try ConsentCommand(gtagArguments: ["consent", "default", ["ad_storage": "denied", "region": ["ES"]]])
        )
        let before = visitor.push(event: "purchase")  // a tag needing ad_storage: .blockedByConsent(["ad_storage"])
        visitor.push(ConsentCommand(kind: .update, settings: [.init(type: "ad_storage", value: "granted")]))
        let after = visitor.push(event: "purchase")  // fires
        let state = visitor.consent  // ConsentState: per type, the default (with its region) and the update
        #expect(context.country == "ES")
        #expect(before.fired.first?.status == .blockedByConsent(["ad_storage"]))
        #expect(after.fired.first?.status == .ok)
        #expect(
            state.entry("ad_storage")
                == ConsentState.Entry(type: "ad_storage", region: "ES", defaultGranted: false, updateGranted: true)
        )
    }

    /// The trace snippet: a push asked for a trace explains why a tag did not fire.
    @Test func theTraceSnippetRuns() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try await ContainerLoader().load(path: TestContainers.bundled("GTM-MUSIC01.json")))
        let sessions = SessionStore(tagManager: manager)
        let traced = try await sessions.push(event: "played song", for: "user-42", tracing: true)
        var reasons: [String] = []
        for tag in traced.trace?.tags ?? [] where tag.outcome == .notFired {
            // … {{Event Name}} equals "purchase" (value: "played song") was false
            print(tag.name ?? "", tag.reason ?? "")
            reasons.append(tag.reason ?? "")
        }
        let line = traced.trace?.json()  // one JSON object, keys sorted: what a debug page sends
        #expect(reasons.contains(#"rule 3: {{Event Name}} equals "purchase" (value: "played song") was false"#))
        #expect(try PushTrace(json: try #require(line)).sessionID == traced.trace?.sessionID)
        #expect(try await sessions.push(event: "played song", for: "user-42").trace == nil)
    }

    /// The queue's log as the persistence, with the sessions of an earlier version's files imported first:
    /// user-42 continues from their old session, and the push's state survives a restart of the queue.
    @Test func thePersistenceSnippetRuns() async throws {
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .warning))
        manager.add(try await ContainerLoader().load(path: "Containers/GTM-MUSIC01.json"))
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("guide-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let queueDirectory = root + "/queue"
        let oldSessionsDirectory = root + "/sessions"
        let earlier = StoredSession(
            snapshot: SessionSnapshot(sessionID: "user-42", model: ["genre": "rock"], eventNumber: 3),
            version: 5
        )
        try LegacySessionFileWriter.write(
            [LegacySessionFileWriter.line(for: earlier, time: 1_795_000_000)],
            segment: 1,
            in: oldSessionsDirectory
        )
        let braze = InMemoryAnalyticsSink()
        // Records and sessions: one log.
        let queue = try DeliveryPipeline.durable(directory: queueDirectory, destination: braze)
        BrazeTagProvider(sink: CommitSink()).register(on: manager)
        let durable = SessionStore(
            tagManager: manager,
            configuration: .init(persistence: queue.sessions, committer: RecordCommitter(queue, keepsSessions: true))
        )
        let old = try LegacySessionFiles.read(directory: oldSessionsDirectory)  // once, before queue.run()
        try queue.importSessions(old.storedSessions)  // as snapshots, written and synced in one commit
        let running = Task { try await queue.run() }
        // Beside the server: queue.run() and durable.run() (evicts idle sessions, saves what is left when cancelled).
        // Per request: load on a miss, push, commit its records and the session's change in one append.
        let played = try await durable.push(event: "played song", parameters: ["genre": "jazz"], for: "user-42")
        #expect(played.refusal == nil)
        // The imported session went on: its fourth event, its genre replaced.
        let state = try #require(durable.existingSession(for: "user-42")).snapshot()
        #expect(state.eventNumber == 4 && state.model["genre"] == "jazz")
        running.cancel()
        try await running.value
        // Another process: the queue opened again loads the pushed state.
        let reopened = try DeliveryPipeline.durable(directory: queueDirectory, destination: braze)
        let stored = try #require(try await reopened.sessions.load(userID: "user-42"))
        #expect(stored.snapshot == state && stored.version > earlier.version)
    }

    @Test func theOnePushOneCommitSnippetRuns() async throws {
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .warning))
        manager.add(try await ContainerLoader().load(path: "Containers/GTM-MUSIC01.json"))
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("guide-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: root) }
        let queueDirectory = root + "/queue"
        let persistence = InMemorySessionPersistence()
        let braze = InMemoryAnalyticsSink()
        // Its run() runs beside the server.
        let queue = try DeliveryPipeline.durable(directory: queueDirectory, destination: braze)
        BrazeTagProvider(sink: CommitSink()).register(on: manager)
        let committing = SessionStore(
            tagManager: manager,
            configuration: .init(persistence: persistence, committer: RecordCommitter(queue))
        )
        let running = Task { try await queue.run() }
        // Per request: load on a miss, push, commit the push's records in one append, wait until durable.
        let result = try await committing.push(event: "played song", parameters: ["duration": 545], for: "user-42")
        #expect(!result.fired.isEmpty)
        running.cancel()
        try await running.value
    }

    /// A retried push with the same event ID is answered as a duplicate, not applied again.
    @Test func theEventIDSnippetRuns() async throws {
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .warning))
        manager.add(try await ContainerLoader().load(path: "Containers/GTM-MUSIC01.json"))
        let braze = InMemoryAnalyticsSink()
        let queue = DeliveryPipeline.inMemory(destination: braze)
        BrazeTagProvider(sink: CommitSink()).register(on: manager)
        let committing = SessionStore(tagManager: manager, configuration: .init(committer: RecordCommitter(queue)))
        let running = Task { try await queue.run() }
        let song: ValueMap = ["genre": "jazz", "duration": 545]
        let first = try await committing.push(event: "played song", parameters: song, for: "user-42", eventID: "m-17")
        let retry = try await committing.push(event: "played song", parameters: song, for: "user-42", eventID: "m-17")
        let original = retry.duplicateOf  // retry.isDuplicate: nothing merged, fired or recorded again
        #expect(!first.isDuplicate)
        #expect(!first.fired.isEmpty)
        #expect(retry.isDuplicate && retry.fired.isEmpty)
        #expect(original?.fired.map(\.tagID) == first.fired.map(\.tagID))
        #expect(committing.existingSession(for: "user-42")?.snapshot().eventNumber == 1)
        running.cancel()
        try await running.value
    }

    /// A push that says when its event happened: the Braze records carry that time.
    @Test func theEventTimeSnippetRuns() async throws {
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .warning))
        manager.add(try await ContainerLoader().load(path: "Containers/GTM-MUSIC01.json"))
        let braze = InMemoryAnalyticsSink()
        BrazeTagProvider(sink: braze, configuration: .init(sessionIDIsExternalID: true)).register(on: manager)
        let committing = SessionStore(tagManager: manager)
        let song: ValueMap = ["genre": "jazz", "duration": 545]
        let happened = Date(timeIntervalSince1970: 1_793_520_000)  // from the client
        try await committing.push(
            event: "played song",
            parameters: song,
            for: "user-42",
            eventID: "m-18",
            eventTime: happened
        )
        #expect(!braze.records.isEmpty && braze.records.allSatisfy { $0.time == happened })
        try await committing.push(event: "played song", parameters: song, for: "user-43")
        #expect(braze.records.last?.time != happened)
    }

    /// A session without a Braze user: its Braze tags are pending, and the login releases what they held.
    @Test func thePendingRecordsSnippetRuns() async throws {
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .error))
        manager.add(try await ContainerLoader().load(path: "Containers/GTM-MUSIC01.json"))
        let braze = InMemoryAnalyticsSink()
        let provider = BrazeTagProvider(
            sink: braze,
            configuration: .init(maximumPendingRecords: 100, maximumPendingAge: .seconds(24 * 60 * 60))
        )
        provider.register(on: manager)  // the tag handler, and the push hook that releases held records
        let device = manager.makeDataLayer(sessionID: "device-9")  // no Braze user yet
        let before = await device.push(event: "played song", parameters: ["genre": "jazz", "duration": 545])
        let held = BrazeTagProvider.pendingRecords(of: device)  // before.fired[0].status.name == "pending"
        #expect(before.fired[0].status.name == "pending" && held.count == 1 && braze.records.isEmpty)
        let login = await device.push(event: "login", parameters: ["user_id": "user-42"])  // a changeUser tag
        let released = login.hookOutputs.flatMap(\.records)  // the held record, for user-42, at its original time
        let record = try #require(released.first as? AnalyticsRecord)
        #expect(record.user == .externalID("user-42") && record.time == held[0].time && record.id == held[0].id)
        #expect(braze.records.map(\.kind) == [.changeUser, .customEvent])
    }

    @Test func theGuidesCodeRuns() async throws {
        // Setting up
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .warning))
        manager.register(
            tagHandler: ClosureTagHandler { call in print(call.name, call.arguments) },
            for: "com.appboy.googletagmanager.BrazeGtmTagProvider"
        )
        manager.register(macroHandler: ClosureMacroHandler { _ in .string("variant-b") }, for: "com.example.Experiment")
        manager.add(try await ContainerLoader().load(path: "Containers/GTM-MUSIC01.json"))
        let sessions = SessionStore(
            tagManager: manager,
            configuration: SessionStore.Configuration(idleTimeout: .seconds(30 * 60), maximumSessions: 100_000)
        )

        // Per request
        let session = sessions.session(
            for: "user-42",
            context: ClientContext(
                platform: "Android",
                language: "de",
                appID: "com.example.music",
                appVersionName: "4.2"
            )
        )
        let result = await session.push(event: "played song", parameters: ["genre": "jazz", "duration": 545])
        for tag in result.fired where tag.status != .ok {
            print("tag \(tag.tagID ?? -1): \(tag.status.name) \(tag.status.message ?? "")")
        }
        let answer = JSONWriter.string(result.jsonValue)  // {"fired": [...], "records": [...]}
        #expect(answer.hasPrefix(#"{"fired":[{"tag_id":1"#))

        // Durability
        let pushed = await session.push(event: "purchase", parameters: ["revenue": 9.99])
        try await pushed.waitUntilDurable()  // returns once this push's records are written and synced

        // Restarts
        let saved = try sessions.save(to: "/tmp/containerkit-sessions.jsonl")  // at shutdown, atomically
        let restarted = SessionStore(tagManager: manager)
        let restored = try restarted.restore(from: "/tmp/containerkit-sessions.jsonl")  // at start
        let snapshot = session.snapshot()  // one session, as a value
        let text = snapshot.jsonText  // or JSONEncoder().encode(snapshot)
        let continued = manager.restoreDataLayer(from: try SessionSnapshot(jsonText: text))
        #expect(saved == 1 && restored == 1 && continued.snapshot() == snapshot)
        try? FileManager.default.removeItem(atPath: "/tmp/containerkit-sessions.jsonl")

        // Across instances
        let shared = SharedSnapshots()  // the host's own store: a dictionary here, Redis in production
        shared.put(SessionSnapshot(sessionID: "user-7", model: ["genre": "jazz"], eventNumber: 3))
        if sessions.existingSession(for: "user-7") == nil, let stored = shared.take("user-7") {
            sessions.restore([stored])
        }
        let user7 = sessions.session(for: "user-7")
        #expect(user7.model["genre"] == "jazz" && user7.snapshot().eventNumber == 3)

        // Typed getters
        let welcome = manager.containers.first?.string(forKey: "welcome_message") ?? ""  // "" when missing
        let skips = session.int64(forKey: "max_skips_per_hour")  // evaluated for this user's data layer
        #expect(welcome == "Welcome to the music app")
        #expect(skips == 6)
    }
}
