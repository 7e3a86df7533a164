import ContainerKit
import ContainerKitDelivery
import Synchronization

/// A destination whose request rate is this instance's share of a limit for the whole cluster (Braze's
/// limit per API key): `limit × leased partitions / partitions` requests a second, so the shares of all
/// instances add up to the limit however many run.
///
/// ```swift
/// let destination = SharedRateLimitDestination(braze, requestsPerSecond: 200, store: store)
/// let pipeline = DeliveryPipeline(store: store, destination: destination)
/// ```
public final class SharedRateLimitDestination: AnalyticsDestination {
    private struct Bucket {
        var tokens = 0.0
        var refilled = ContinuousClock.now
    }

    /// Where the requests go.
    public let destination: any AnalyticsDestination
    /// The limit for the whole cluster.
    public let requestsPerSecond: Double
    private let share: @Sendable () -> Double
    private let bucket = Mutex(Bucket())

    /// Wraps `destination`; `share` is this instance's share of the limit (0…1), read before each request.
    public init(
        _ destination: any AnalyticsDestination,
        requestsPerSecond: Double,
        share: @escaping @Sendable () -> Double
    ) {
        self.destination = destination
        self.requestsPerSecond = requestsPerSecond
        self.share = share
    }

    /// Wraps `destination` with the share of the partitions `store` leases.
    public convenience init(
        _ destination: any AnalyticsDestination,
        requestsPerSecond: Double,
        store: PostgresRecordStore
    ) {
        self.init(destination, requestsPerSecond: requestsPerSecond) { [weak store] in store?.leaseShare ?? 0 }
    }

    public var preferredBatchSize: Int { destination.preferredBatchSize }

    /// Runs the wrapped destination's own work (for Braze, its HTTP client), so its connections are kept.
    public func run() async throws { try await destination.run() }

    public func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        let rate = max(requestsPerSecond * share(), requestsPerSecond / 1000)
        let wait = bucket.withLock { bucket -> Duration in
            let now = ContinuousClock.now
            bucket.tokens = min(rate, bucket.tokens + (now - bucket.refilled).seconds * rate)
            bucket.refilled = now
            bucket.tokens -= 1
            return bucket.tokens >= 0 ? .zero : .seconds(-bucket.tokens / rate)
        }
        if wait > .zero { try? await Task.sleep(for: wait) }
        return await destination.deliver(records)
    }
}
