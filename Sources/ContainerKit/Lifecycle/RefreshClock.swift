import Foundation

/// The time source of the container lifecycle: open timeouts, the refresh schedule, the refresh throttle and
/// the age of saved containers. Inject a ``ManualRefreshClock`` to test schedules without waiting.
///
/// ```swift
/// struct OffsetClock: RefreshClock {
///     var offset: TimeInterval
///     var now: Date { Date().addingTimeInterval(offset) }
///     func sleep(until deadline: Date) async { await SystemRefreshClock().sleep(until: deadline) }
/// }
/// ```
public protocol RefreshClock: Sendable {
    /// The current wall-clock time.
    var now: Date { get }
    /// Returns at `deadline`, or earlier if the calling task is cancelled.
    func sleep(until deadline: Date) async
}

/// The system's wall clock and `Task.sleep`.
public struct SystemRefreshClock: RefreshClock {
    /// Creates the system clock.
    public init() {}

    public var now: Date { Date() }

    public func sleep(until deadline: Date) async {
        let seconds = deadline.timeIntervalSinceNow
        guard seconds > 0 else { return }
        try? await Task.sleep(for: .seconds(seconds))
    }
}
