import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// Sessions in the durable queue's segment log: one log engine for records, session deltas and snapshots
/// (``DeliveryPipeline/sessions``). Each push's records and its session delta are one append; a restart loads
/// every session from its last snapshot and the deltas after it.
@Suite struct DurableQueueSessionTests {
    /// A queue on a directory that a test can restart (close and open again) while persistences handed out
    /// before keep working: they reach whichever queue is open now.
    final class RestartableQueue: Sendable {
        let directory: String
        let destination: ScriptedDownstream
        let configuration: DeliverySettings
        let storage: SegmentRecordStore.Options
        private let current = Mutex<(queue: DeliveryPipeline<SegmentRecordStore>, task: Task<Void, any Error>)?>(nil)

        init(directory: String, maximumSegmentBytes: Int = 8 << 20) {
            self.directory = directory
            destination = ScriptedDownstream()
            configuration = DeliverySettings(logger: InMemoryLogger())
            var storage = SegmentRecordStore.Options()
            storage.maximumSegmentBytes = maximumSegmentBytes
            self.storage = storage
        }

        /// The open queue, running (opened and started on first use).
        var queue: DeliveryPipeline<SegmentRecordStore> {
            get throws {
                try current.withLock { current in
                    if let current { return current.queue }
                    let queue = try DeliveryPipeline.durable(
                        directory: directory,
                        destination: destination,
                        settings: configuration,
                        storage: storage
                    )
                    current = (queue, Task { try await queue.run() })
                    return queue
                }
            }
        }

        /// Stops the queue (cancelled: what is committed stays on disk) and waits until its directory is free.
        func stop() async {
            guard
                let running = current.withLock({ current in
                    defer { current = nil }; return current
                })
            else {
                return
            }
            running.task.cancel()
            _ = try? await running.task.value
        }

        /// A restart: the next use opens the directory again and reads what the log holds.
        func restart() async throws -> DeliveryPipeline<SegmentRecordStore> {
            await stop()
            return try queue
        }

        /// The sessions of whichever queue is open.
        var sessions: Forwarding { Forwarding(owner: self) }

        struct Forwarding: SessionPersistence {
            let owner: RestartableQueue
            func load(userID: String) async throws(ContainerError) -> StoredSession? {
                try await persistence().load(userID: userID)
            }
            func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult {
                try await persistence().save(changes)
            }
            func endedVersion(userID: String) async throws(ContainerError) -> Int64 {
                try await persistence().endedVersion(userID: userID)
            }
            private func persistence() throws(ContainerError) -> SegmentLogSessions {
                do {
                    return try owner.queue.sessions
                } catch {
                    throw ContainerError(.io, "cannot open the queue: \(error)")
                }
            }
        }
    }

    static func manager() async throws -> TagManager {
        let manager = TagManager(logger: InMemoryLogger())
        BrazeTagProvider(sink: CommitSink()).register(on: manager)
        manager.add(
            try await ContainerLoader().load(
                path: Fixtures.packageRoot.appendingPathComponent("Containers/GTM-MUSIC01.json").path
            )
        )
        return manager
    }

    static func store(_ queue: DeliveryPipeline<SegmentRecordStore>, manager: TagManager, snapshotInterval: Int = 16)
        -> SessionStore
    {
        var configuration = SessionStore.Configuration(
            persistence: queue.sessions,
            committer: RecordCommitter(queue, keepsSessions: true)
        )
        configuration.snapshotInterval = snapshotInterval
        return SessionStore(tagManager: manager, configuration: configuration)
    }

    static func nameUser(_ session: DataLayer) {
        if BrazeTagProvider.user(of: session) == nil {
            BrazeTagProvider.setUser(.externalID(session.sessionID), on: session)
        }
    }

    /// The `n`th push of a test's stream: its user, and parameters that set top-level, nested and array keys.
    static func push(_ n: Int, users: Int) -> SessionStore.PushRequest {
        let genres = ["jazz", "rock", "pop"]
        var parameters: ValueMap = [
            "n": .int(Int64(n)), "genre": .string(genres[n % 3]), "duration": .int(Int64(100 + n)),
            "item": ["id": .int(Int64(n)), "tags": .array([.string("t\(n % 4)")])],
        ]
        if n % 5 == 0 { parameters["gtm.userProperties"] = ["tier": .int(Int64(n % 3))] }
        return SessionStore.PushRequest(
            event: n % 4 == 0 ? "login" : "played song",
            parameters: parameters,
            userID: "user-\(n % users)"
        )
    }

