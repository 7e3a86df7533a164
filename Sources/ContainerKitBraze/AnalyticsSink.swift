/// Where analytics records go: the Braze tag provider hands every record it makes to one sink.
///
/// ``receive(_:)`` is called synchronously from tag handlers, inside event evaluation, so it must only
/// buffer (or do a short, bounded write) and never wait for the network or for `fsync`. Delivery
/// happens later, in the background or in ``flush()``; ``shutdown()`` drains what is buffered.
///
/// ```swift
/// final class CountingSink: AnalyticsSink {
///     let count = Mutex(0)
///     func receive(_ records: [AnalyticsRecord]) { count.withLock { $0 += records.count } }
///     func flush() async throws {}
///     func shutdown() async {}
/// }
/// ```
public protocol AnalyticsSink: Sendable {
    /// Takes records to deliver, in order. Returns promptly; problems are logged, not thrown.
    func receive(_ records: [AnalyticsRecord])
    /// Delivers everything received so far; throws when some of it could not be delivered.
    func flush() async throws
    /// Delivers what is buffered, then stops; records received afterwards are dropped with an error.
    func shutdown() async
}

extension AnalyticsSink {
    /// Takes one record (see ``receive(_:)``).
    public func receive(_ record: AnalyticsRecord) { receive([record]) }
}
