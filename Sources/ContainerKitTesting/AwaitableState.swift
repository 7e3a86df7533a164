import ContainerKit
import Synchronization

/// A value that code under test (or a test double) updates and a test waits on, without polling: the one way
/// ContainerKit's tests await progress.
///
/// Every ``update(_:)`` wakes the waiters whose condition now holds. A wait whose condition already holds
/// returns at once, so it does not matter whether the update came before or after the wait began.
///
/// ```swift
/// let delivered = ProgressCounter()
/// let destination = ClosureDestination { records in
///     delivered.advance(by: records.count)
///     return .accepted(records)
/// }
/// // … start the code under test …
/// await delivered.reach(10)  // returns once 10 records were delivered
/// ```
///
/// Waiting is cancellable: when the waiting task is cancelled, ``wait(until:)`` returns (the condition may
/// not hold then), so a test's time limit ends a wait that would never end.
public final class AwaitableState<Value: Sendable>: Sendable {
    private struct Waiter {
        var condition: @Sendable (Value) -> Bool
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var value: Value
        var nextID = 0
        var waiters: [Int: Waiter] = [:]
    }

    private let state: Mutex<State>

    /// Creates a state holding `value`.
    public init(_ value: Value) { state = Mutex(State(value: value)) }

    /// The current value.
    public var value: Value { state.withLock { $0.value } }

    /// Changes the value with `body` and wakes every waiter whose condition holds afterwards; returns what
    /// `body` returns. `body` runs under a lock: it must not wait or call back into this state.
    @discardableResult
    public func update<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        var ready: [CheckedContinuation<Void, Never>] = []
        let result = try state.withLock { state -> Result in
            let result = try body(&state.value)
            let value = state.value
            for (id, waiter) in state.waiters where waiter.condition(value) {
                ready.append(waiter.continuation)
                state.waiters.removeValue(forKey: id)
            }
            return result
        }
        for continuation in ready { continuation.resume() }
        return result
    }

    /// Returns once `condition` holds for the value (at once if it already does), or when the calling task
    /// is cancelled.
    public func wait(until condition: @escaping @Sendable (Value) -> Bool) async {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if Task.isCancelled || condition(state.value) { return true }
                    state.waiters[id] = Waiter(condition: condition, continuation: continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume()
        }
    }
}

/// A count of things that happened (requests answered, records delivered, handler calls), which a test awaits
/// with ``AwaitableState/reach(_:)``.
public typealias ProgressCounter = AwaitableState<Int>

extension AwaitableState where Value == Int {
    /// A counter at zero.
    public convenience init() { self.init(0) }

    /// The count so far.
    public var count: Int { value }

    /// Counts `amount` more (one by default).
    public func advance(by amount: Int = 1) { update { $0 += amount } }

    /// Returns once the count is at least `count` (at once if it is), or when the calling task is cancelled.
    public func reach(_ count: Int) async { await wait { $0 >= count } }
}

extension AwaitableState where Value == Bool {
    /// A gate, closed until ``open()``.
    public convenience init() { self.init(false) }

    /// Opens the gate: every ``wait()`` returns, now and later.
    public func open() { update { $0 = true } }

    /// Whether the gate was opened.
    public var isOpen: Bool { value }

    /// Returns once the gate is open (at once if it is), or when the calling task is cancelled.
    public func wait() async { await wait { $0 } }
}

/// A one-way gate: closed until ``AwaitableState/open()``, then open for good.
public typealias Gate = AwaitableState<Bool>
