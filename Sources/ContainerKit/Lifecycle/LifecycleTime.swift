import Foundation

/// The lifecycle's time, read from the configured clock: instants are the ``Duration`` elapsed since the
/// configuration was made, and wall-clock timestamps (the fetch times of saved containers, which survive
/// restarts) are ``LifecycleConfiguration/wallClockAnchor`` plus that elapsed time.
struct LifecycleTime: Sendable {
    /// The time elapsed on the clock since the configuration was made.
    let elapsed: @Sendable () -> Duration
    /// Returns once the elapsed time reaches the argument, or earlier when the task is cancelled.
    let sleepUntil: @Sendable (Duration) async -> Void
    /// The wall-clock time at elapsed zero.
    let wallClockAnchor: Date

    init<C: Clock>(clock: C, wallClockAnchor: Date) where C.Duration == Duration {
        let origin = clock.now
        elapsed = { origin.duration(to: clock.now) }
        sleepUntil = { deadline in try? await clock.sleep(until: origin.advanced(by: deadline), tolerance: nil) }
        self.wallClockAnchor = wallClockAnchor
    }

    /// The elapsed time now.
    var now: Duration { elapsed() }

    /// The wall-clock time now.
    var wallNow: Date { wallTime(at: now) }

    /// The wall-clock time at elapsed time `instant`.
    func wallTime(at instant: Duration) -> Date { wallClockAnchor.addingTimeInterval(instant.seconds) }
}

extension Duration {
    /// The duration in seconds, for Foundation APIs and messages.
    var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

}