    @Test func theContractHoldsForTheSegmentLog() async throws {
        let directory = TemporaryDirectory("sessions-contract")
        defer { directory.remove() }
        let restartable = RestartableQueue(directory: directory.path)
        defer { Task { await restartable.stop() } }
        try await SessionPersistenceConformance(
            make: { restartable.sessions },
            reopen: {
                _ = try await restartable.restart()
                return restartable.sessions
            }
        ).checkAll()
        await restartable.stop()
    }

    /// More pushes than the snapshot interval for several users: the log holds a snapshot and deltas per user,
    /// the records are delivered, and after a restart every session loads equal to the live one.
    @Test func sessionsSurviveARestartAsSnapshotsAndDeltas() async throws {
        let directory = TemporaryDirectory("sessions-restart")
        defer { directory.remove() }
        let restartable = RestartableQueue(directory: directory.path)
        let manager = try await Self.manager()
        let queue = try restartable.queue
        let sessions = Self.store(queue, manager: manager, snapshotInterval: 8)
        for n in 0..<60 {
            let request = Self.push(n, users: 3)
            try await sessions.push(
                event: request.event,
                parameters: request.parameters,
                for: request.userID,
                prepare: Self.nameUser
            )
        }
        let live = (0..<3).map { sessions.existingSession(for: "user-\($0)")!.snapshot() }
        let statistics = queue.statistics
        #expect(statistics.fencedAppends == 0)
        let restarted = try await restartable.restart()
        let again = Self.store(restarted, manager: try await Self.manager())
        for (index, expected) in live.enumerated() {
            let loaded = try await restarted.sessions.load(userID: "user-\(index)")
            #expect(loaded?.version == 20, "one version per push")
            #expect(loaded.map { $0.deltas < 8 } == true, "a snapshot every 8 commits: the chain stays short")
            #expect(loaded?.snapshot.jsonText == expected.jsonText, "user-\(index) loads as it was")
            let session = try await again.loadSession(for: "user-\(index)")
            #expect(session.snapshot().jsonText == expected.jsonText)
        }
        // The next push continues on the loaded state, and its delta is accepted.
        try await again.push(event: "played song", parameters: ["genre": "jazz", "duration": 9], for: "user-1")
        #expect(try await restarted.sessions.load(userID: "user-1")?.version == 21)
        await restartable.stop()
    }

    /// A push on a stale copy of a session (another store committed a newer version meanwhile) is refused by the
    /// log's fence, and the session store pushes it again on the newest state: nothing is lost or doubled.
    @Test func aStaleCopysDeltaIsFencedAndPushedAgainOnTheNewestState() async throws {
        let directory = TemporaryDirectory("sessions-fence")
        defer { directory.remove() }
        let restartable = RestartableQueue(directory: directory.path)
        let queue = try restartable.queue
        let first = Self.store(queue, manager: try await Self.manager())
        let second = Self.store(queue, manager: try await Self.manager())
        try await first.push(event: "login", parameters: ["a": 1], for: "ada", prepare: Self.nameUser)
        _ = try await second.loadSession(for: "ada")
        try await first.push(event: "played song", parameters: ["b": 2], for: "ada")
        // `second` holds version 1; the log holds 2.
        try await second.push(event: "played song", parameters: ["c": 3], for: "ada")
        #expect(queue.statistics.fencedAppends == 1)
        let loaded = try #require(try await queue.sessions.load(userID: "ada"))
        #expect(loaded.version == 3)
        #expect(loaded.snapshot.model["a"] == 1 && loaded.snapshot.model["b"] == 2 && loaded.snapshot.model["c"] == 3)
        #expect(loaded.snapshot.eventNumber == 3)
        await restartable.stop()
    }

