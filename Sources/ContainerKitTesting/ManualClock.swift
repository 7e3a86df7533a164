import Synchronization

/// A `Clock` whose time moves only when told to: tests advance it by 12 hours in an instant, and wait (without
/// polling) until the code under test is asleep on it.
///
/// Inject it wherever ContainerKit takes a clock (``LifecycleConfiguration``, ``SessionStore``, the
/// delivery queues of `ContainerKitBraze`). A sleeper wakes when ``advance(by:)`` reaches its deadline, or
/// with `CancellationError` when its task is cancelled (at once if it already was).
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
        var continuation: CheckedContinuation<Void, any Error>
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

        mutating func makeID() -> Int {
            defer { nextID += 1 }
            return nextID
        }
    }

    private let state = Mutex(State())

    /// Creates a clock that reads ``Instant/offset`` zero until it is advanced.
    public init() {}

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
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (due, watchers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if Task.isCancelled || deadline <= state.now { return (true, []) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return (false, state.takeReadyWatchers())
                }
                for watcher in watchers { watcher.resume() }
                guard due else { return }
                if Task.isCancelled {
                    continuation.resume(throwing: CancellationError())
                } else {
                    continuation.resume()
                }
            }
        } onCancel: {
            state.withLock { $0.sleepers.removeValue(forKey: id) }?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves the time forward by `duration` and wakes every sleeper whose deadline has come, earliest first.
    public func advance(by duration: Duration) {
        advance(to: now.advanced(by: duration))
    }

    /// Moves the time forward to `instant` (never back) and wakes every sleeper whose deadline has come,
    /// earliest first.
    public func advance(to instant: Instant) {
        let due = state.withLock { state -> [Sleeper] in
            state.now = max(state.now, instant)
            let now = state.now
            let due = state.sleepers.filter { $0.value.deadline <= now }
            for id in due.keys { state.sleepers.removeValue(forKey: id) }
            return due.values.sorted { $0.deadline < $1.deadline }
        }
        for sleeper in due { sleeper.continuation.resume() }
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
