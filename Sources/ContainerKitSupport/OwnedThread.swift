import Foundation
import Synchronization

/// An OS thread that belongs to the `run()` that started it: the `run()` starts it, tells it to stop, and
/// awaits its exit with ``join()`` before returning, so no thread outlives its component.
///
/// ```swift
/// func run() async throws {
///     let thread = OwnedThread.start(name: "containerkit.example") { loop() }
///     await untilCancelled()
///     stopLoop()
///     await thread.join()
/// }
/// ```
package struct OwnedThread: Sendable {
    private let exit: Exit

    /// Starts a thread named `name` that runs `body` once.
    package static func start(name: String, _ body: @escaping @Sendable () -> Void) -> OwnedThread {
        let exit = Exit()
        let thread = Thread {
            body()
            exit.exited()
        }
        thread.name = name
        thread.start()
        return OwnedThread(exit: exit)
    }

    /// Returns once the thread's body returned (also when the calling task is cancelled: a started thread is
    /// always joined).
    package func join() async { await exit.wait() }

    /// The thread's exit, awaited by the task that started it.
    private final class Exit: Sendable {
        private let state = ContainerKitMutex<(exited: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        func exited() {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.exited = true
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }

        func wait() async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state -> Bool in
                    if state.exited { return true }
                    state.waiter = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        }
    }
}

/// Returns when the calling task is cancelled (at once if it already is): the body of a `run()` whose work
/// happens elsewhere (on its owned threads) until it is told to stop.
package func untilCancelled() async {
    let waiter = ContainerKitMutex<(cancelled: Bool, continuation: CheckedContinuation<Void, Never>?)>((false, nil))
    await withTaskCancellationHandler {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = waiter.withLock { state -> Bool in
                if state.cancelled || Task.isCancelled { return true }
                state.continuation = continuation
                return false
            }
            if now { continuation.resume() }
        }
    } onCancel: {
        waiter.withLock { state -> CheckedContinuation<Void, Never>? in
            state.cancelled = true
            defer { state.continuation = nil }
            return state.continuation
        }?.resume()
    }
}