    /// A delta line whose bytes changed on disk: the session loads what precedes it, the line is counted, and
    /// the session's next commit is a whole snapshot that the log accepts (fenced at the newest version).
    @Test func aCorruptDeltaLoadsWhatPrecedesItAndTheNextCommitIsASnapshot() async throws {
        let directory = TemporaryDirectory("sessions-corrupt")
        defer { directory.remove() }
        let restartable = RestartableQueue(directory: directory.path)
        let queue = try restartable.queue
        let sessions = Self.store(queue, manager: try await Self.manager())
        for (n, genre) in ["jazz", "rock", "pop"].enumerated() {
            try await sessions.push(
                event: "played song",
                parameters: ["genre": .string(genre), "n": .int(Int64(n))],
                for: "bea",
                prepare: Self.nameUser
            )
        }
        await restartable.stop()
        // Change one byte of the first delta (version 2, the line with "rock"): its checksum no longer matches, the
        // log cannot tell whose line it was, and bea's chain has a gap between versions 1 and 3.
        let segment = try #require(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("segment-") }
                .sorted().last
        )
        let path = directory.file(segment)
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let marker = Array(#""genre":"rock""#.utf8)
        let at = try #require(
            (0...(bytes.count - marker.count)).last { bytes[$0..<($0 + marker.count)].elementsEqual(marker) }
        )
        bytes[at + 9] = UInt8(ascii: "q")
        try Data(bytes).write(to: URL(fileURLWithPath: path))

        let reopened = try await restartable.restart()
        let loaded = try #require(try await reopened.sessions.load(userID: "bea"))
        #expect(loaded.snapshot.model["genre"] == "jazz", "what precedes the gap")
        #expect(loaded.version == 3, "fenced at the newest version the log holds")
        #expect(loaded.deltas == .max, "the next commit must be a snapshot")
        #expect(reopened.statistics.unappliedSessionLines >= 1)
        let again = Self.store(reopened, manager: try await Self.manager())
        try await again.push(event: "played song", parameters: ["genre": "soul"], for: "bea")
        let next = try #require(try await reopened.sessions.load(userID: "bea"))
        #expect(next.version == 4 && next.deltas == 0, "a snapshot replaced the unreadable chain")
        #expect(next.snapshot.model["genre"] == "soul")
        await restartable.stop()
    }

    /// Small segments: delivered segments are kept only while they hold lines a load reads, and the oldest of
    /// them is compacted (its sessions folded into snapshots at the head), so the log stays bounded while the
    /// sessions stay whole.
    @Test func compactionKeepsTheLogBoundedAndTheSessionsWhole() async throws {
        let directory = TemporaryDirectory("sessions-compaction")
        defer { directory.remove() }
        let restartable = RestartableQueue(directory: directory.path, maximumSegmentBytes: 4096)
        let queue = try restartable.queue
        let sessions = Self.store(queue, manager: try await Self.manager(), snapshotInterval: 1000)
        // Users 0–9 push once and go quiet (their only lines are in the first segments); user 10 keeps pushing.
        for n in 0..<10 {
            try await sessions.push(
                event: "login",
                parameters: ["n": .int(Int64(n))],
                for: "quiet-\(n)",
                prepare: Self.nameUser
            )
        }
        for n in 0..<200 {
            try await sessions.push(
                event: "played song",
                parameters: ["genre": "jazz", "duration": 545, "n": .int(Int64(n))],
                for: "busy",
                prepare: Self.nameUser
            )
        }
        try await queue.flush()
        try await queue.settleSessionCompactions()
        let statistics = queue.statistics
        #expect(statistics.sessionCompactions >= 10, "the quiet sessions were folded forward")
        #expect(statistics.segmentCount <= 8, "\(statistics.segmentCount) segments kept")
        for n in 0..<10 {
            let loaded = try #require(try await queue.sessions.load(userID: "quiet-\(n)"))
            #expect(loaded.snapshot.model["n"] == .int(Int64(n)))
        }
        let busy = try #require(try await restartable.restart().sessions.load(userID: "busy"))
        #expect(busy.snapshot.model["n"] == 199 && busy.version == 200)
        await restartable.stop()
    }
}
