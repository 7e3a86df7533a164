import Synchronization

/// Keeps every record in memory, in order: for tests of code that uses the Braze tag provider, and as
/// an ``AcknowledgingSink`` downstream that confirms at once.
///
/// ```swift
/// let sink = InMemoryAnalyticsSink()
/// BrazeTagProvider(sink: sink).register(on: tagManager)
/// session.push(event: "purchase")
/// #expect(sink.records.map(\.kind) == [.purchase])
/// ```
public final class InMemoryAnalyticsSink: AnalyticsSink, AcknowledgingSink {
    private let storage = Mutex<[AnalyticsRecord]>([])

    /// Creates an empty sink.
    public init() {}

    /// Every record received or delivered so far, oldest first.
    public var records: [AnalyticsRecord] { storage.withLock { $0 } }

    /// The number of records kept.
    public var count: Int { storage.withLock { $0.count } }

    /// Forgets every record kept.
    public func removeAll() { storage.withLock { $0.removeAll() } }

    /// Returns the kept records and forgets them.
    public func takeAll() -> [AnalyticsRecord] {
        storage.withLock { records in
            defer { records.removeAll() }
            return records
        }
    }

    /// Keeps `records`.
    public func receive(_ records: [AnalyticsRecord]) {
        storage.withLock { $0.append(contentsOf: records) }
    }

    /// Keeps `records` (they are settled at once).
    public func deliver(_ records: [AnalyticsRecord]) async throws { receive(records) }

    /// Does nothing: records are kept as they arrive.
    public func flush() async throws {}

    /// Does nothing: the records stay readable.
    public func shutdown() async {}
}
