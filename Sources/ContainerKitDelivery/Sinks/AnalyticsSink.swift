public import ContainerKit

/// The synchronous entry of the delivery pipeline: the Braze tag provider hands every record it makes
/// to one sink — a ``DeliveryPipeline`` (in memory or durable) or, in tests, `InMemoryAnalyticsSink` (from
/// `ContainerKitTesting`).
///
/// ``enqueue(_:)`` is called from tag handlers, inside event evaluation, so it only buffers (or does a
/// short, bounded write) and never waits for the network or for `fsync`. It returns the
/// ``DurabilityToken`` that resolves once the records are durable (a durable pipeline), or `nil` when there
/// is nothing to wait for. Delivery happens in the pipeline's ``DeliveryPipeline/run()``.
///
/// ```swift
/// final class CountingSink: AnalyticsSink {
///     let count = Mutex(0)
///     func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
///         count.withLock { $0 += records.count }
///         return nil
///     }
/// }
/// ```
public protocol AnalyticsSink: Sendable {
    /// Takes records to deliver, in order; returns promptly.
    /// - Returns: the token to wait on for the records' durability, or `nil`.
    /// - Throws: ``AnalyticsSinkError`` when the records were refused (queue full, shut down).
    func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken?

    /// Takes records the provider already encoded (``EncodedRecords``: each record's segment line), so a
    /// sink that stores bytes writes these and the push's answer reuses them: each record is encoded
    /// once. The default passes ``EncodedRecords/records`` to ``enqueue(_:)-([AnalyticsRecord])``.
    func enqueue(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken?

    /// Called by ``BrazeTagProvider/register(on:classPaths:)`` with the tag manager's logger and observer
    /// (when that is also a ``DeliveryObserver``): a sink configured without its own reports to these from
    /// then on, so one service-wide logger and one metrics observer see the whole pipeline. The default
    /// ignores them.
    func inherit(logger: any DiagnosticLogger, observer: (any DeliveryObserver)?)
}

extension AnalyticsSink {
    public func enqueue(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken? {
        try enqueue(encoded.records)
    }

    public func inherit(logger: any DiagnosticLogger, observer: (any DeliveryObserver)?) {}
}
