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
    /// How the limiter reads the time and waits: the continuous clock, or a virtual one in tests.
    struct Timing: Sendable {
        /// The time since some fixed start.
        var now: @Sendable () -> Duration
        /// Waits `duration` (returns early when the task is cancelled).
        var sleep: @Sendable (Duration) async -> Void

        /// The continuous clock.
        static var continuous: Timing {
            let start = ContinuousClock.now
            return Timing(now: { ContinuousClock.now - start }, sleep: { try? await Task.sleep(for: $0) })
        }
    }

    private struct Bucket {
        var tokens = 0.0
        var refilled: Duration?
    }

    /// Where the requests go.
    public let destination: any AnalyticsDestination
    /// The limit for the whole cluster.
    public let requestsPerSecond: Double
    private let share: @Sendable () -> Double
    private let timing: Timing
    private let bucket = Mutex(Bucket())

    /// Wraps `destination`; `share` is this instance's share of the limit (0…1), read before each request.
    public convenience init(
        _ destination: any AnalyticsDestination,
        requestsPerSecond: Double,
        share: @escaping @Sendable () -> Double
    ) {
        self.init(destination, requestsPerSecond: requestsPerSecond, share: share, timing: .continuous)
    }

    /// Wraps `destination` with the share of the partitions `store` leases.
    public convenience init(
        _ destination: any AnalyticsDestination,
        requestsPerSecond: Double,
        store: PostgresRecordStore
    ) {
        self.init(destination, requestsPerSecond: requestsPerSecond, store: store, timing: .continuous)
    }

    convenience init(
        _ destination: any AnalyticsDestination,
        requestsPerSecond: Double,
        store: PostgresRecordStore,
        timing: Timing
    ) {
        self.init(
            destination,
            requestsPerSecond: requestsPerSecond,
            share: { [weak store] in store?.leaseShare ?? 0 },
            timing: timing
        )
    }

    init(
        _ destination: any AnalyticsDestination,
        requestsPerSecond: Double,
        share: @escaping @Sendable () -> Double,
        timing: Timing
    ) {
        self.destination = destination
        self.requestsPerSecond = requestsPerSecond
        self.share = share
        self.timing = timing
    }

    public var preferredBatchSize: Int { destination.preferredBatchSize }

    /// Runs the wrapped destination's own work (for Braze, its HTTP client), so its connections are kept.
    public func run() async throws { try await destination.run() }

    /// The requests a second this instance may send now: its share of ``requestsPerSecond`` (at least a
    /// thousandth of it, so that an instance between leases still drains what it read).
    public var currentRequestsPerSecond: Double { max(requestsPerSecond * share(), requestsPerSecond / 1000) }

    /// Waits for this instance's next token (a bucket that refills at ``currentRequestsPerSecond`` and holds at
    /// most one second of it), then delivers.
    public func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        let rate = currentRequestsPerSecond
        let now = timing.now()
        let wait = bucket.withLock { bucket -> Duration in
            let elapsed = bucket.refilled.map { (now - $0).seconds } ?? 0
            bucket.tokens = min(rate, bucket.tokens + elapsed * rate)
            bucket.refilled = now
            bucket.tokens -= 1
            return bucket.tokens >= 0 ? .zero : .seconds(-bucket.tokens / rate)
        }
        if wait > .zero { await timing.sleep(wait) }
        return await destination.deliver(records)
    }
}
