import ContainerKit
import ContainerKitBraze
import Foundation
import Synchronization

/// `make count-locks`: how many times the package's mutexes are locked on the way of one event, in a build
/// that counts them (`-DCONTAINERKIT_COUNT_LOCKS`; a stock build prints a notice). In two phases, so that the
/// two figures do not mix:
///
/// - `locks_per_durable_push`: one event pushed into a session of the corpus Braze container (GTM-5HM9ZRX,
///   else the bundled fixture), through ``BrazeTagProvider`` into a ``DurableQueue``, until its records are
///   durable (`PushResult.waitUntilDurable()`: what a service answers after); events one at a time, each its
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
            let queue = try DurableQueue(directory: directory, destination: destination)
            let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .error))
            manager.add(try await ContainerLoader().load(path: path))
            BrazeTagProvider(sink: queue).register(on: manager)
            let session = manager.makeDataLayer()
            BrazeTagProvider.setUser(.brazeID("bench-device"), on: session)
            let events = 1_000
            var pushLocks = 0
            var batchLocks = 0
            try await BrazeBench.running(queue) {
                // Warm-up: the first batch goes out and is held; every later push waits for its commit alone.
                try await session.push(event: "logEvent", parameters: ["eventName": "warm-up"]).waitUntilDurable()
                await destination.held()
                let start = containerKitLockCount.load(ordering: .relaxed)
                for i in 0..<events {
                    let result = await session.push(
                        event: "logEvent",
                        parameters: ["eventName": .string("played song \(i % 10)"), "intParam": .int(Int64(i))]
                    )
                    try await result.waitUntilDurable()
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

/// A destination that takes no lock of the package (its own are the standard library's, not counted): it
/// holds its first delivery until ``release()``, then accepts everything.
private final class HeldDestination: AnalyticsDestination {
    let preferredBatchSize: Int
    private let released = Atomic<Bool>(false)
    private let delivered = Atomic<Int>(0)
    /// The held delivery's continuation, and the waiter of ``held()``.
    private let waiting = Synchronization.Mutex<
        (delivery: CheckedContinuation<Void, Never>?, heldWaiter: CheckedContinuation<Void, Never>?, isHeld: Bool)
    >((nil, nil, false))

    init(batchSize: Int) { preferredBatchSize = batchSize }

    /// Batches delivered so far.
    var batches: Int { delivered.load(ordering: .relaxed) }

    /// Returns once the first delivery is being held.
    func held() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = waiting.withLock { state -> Bool in
                if state.isHeld { return true }
                state.heldWaiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Answers the held delivery; later ones are answered at once.
    func release() {
        released.store(true, ordering: .releasing)
        waiting.withLock { state in
            defer { state.delivery = nil }
            return state.delivery
        }?.resume()
    }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        if !released.load(ordering: .acquiring) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiter = waiting.withLock { state -> CheckedContinuation<Void, Never>? in
                    state.delivery = continuation
                    state.isHeld = true
                    defer { state.heldWaiter = nil }
                    return state.heldWaiter
                }
                waiter?.resume()
            }
        }
        delivered.add(1, ordering: .relaxed)
        return .accepted(records)
    }
}
