import ContainerKit
import ContainerKitBraze
import Foundation
import Synchronization

/// The session figures of `make bench` for a service whose sessions live in the durable queue's log (one
/// write per push: its records and its session delta in one append), measured in this process:
///
/// - `session_writes_per_push`: whole-session writes (snapshots) per push at steady state — the pushes of 256
///   users, 125 each, through a ``SessionStore`` committing with `RecordCommitter(queue, keepsSessions: true)`
///   (a snapshot every ``SessionStore/Configuration/snapshotInterval`` commits and at a session's first).
/// - `session_delta_bytes_per_push` and `session_snapshot_bytes`: the mean size of a delta and of a snapshot
///   as committed (JSON), and `session_delta_vs_snapshot_bytes` their ratio.
/// - `session_log_pushes_per_s`: pushes acknowledged durable per second with 64 users pushing at once,
///   `records_only_pushes_per_s` the same with sessions kept in memory only (records alone in the log), and
///   `session_log_vs_records_only` the median of each round's ratio: what keeping every session durable in
///   the same append costs. (A push whose tags make no record appends nothing and waits for nothing when
///   sessions stay in memory; `session_log_pushes_with_records` says how many of the stream's pushes make
///   records.)
enum SessionLogBench {
    /// Counts the checkpoints a committer commits, by kind and size.
    final class CountingCommitter: PushCommitter {
        let inner: RecordCommitter
        let counts = Mutex((snapshots: 0, deltas: 0, snapshotBytes: 0, deltaBytes: 0, withRecords: 0))
        init(_ inner: RecordCommitter) { self.inner = inner }
        var keepsSessions: Bool { inner.keepsSessions }

        func commit(_ result: PushResult, checkpoint: SessionCheckpoint?) -> Result<DurabilityToken?, DurabilityError> {
            if result.outputs.dropFirst(result.committedOutputs).contains(where: { !$0.records.isEmpty }) {
                counts.withLock { $0.withRecords += 1 }
            }
            if let checkpoint {
                let bytes = checkpoint.jsonText.utf8.count
                counts.withLock { counts in
                    if checkpoint.isDelta {
                        counts.deltas += 1
                        counts.deltaBytes += bytes
                    } else {
                        counts.snapshots += 1
                        counts.snapshotBytes += bytes
                    }
                }
            }
            return inner.commit(result, checkpoint: checkpoint)
        }
    }

    static func run() async {
        do {
            try await steadyState()
            try await throughput()
        } catch {
            print("notice: session log benchmark failed: \(error)")
        }
    }

    static func manager() async throws -> TagManager {
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .none))
        BrazeTagProvider(sink: CommitSink()).register(on: manager)
        let path =
            FileManager.default.fileExists(atPath: BrazeBench.corpusContainer)
            ? BrazeBench.corpusContainer : BrazeBench.fixtureContainer
        manager.add(try await ContainerLoader().load(path: path))
        return manager
    }

    static func queue(_ directory: String) throws -> DeliveryPipeline<SegmentRecordStore> {
        var configuration = DeliverySettings()
        configuration.logger = StandardErrorLogger(minimumLevel: .none)
        return try DeliveryPipeline.durable(
            directory: directory,
            destination: DiscardingDestination(),
            settings: configuration
        )
    }

    static func name(_ session: DataLayer) {
        if BrazeTagProvider.user(of: session) == nil {
            BrazeTagProvider.setUser(.externalID(session.sessionID), on: session)
        }
    }

    static func steadyState() async throws {
        let directory = BrazeBench.temporaryDirectory("session-log")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let queue = try queue(directory)
        let committer = CountingCommitter(RecordCommitter(queue, keepsSessions: true))
        let sessions = SessionStore(
            tagManager: try await manager(),
            configuration: .init(persistence: queue.sessions, committer: committer)
        )
        let events = EventStream.make(count: 32_000)
        let users = 256
        try await BrazeBench.running(queue) {
            // Each user's pushes in order, users interleaved; one batch per round of users shares a commit.
            for start in stride(from: 0, to: events.count, by: users) {
                let requests = (start..<min(start + users, events.count)).map { index in
                    SessionStore.PushRequest(
                        event: events[index].name,
                        parameters: events[index].parameters,
                        userID: "user-\(index % users)"
                    )
                }
                for outcome in await sessions.push(requests, prepare: name) { _ = try outcome.get() }
            }
        }
        let counts = committer.counts.withLock { $0 }
        let pushes = counts.snapshots + counts.deltas
        print(
            "session_log_users=\(users) session_log_pushes=\(pushes) session_snapshots=\(counts.snapshots) "
                + "session_log_pushes_with_records=\(counts.withRecords)"
        )
        print("session_writes_per_push=\(Harness.ratio(Double(counts.snapshots) / Double(max(1, pushes))))")
        let deltaBytes = Double(counts.deltaBytes) / Double(max(1, counts.deltas))
        let snapshotBytes = Double(counts.snapshotBytes) / Double(max(1, counts.snapshots))
        print("session_delta_bytes_per_push=\(Int(deltaBytes.rounded()))")
        print("session_snapshot_bytes=\(Int(snapshotBytes.rounded()))")
        print("session_delta_vs_snapshot_bytes=\(Harness.ratio(deltaBytes / max(1, snapshotBytes)))")
    }

    static func throughput() async throws {
        let events = EventStream.make(count: 6_400)
        var sessionRates: [Double] = []
        var recordRates: [Double] = []
        var shares: [Double] = []
        for _ in 0..<5 {
            let withSessions = try await pushRate(events, keepsSessions: true)
            let recordsOnly = try await pushRate(events, keepsSessions: false)
            sessionRates.append(withSessions)
            recordRates.append(recordsOnly)
            shares.append(withSessions / recordsOnly)
        }
        sessionRates.sort()
        recordRates.sort()
        shares.sort()
        print("session_log_pushes_per_s=\(Harness.format(sessionRates[2]))")
        print("records_only_pushes_per_s=\(Harness.format(recordRates[2]))")
        print("session_log_vs_records_only=\(Harness.ratio(shares[2]))")
    }

    /// Pushes acknowledged durable per second: 64 users, each pushing its share of `events` in order, at once.
    static func pushRate(_ events: [(name: String, parameters: ValueMap)], keepsSessions: Bool) async throws -> Double {
        let directory = BrazeBench.temporaryDirectory("session-rate")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let queue = try queue(directory)
        let sessions = SessionStore(
            tagManager: try await manager(),
            configuration: .init(
                persistence: keepsSessions ? queue.sessions : nil,
                committer: RecordCommitter(queue, keepsSessions: keepsSessions)
            )
        )
        let users = Int(ProcessInfo.processInfo.environment["CONTAINERKIT_BENCH_SESSION_USERS"] ?? "") ?? 64
        var elapsed: Duration = .zero
        try await BrazeBench.running(queue) {
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { group in
                for user in 0..<users {
                    group.addTask {
                        for index in stride(from: user, to: events.count, by: users) {
                            try await sessions.push(
                                event: events[index].name,
                                parameters: events[index].parameters,
                                for: "user-\(user)",
                                prepare: name
                            )
                        }
                    }
                }
                try await group.waitForAll()
            }
            elapsed = ContinuousClock.now - start
        }
        return Double(events.count)
            / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}

/// A destination that accepts everything at once.
struct DiscardingDestination: AnalyticsDestination {
    var preferredBatchSize: Int { 500 }
    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult { .accepted(records) }
}
