import ContainerKit
import Synchronization

/// A wake-up call between a front's producers and its delivery loop: ``signal()`` wakes the one waiter
/// (or the next ``wait()`` returns at once). Spurious wake-ups are allowed; loops re-check their state.
final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// Wakes the waiter, or makes the next ``wait()`` return at once.
    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once signalled (or at once when the task is cancelled).
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }

    /// Sleeps for `duration` on `clock`, or less when signalled; `true` when the sleep ran its course.
    func sleep(_ duration: Duration, on clock: DeliveryClock) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                do {
                    try await clock.sleep(duration)
                    return true
                } catch {
                    return false
                }
            }
            group.addTask {
                await self.wait()
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}

/// Runs `body` with a deadline on `clock`: its result, or `nil` when `limit` passed first (the body is
/// cancelled then).
func withDeadline<T: Sendable>(
    _ limit: Duration,
    on clock: DeliveryClock,
    _ body: @escaping @Sendable () async -> T
) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            try? await clock.sleep(max(limit, .zero))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}
