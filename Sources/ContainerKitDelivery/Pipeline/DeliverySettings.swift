public import ContainerKit

/// How a ``DeliveryPipeline`` delivers, whatever its storage: the one configuration of the pipeline. What
/// only one storage has (a segment log's segment size, a memory store's capacity) is given with the storage
/// (``DeliveryPipeline/inMemory(destination:settings:maximumRecords:clock:)``,
/// ``DeliveryPipeline/durable(directory:destination:settings:storage:clock:)``); a setting left `nil` here
/// takes the storage's default.
///
/// ```swift
/// var settings = DeliverySettings()
/// settings.maximumConcurrentDeliveries = 4
/// settings.drainTimeout = .seconds(5)
/// settings.logger = logger
/// let pipeline = try DeliveryPipeline.durable(directory: path, destination: braze, settings: settings)
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
    /// attempts of a batch. `nil` (the default): for a durable store, retries without limit (0.1 s doubling
    /// to 30 s, jittered: durable records are never dropped); for the memory store, ``DeliveryRetryPolicy``'s
    /// defaults (5 attempts). A policy that never gives up also ends a waiting flush at a retryable failure,
    /// with its error, rather than waiting for a destination that is down.
    public var retry: DeliveryRetryPolicy?
    /// How long a partial batch waits for more records before it is delivered, unless a flush or the drain
    /// waits. `nil` (the default): 10 s for the memory store (like Braze's SDKs); no wait for a durable store
    /// (except that a partial batch waits for the commit in flight). A few hundred milliseconds turn a steady
    /// trickle of small commits into full batches — far fewer requests to the destination (Braze counts
    /// requests against its rate limit) — at the price of that much delivery delay.
    public var linger: Duration?
    /// How many committed records end the ``linger`` at once. `nil` (the default): 75 for the memory store, a
    /// full batch for the others.
    public var lingerCount: Int?
    /// How the pipeline's log messages name it, in their `queue` metadata; `nil` (the default): a durable
    /// store's directory, else `queue`.
    public var name: String?
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
    /// Where problems are reported; `nil` (the default): the logger of the tag manager the pipeline's provider
    /// is registered on (standard error until then).
    public var logger: (any DiagnosticLogger)?
    /// Where enqueued, durable, delivered and rejected records, the backlog and delivery failures are
    /// reported (for metrics); `nil` (the default): the observer of the tag manager the pipeline's provider is
    /// registered on, if it has one that is a ``DeliveryObserver``.
    public var observer: (any DeliveryObserver)?

    /// The defaults, with any of the common settings changed.
    public init(
        retry: DeliveryRetryPolicy? = nil,
        linger: Duration? = nil,
        lingerCount: Int? = nil,
        logger: (any DiagnosticLogger)? = nil
    ) {
        self.retry = retry
        self.linger = linger
        self.lingerCount = lingerCount
        self.logger = logger
    }
}

extension DeliveryRetryPolicy {
    /// The policy of a durable store when ``DeliverySettings/retry`` is `nil`: without limit, 0.1 s doubling to
    /// 30 s, jittered.
    public static var unlimited: DeliveryRetryPolicy {
        DeliveryRetryPolicy(maximumAttempts: .max, baseDelay: .milliseconds(100), maximumDelay: .seconds(30))
    }
}
