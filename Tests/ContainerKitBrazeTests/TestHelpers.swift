import ContainerKit
import ContainerKitBraze
import Foundation
import Synchronization

/// A fresh directory under the system's temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init(_ name: String = "queue") {
        path = NSTemporaryDirectory() + "containerkit-braze-\(name)-\(UUID().uuidString)"
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// Polls `condition` until it holds or `timeout` passes; for waiting on background work without timing
/// assertions (the deadline is generous, the condition is what is checked).
func eventually(timeout: Duration = .seconds(20), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
}

/// A destination that accepts or fails deliveries as a test tells it to.
final class ScriptedDownstream: AnalyticsDestination {
    enum Mode: Sendable { case confirm, fail }

    private struct State {
        var mode: Mode = .confirm
        var delivered: [AnalyticsRecord] = []
        var attempts = 0
    }

    private let state: Mutex<State>
    let preferredBatchSize: Int

    init(mode: Mode = .confirm, batchSize: Int = 500) {
        state = Mutex(State(mode: mode))
        preferredBatchSize = batchSize
    }

    var mode: Mode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    var delivered: [AnalyticsRecord] { state.withLock { $0.delivered } }
    var attempts: Int { state.withLock { $0.attempts } }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        state.withLock { state in
            state.attempts += 1
            if state.mode == .fail {
                return .retry(records, DeliveryError(.serverError, "scripted downstream failure", status: 503))
            }
            state.delivered.append(contentsOf: records)
            return .accepted(records)
        }
    }
}

/// A clock whose short sleeps (at most `instantLimit`) are recorded and pass at once (after a real
/// millisecond, so a retrying loop cannot spin); longer ones (deadlines, flush intervals) wait for real,
/// which in a test means until they are cancelled.
final class RecordingClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
    }

    private let state = Mutex<(now: Duration, delays: [Duration])>((.zero, []))
    let instantLimit: Duration

    init(instantLimit: Duration = .seconds(600)) { self.instantLimit = instantLimit }

    var now: Instant { Instant(offset: state.withLock { $0.now }) }
    var minimumResolution: Duration { .nanoseconds(1) }
    /// Every short sleep, in order.
    var delays: [Duration] { state.withLock { $0.delays } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let delay = deadline.offset - state.withLock { $0.now }
        guard delay <= instantLimit else {
            try await Task.sleep(for: delay)
            return
        }
        try Task.checkCancellation()
        state.withLock {
            $0.delays.append(delay)
            $0.now += max(delay, .zero)
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// A clock that moves only when the test says so: sleepers wait until ``advance(by:)`` passes their
/// deadline; ``waitForSleepers(_:)`` waits (without polling) until that many are asleep.
final class ManualClock: Clock, Sendable {
    typealias Instant = RecordingClock.Instant

    private struct Sleeper {
        var id: Int
        var deadline: Duration
        var continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now: Duration = .zero
        var next = 0
        var sleepers: [Sleeper] = []
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let state = Mutex(State())

    var now: Instant { Instant(offset: state.withLock { $0.now }) }
    var minimumResolution: Duration { .nanoseconds(1) }

    /// How many tasks are asleep on the clock.
    var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        let id = state.withLock { state -> Int in
            state.next += 1
            return state.next
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (due, watchers) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if deadline.offset <= state.now || Task.isCancelled { return (true, []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline.offset, continuation: continuation))
                    return (false, Self.takeWatchers(&state))
                }
                for watcher in watchers { watcher.resume() }
                if due {
                    if Task.isCancelled {
                        continuation.resume(throwing: CancellationError())
                    } else {
                        continuation.resume()
                    }
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let index = state.sleepers.firstIndex(where: { $0.id == id }) else { return nil }
                return state.sleepers.remove(at: index)
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    private static func takeWatchers(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        var ready: [CheckedContinuation<Void, Never>] = []
        state.watchers.removeAll { watcher in
            guard watcher.count <= count else { return false }
            ready.append(watcher.continuation)
            return true
        }
        return ready
    }

    /// Moves time forward, waking every sleeper whose deadline passed.
    func advance(by duration: Duration) {
        let due = state.withLock { state -> [Sleeper] in
            state.now += duration
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Returns once at least `count` tasks are asleep on the clock.
    func waitForSleepers(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if now { continuation.resume() }
        }
    }
}

/// Something with a `run()` that works until cancelled, then drains.
protocol RunnableComponent: Sendable {
    func run() async throws
}

extension InMemoryQueue: RunnableComponent {}
extension DurableQueue: RunnableComponent {}

/// Runs `body` while `component.run()` runs beside it; then cancels the component (it drains) and
/// waits for it to return.
func whileRunning<T: Sendable>(
    _ component: some RunnableComponent,
    _ body: () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await component.run() }
        let result: T
        do {
            result = try await body()
        } catch {
            group.cancelAll()
            throw error
        }
        group.cancelAll()
        try await group.waitForAll()
        return result
    }
}

func event(_ name: String, user: UserIdentity? = .externalID("u-1"), _ properties: ValueMap = [:]) -> AnalyticsRecord {
    AnalyticsRecord(user: user, payload: .customEvent(name: name, properties: properties))
}
