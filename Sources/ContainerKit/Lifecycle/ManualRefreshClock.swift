import Foundation
import Synchronization

/// A ``RefreshClock`` whose time moves only when told to: tests advance it by 12 hours in an instant.
///
/// ```swift
/// let clock = ManualRefreshClock()
/// let manager = TagManager(lifecycle: LifecycleConfiguration(network: source, clock: clock))
/// _ = try await manager.open(id: "GTM-XXXX")
/// clock.advance(by: 12 * 3600)  // the scheduled refresh runs now
/// ```
public final class ManualRefreshClock: RefreshClock {
    private struct Sleeper {
        var deadline: Date
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now: Date
        var sleepers: [Int: Sleeper] = [:]
        var cancelled: Set<Int> = []
        var nextID = 0
    }

    private let state: Mutex<State>

    /// Creates a clock that reads `start` (by default 2024-01-01T00:00:00Z) until it is advanced.
    public init(start: Date = Date(timeIntervalSince1970: 1_704_067_200)) {
        state = Mutex(State(now: start))
    }

    public var now: Date { state.withLock { $0.now } }

    /// The deadlines tasks are sleeping until, earliest first.
    public var pendingDeadlines: [Date] { state.withLock { $0.sleepers.values.map(\.deadline).sorted() } }

    public func sleep(until deadline: Date) async {
        let id = state.withLock { state -> Int in
            defer { state.nextID += 1 }
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if deadline <= state.now || state.cancelled.remove(id) != nil { return true }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume()
        }
        state.withLock { _ = $0.cancelled.remove(id) }
    }

    /// Moves the time forward by `seconds` and wakes every sleeper whose deadline has come.
    public func advance(by seconds: TimeInterval) {
        set(now.addingTimeInterval(seconds))
    }

    /// Sets the time (forward or back) and wakes every sleeper whose deadline has come.
    public func set(_ date: Date) {
        let due = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.now = date
            let ids = state.sleepers.filter { $0.value.deadline <= date }.map(\.key)
            return ids.compactMap { state.sleepers.removeValue(forKey: $0)?.continuation }
        }
        for continuation in due { continuation.resume() }
    }
}
