/// A sink that can say when records are safely delivered, which ``DurableQueueSink`` needs before it
/// deletes them from disk.
///
/// ``deliver(_:)`` returns only when every record is *settled*: accepted by the destination, or
/// permanently refused by it (which the sink reports itself, for example in its log). It throws when the
/// records should be offered again later (a network error, a server error after retries); they may then
/// be delivered twice, so destinations see records at least once.
///
/// ```swift
/// struct PrintingSink: AcknowledgingSink {
///     func deliver(_ records: [AnalyticsRecord]) async throws {
///         for record in records { print(record.jsonLine) }
///     }
/// }
/// ```
public protocol AcknowledgingSink: Sendable {
    /// Delivers `records` in order; returns once all are settled, throws if they must be retried.
    func deliver(_ records: [AnalyticsRecord]) async throws
    /// How many records one ``deliver(_:)`` call should carry (for Braze, one request's worth, so a
    /// failure repeats as little as possible). 500 unless the sink says otherwise.
    var preferredBatchSize: Int { get }
}

extension AcknowledgingSink {
    /// 500 records.
    public var preferredBatchSize: Int { 500 }
}
