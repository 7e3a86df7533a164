import ContainerKit
import Synchronization

/// Keeps every record in memory, in order: as the provider's sink in tests of code that uses the Braze tag
/// provider, and as the in-memory ``AnalyticsDestination`` behind a front (it accepts every batch at once).
///
/// ```swift
/// let sink = InMemoryAnalyticsSink()
/// BrazeTagProvider(sink: sink).register(on: tagManager)
/// session.push(event: "purchase")
/// #expect(sink.records.map(\.kind) == [.purchase])
/// ```
public final class InMemoryAnalyticsSink: AnalyticsSink, AnalyticsDestination {
    private let storage = Mutex<[AnalyticsRecord]>([])

    /// Creates an empty sink.
    public init() {}

    /// Every record enqueued or delivered so far, oldest first.
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

    /// Keeps `records`; there is nothing to wait for.
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        storage.withLock { $0.append(contentsOf: records) }
        return nil
    }

    /// Keeps `records` and accepts them all.
    public func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        storage.withLock { $0.append(contentsOf: records) }
        return .accepted(records)
    }
}
