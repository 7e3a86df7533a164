import ContainerKit
import ContainerKitBraze
import Foundation
import Synchronization

/// `make count-locks`: how many times the package's mutexes are locked on the way of one event, in a build
/// that counts them (`-DCONTAINERKIT_COUNT_LOCKS`; a stock build prints a notice). In two phases, so that the
/// two figures do not mix:
///
/// - `locks_per_durable_push`: one event pushed as TagService pushes it — `SessionStore.push(event:…for:)`, the
///   corpus Braze container (GTM-5HM9ZRX, else the bundled fixture), ``BrazeTagProvider`` into a `CommitSink`,
///   the push's records and session change appended to a durable ``DeliveryPipeline`` by a `RecordCommitter` — until they
///   are durable (what the service answers after); events one at a time, each its
///   own commit, while the delivery is held (the destination does not answer its first batch), so only the
///   push, the commit and the delivery loop's wake-ups count. The mean over the events.
/// - `locks_per_delivered_batch`: then the destination answers, and the queue delivers what the pushes left
///   (from memory), batch after batch, to a destination that takes no lock, until flushed; no push runs. The
///   locks of that phase over the batches delivered.
enum LockCountBench {
    static func run() async {
        #if CONTAINERKIT_COUNT_LOCKS
            do {
                try await measure()
            } catch {
                print("notice: lock count failed: \(error)")
            }
        #else
            print("notice: lock counts need a build with -DCONTAINERKIT_COUNT_LOCKS (make count-locks)")
        #endif
    }

    #if CONTAINERKIT_COUNT_LOCKS
        static func measure() async throws {
            let path =
                FileManager.default.fileExists(atPath: BrazeBench.corpusContainer)
                ? BrazeBench.corpusContainer : BrazeBench.fixtureContainer
            let directory = BrazeBench.temporaryDirectory("locks")
            defer { try? FileManager.default.removeItem(atPath: directory) }
            let destination = HeldDestination(batchSize: 50)
            let queue = try DeliveryPipeline.durable(directory: directory, destination: destination)
            // As TagService assembles it: the provider hands its records to the push's commit, which appends
            // them with the session's change to the queue's log in one append; a session's user is its user ID.
            let manager = try await BrazeBench.manager(
                loading: path,
                sink: CommitSink(),
                configuration: .init(sessionIDIsExternalID: true)
            )
            let sessions = SessionStore(
                tagManager: manager,
                configuration: .init(
                    persistence: queue.sessions,
                    committer: RecordCommitter(queue, keepsSessions: true)
                )
            )
            func push(_ parameters: ValueMap) async throws {
                // Returns once the push's commit is durable (its default `waitsForDurability`). The provider names
                // the Braze user as TagService's does (by the session's ID): without one it would make no record.
                _ = try await sessions.push(event: "logEvent", parameters: parameters, for: "user-1")
            }
            let events = 1_000
            var pushLocks = 0
            var batchLocks = 0
            try await BrazeBench.running(queue) {
                // Warm-up: the first batch goes out and is held; every later push waits for its commit alone.
                try await push(["eventName": "warm-up"])
                await destination.held()
                let start = containerKitLockCount.load(ordering: .relaxed)
                for i in 0..<events {
                    try await push(["eventName": .string("played song \(i % 10)"), "intParam": .int(Int64(i))])
                }
                pushLocks = containerKitLockCount.load(ordering: .relaxed) - start
                let delivering = containerKitLockCount.load(ordering: .relaxed)
                let before = destination.batches
                destination.release()
                try await queue.flush()
                batchLocks = containerKitLockCount.load(ordering: .relaxed) - delivering
                let batches = destination.batches - before
                print("lock_count_events=\(events) lock_count_batches=\(batches) batch=50")
                print("locks_per_durable_push=\(Harness.ratio(Double(pushLocks) / Double(events)))")
                print("locks_per_delivered_batch=\(Harness.ratio(Double(batchLocks) / Double(max(batches, 1))))")
            }
        }
    #endif
}

/// A destination that takes no lock of the package (its streams' are the standard library's, not counted): it
/// holds its first delivery until ``release()``, then accepts everything.
private final class HeldDestination: AnalyticsDestination {
    let preferredBatchSize: Int
    private let released = Atomic<Bool>(false)
    private let delivered = Atomic<Int>(0)
    /// Yields when a delivery is held.
    private let (holding, holds) = AsyncStream<Void>.makeStream()
    /// Finished by ``release()``.
    private let (gate, opener) = AsyncStream<Void>.makeStream()

    init(batchSize: Int) { preferredBatchSize = batchSize }

    /// Batches delivered so far.
    var batches: Int { delivered.load(ordering: .relaxed) }

    /// Returns once a delivery is being held.
    func held() async {
        for await _ in holding { return }
    }

    /// Answers the held delivery; later ones are answered at once.
    func release() {
        released.store(true, ordering: .releasing)
        opener.finish()
    }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        if !released.load(ordering: .acquiring) {
            holds.yield()
            for await _ in gate {}
        }
        delivered.add(1, ordering: .relaxed)
        return .accepted(records)
    }
}
