public import ContainerKit
public import ContainerKitDelivery
import Synchronization

/// Keeps every record in memory, in order, for tests: as the provider's sink in tests of code that uses the
/// Braze tag provider, and as an in-memory `AnalyticsDestination` behind a front (it accepts every batch at
/// once). A test can wait (without polling) until a number of records arrived.
///
/// ```swift
/// let sink = InMemoryAnalyticsSink()
/// BrazeTagProvider(sink: sink).register(on: tagManager)
/// session.push(event: "purchase")
/// #expect(sink.records.map(\.kind) == [.purchase])
/// ```
public final class InMemoryAnalyticsSink: AnalyticsSink, AnalyticsDestination {
    private let storage = AwaitableState<[AnalyticsRecord]>([])

    /// Creates an empty sink.
    public init() {}

    /// Every record enqueued or delivered so far, oldest first.
    public var records: [AnalyticsRecord] { storage.value }

    /// The number of records kept.
    public var count: Int { storage.value.count }

    /// Forgets every record kept.
    public func removeAll() { storage.update { $0.removeAll() } }

    /// Returns the kept records and forgets them.
    public func takeAll() -> [AnalyticsRecord] {
        storage.update { records in
            defer { records.removeAll() }
            return records
        }
    }

    /// Returns once at least `count` records are kept (at once if they are), or when the calling task is
    /// cancelled.
    public func waitForRecords(_ count: Int) async {
        await storage.wait { $0.count >= count }
    }

    /// Keeps `records`; there is nothing to wait for.
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        storage.update { $0.append(contentsOf: records) }
        return nil
    }

    /// Keeps `records` and accepts them all.
    public func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        storage.update { $0.append(contentsOf: records) }
        return .accepted(records)
    }
}
