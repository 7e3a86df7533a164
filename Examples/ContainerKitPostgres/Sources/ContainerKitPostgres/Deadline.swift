import PostgresNIO
import Synchronization

/// Runs `operation`; when it has not finished after `timeout`, calls `expire` — which makes the operation end
/// soon: it closes the connection the operation waits on — and throws ``CallTimedOut``. When the caller is
/// cancelled, it calls `expire` too and throws `CancellationError` at once.
///
/// The caller never waits past the deadline or its own cancellation, whatever the operation does: postgres-nio
/// may never answer a statement written to a connection that has just closed (its promise is dropped with the
/// channel's handlers), so the operation runs in a task of its own, one per call, that the caller does not
/// wait for once the deadline passed. The timer is a task scheduled on an event loop (no thread, no task).
/// A timed-out call may still have happened on the server (a commit whose answer came late): at least once.
func withDeadline<T: Sendable>(
    _ timeout: Duration,
    expire: @escaping @Sendable () -> Void,
    _ operation: @escaping @Sendable () async throws -> T
) async throws -> T {
    let race = DeadlineRace<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            guard race.begin(continuation) else { return }
            let work = Task {
                do {
                    race.settle(.success(try await operation()))
                } catch {
                    race.settle(.failure(error))
                }
            }
            let nanoseconds = Int64(min(timeout.seconds, 86_400) * 1e9)
            let timer = PostgresClient.defaultEventLoopGroup.any().scheduleTask(in: .nanoseconds(nanoseconds)) {
                if race.settle(.failure(CallTimedOut())) { expire() }
            }
            race.started(work: work, timer: timer)
        }
    } onCancel: {
        if race.settle(.failure(CancellationError())) { expire() }
    }
}

/// Who of the operation, the timer and the caller's cancellation ends a ``withDeadline(_:expire:_:)`` call.
private final class DeadlineRace<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        /// The outcome, once settled (kept when it came before the caller waited: cancelled early).
        var outcome: Result<T, any Error>?
        var work: Task<Void, Never>?
        var timer: Scheduled<Void>?
    }
    private let state = Mutex(State())

    /// The caller waits now: `false` (and resumed) when the call was settled already.
    func begin(_ continuation: CheckedContinuation<T, any Error>) -> Bool {
        let outcome = state.withLock { state -> Result<T, any Error>? in
            if state.outcome == nil { state.continuation = continuation }
            return state.outcome
        }
        guard let outcome else { return true }
        continuation.resume(with: outcome)
        return false
    }

    /// The operation and its timer are under way (stopped at once if the call was settled meanwhile).
    func started(work: Task<Void, Never>, timer: Scheduled<Void>) {
        let settled = state.withLock { state -> Bool in
            if state.outcome == nil {
                state.work = work
                state.timer = timer
            }
            return state.outcome != nil
        }
        if settled {
            timer.cancel()
            work.cancel()
        }
    }

    /// Ends the call with `outcome` unless it has ended; returns whether this did it.
    @discardableResult
    func settle(_ outcome: Result<T, any Error>) -> Bool {
        let taken = state.withLock {
            state -> (CheckedContinuation<T, any Error>?, Scheduled<Void>?, Task<Void, Never>?)? in
            guard state.outcome == nil else { return nil }
            state.outcome = outcome
            defer {
                state.continuation = nil
                state.timer = nil
                state.work = nil
            }
            return (state.continuation, state.timer, state.work)
        }
        guard let (continuation, timer, work) = taken else { return false }
        timer?.cancel()
        // Past the deadline or cancelled: a wait for a pool connection gives up (a finished task ignores it).
        work?.cancel()
        continuation?.resume(with: outcome)
        return true
    }
}

/// The connection a call runs on, so that its deadline can close it: a statement on the wire does not stop when
/// its task is cancelled, and one sent on a connection that has just closed may never be answered.
final class ConnectionSlot: Sendable {
    private struct State {
        var connection: PostgresConnection?
        var expired = false
        var held = false
    }
    private let state = Mutex(State())

    init() {}

    /// The call runs on `connection` now (closed at once if the deadline passed already).
    func hold(_ connection: PostgresConnection) {
        let expired = state.withLock { state -> Bool in
            if !state.expired { state.connection = connection }
            state.held = true
            return state.expired
        }
        if expired { connection.closeNow() }
    }

    /// Whether the call got a connection at all (a deadline passed without one: the server cannot be reached).
    var held: Bool { state.withLock { $0.held } }

    /// The call is done with its connection.
    func release() { state.withLock { $0.connection = nil } }

    /// The deadline passed: closes the connection the call runs on, if any.
    func expire() {
        let connection = state.withLock { state -> PostgresConnection? in
            state.expired = true
            defer { state.connection = nil }
            return state.connection
        }
        connection?.closeNow()
    }
}

extension PostgresConnection {
    /// Starts closing the connection and returns at once: its pending statements fail, a pool replaces it.
    func closeNow() {
        let _: EventLoopFuture<Void> = close()
    }
}
