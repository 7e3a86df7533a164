import ContainerKit
import Synchronization

/// A `Clock` whose time moves only when told to: tests advance it by 12 hours in an instant, and wait (without
/// polling) until the code under test is asleep on it.
///
/// Inject it wherever ContainerKit takes a clock (`LifecycleConfiguration`, `SessionStore`, the
/// delivery queues of `ContainerKitBraze`). A sleeper wakes when ``advance(by:)`` reaches its deadline, or
/// with `CancellationError` when its task is cancelled (at once if it already was).
///
/// A clock made with `autoAdvance` lets short sleeps (retry back-offs, lingers) pass at once: the clock moves
/// to their deadline and records their length in ``autoAdvancedSleeps``, so a test of a retrying loop needs
/// neither real time nor a step for each retry; longer sleeps (intervals, deadlines) still wait for
/// ``advance(by:)``.
///
/// ```swift
/// let clock = ManualClock()
/// let manager = TagManager(lifecycle: LifecycleConfiguration(network: source, clock: clock))
/// let opening = Task { try await manager.open(id: "GTM-XXXX") }
/// await clock.waitForSleepers(1)  // the open's 2-second timeout is asleep
/// clock.advance(by: .seconds(2))  // ... and times out now
/// ```
public final class ManualClock: Clock, Sendable {
    /// A point in time of a ``ManualClock``: the time elapsed since the clock was made.
    public struct Instant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
        /// The time elapsed since the clock was made.
        public var offset: Duration

        /// Creates the instant `offset` after the clock was made.
        public init(offset: Duration) { self.offset = offset }

        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The time from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Whether `lhs` comes before `rhs`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        /// `+` and the offset, for test messages.
        public var description: String { "+\(offset)" }
    }

    private struct Sleeper {
        var deadline: Instant
        var continuation: CheckedContinuation<Bool, any Error>
    }

    private struct Watcher {
        var count: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        var watchers: [Int: Watcher] = [:]

        /// Removes the watchers whose count of sleepers is reached.
        mutating func takeReadyWatchers() -> [CheckedContinuation<Void, Never>] {
            let ready = watchers.filter { $0.value.count <= sleepers.count }
            for id in ready.keys { watchers.removeValue(forKey: id) }
            return ready.values.map(\.continuation)
        }

        /// Moves the time to `instant` (never back); removes and returns the sleepers due by then, earliest
        /// first.
        mutating func moveTime(to instant: Instant) -> [Sleeper] {
            now = max(now, instant)
            let due = sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { sleepers.removeValue(forKey: id) }
            return due.values.sorted { $0.deadline < $1.deadline }
        }

        mutating func makeID() -> Int {
            defer { nextID += 1 }
            return nextID
        }
    }

    private let state = Mutex(State())
    private let autoAdvanceLimit: Duration?
    private let autoAdvanced = AwaitableState<[Duration]>([])

    /// Creates a clock that reads ``Instant/offset`` zero until it is advanced.
    ///
    /// - Parameter autoAdvance: sleeps of at most this long pass at once, moving the clock to their deadline
    ///   (which wakes every other sleeper due by then); `nil`, the default: every sleep waits for
    ///   ``advance(by:)``.
    public init(autoAdvance: Duration? = nil) { autoAdvanceLimit = autoAdvance }

    /// The length of every sleep that passed at once (see `init(autoAdvance:)`), in order.
    public var autoAdvancedSleeps: [Duration] { autoAdvanced.value }

    /// Returns once at least `count` sleeps passed at once (see `init(autoAdvance:)`), or when the calling
    /// task is cancelled.
    public func waitForAutoAdvancedSleeps(_ count: Int) async {
        await autoAdvanced.wait { $0.count >= count }
    }

    /// The current time.
    public var now: Instant { state.withLock { $0.now } }

    /// One nanosecond.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// How many tasks are asleep on the clock.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The deadlines tasks are asleep until, earliest first.
    public var pendingDeadlines: [Instant] { state.withLock { $0.sleepers.values.map(\.deadline).sorted() } }

    /// Returns at `deadline` (once ``advance(by:)`` reaches it); throws `CancellationError` when the task is
    /// cancelled, before or during the sleep. `tolerance` is ignored.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { $0.makeID() }
        let skipped = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Bool, any Error>) in
                enum Outcome { case due, skipped(Duration, [Sleeper]), asleep([CheckedContinuation<Void, Never>]) }
                let outcome = state.withLock { state -> Outcome in
                    if Task.isCancelled || deadline <= state.now { return .due }
                    let delay = state.now.duration(to: deadline)
                    if let limit = autoAdvanceLimit, delay <= limit {
                        return .skipped(delay, state.moveTime(to: deadline))
                    }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return .asleep(state.takeReadyWatchers())
                }
                switch outcome {
                case .due:
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        continuation.resume(returning: false)
                    }
                case .skipped(let delay, let due):
                    autoAdvanced.update { $0.append(delay) }
                    for sleeper in due { sleeper.continuation.resume(returning: false) }
                    continuation.resume(returning: true)
                case .asleep(let watchers):
                    for watcher in watchers { watcher.resume() }
                }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
        // A loop that retries at once on a skipped sleep still lets other tasks run between its turns.
        if skipped { await Task.yield() }
    }

    /// Moves the time forward by `duration` and wakes every sleeper whose deadline has come, earliest first.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    /// Moves the time forward to `instant` (never back) and wakes every sleeper whose deadline has come,
    /// earliest first.
    public func advance(to instant: Instant) {
        let due = state.withLock { $0.moveTime(to: instant) }
        for sleeper in due { sleeper.continuation.resume(returning: false) }
    }

    /// Returns once at least `count` tasks are asleep on the clock (at once if they are), without polling;
    /// returns early when the calling task is cancelled. Tests call it before ``advance(by:)`` so that the
    /// code under test has reached its sleep.
    public func waitForSleepers(_ count: Int = 1) async {
        let id = state.withLock { $0.makeID() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.sleepers.count >= count || Task.isCancelled { return true }
                    state.watchers[id] = Watcher(count: count, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.watchers.removeValue(forKey: id) }?.continuation.resume()
        }
    }
}
