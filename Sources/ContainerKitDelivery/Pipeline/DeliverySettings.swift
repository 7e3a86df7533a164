import ContainerKit

/// The settings of delivery that every front of the pipeline shares, written once: the pipeline
/// (``DeliveryPipeline/Configuration/delivery``), ``DurableQueue`` (``DurableQueue/Configuration/delivery``)
/// and ``InMemoryQueue`` (``InMemoryQueue/Configuration/delivery``) each embed one and hand it to the
/// pipeline as it is; their own configurations keep only what is theirs (a durable queue's segment sizes, an
/// in-memory queue's flush count).
///
/// ```swift
/// var configuration = DurableQueue.Configuration()
/// configuration.delivery.maximumConcurrentDeliveries = 4
/// configuration.delivery.drainTimeout = .seconds(5)
/// configuration.delivery.logger = logger
/// let queue = try DurableQueue(directory: path, destination: braze, configuration: configuration)
/// ```
public struct DeliverySettings: Sendable {
    /// Records per delivery; `nil` uses the destination's preferred batch size.
    public var batchSize: Int?
    /// How many batches may be out to the destination at once (1). One request at a time caps delivery at one
    /// batch per round trip — against Braze, tens of milliseconds away, a few thousand records a second — so
    /// a busy service raises it. Batches are still acknowledged in order, and a crash of a durable store
    /// re-delivers at most this many, and one settled batch whose acknowledgement was not written yet.
    public var maximumConcurrentDeliveries = 1
    /// The backoff of failed deliveries and failed reads; ``DeliveryRetryPolicy/maximumAttempts`` bounds the
    /// attempts of a batch (a durable queue's default never gives up: durable records are never dropped).
    public var retry: DeliveryRetryPolicy
    /// How long the drain after a graceful shutdown may deliver (10 s).
    public var drainTimeout: Duration = .seconds(10)
    /// How long a durability wait or a flush waits for `run()` to begin before it fails with
    /// ``DurabilityError/Code-swift.struct/notRunning`` (1 s): a host that never runs the pipeline gets an
    /// error, not a request that hangs. Once a wait timed out, later waits fail at once until `run()` begins.
    public var startTimeout: Duration = .seconds(1)
    /// How often, at most, a repeated failure is logged again (60 s).
    public var logInterval: Duration = .seconds(60)
    /// Random numbers in `0..<1` for jitter (injectable for tests).
    public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
    /// Where problems are reported; `nil` (the default): the logger of the tag manager the front's provider
    /// is registered on (standard error until then).
    public var logger: (any DiagnosticLogger)?
    /// Where enqueued, durable, delivered and rejected records, the backlog and delivery failures are
    /// reported (for metrics); `nil` (the default): the observer of the tag manager the front's provider is
    /// registered on, if it has one that is a ``DeliveryObserver``.
    public var observer: (any DeliveryObserver)?

    /// The defaults, with `retry` (a bounded ``DeliveryRetryPolicy`` unless given).
    public init(retry: DeliveryRetryPolicy = DeliveryRetryPolicy()) {
        self.retry = retry
    }
}
