/// A `Clock` reduced to what the pipeline needs: sleeping for a `Duration` and the time elapsed since the
/// component was made. Built from any clock whose duration is `Duration` (`ContinuousClock` by default;
/// tests inject a manual one).
package struct DeliveryClock: Sendable {
    /// Sleeps for the duration (throws `CancellationError` when the task is cancelled).
    package let sleep: @Sendable (Duration) async throws -> Void
    /// The time elapsed since this value was made.
    package let elapsed: @Sendable () -> Duration

    package init<C: Clock>(_ clock: C) where C.Duration == Duration {
        let start = clock.now
        sleep = { duration in try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil) }
        elapsed = { start.duration(to: clock.now) }
    }
}
