import ContainerKit

/// The in-memory front of the delivery pipeline: buffers the provider's records and delivers them, in
/// batches and in order, to one ``AnalyticsDestination``, applying the pipeline's one retry policy.
/// Records are lost if the process dies; put a ``DurableQueue`` in front instead for at-least-once
/// delivery.
///
/// ```swift
/// let braze = BrazeUsersTrackDestination(endpoint: url, apiKey: key)
/// let queue = InMemoryQueue(destination: braze)
/// BrazeTagProvider(sink: queue).register(on: tagManager)
/// try await withThrowingDiscardingTaskGroup { group in
///     group.addTask { try await queue.run() }     // delivers until gracefulShutdown() drained it
///     …
///     queue.gracefulShutdown()                    // at exit: drain (bounded), then run() returns
/// }
/// ```
///
/// ## Lifetime
/// The initializer starts nothing. ``run()`` delivers until its task is cancelled — then it stops at once
/// and what is buffered is lost — or until ``gracefulShutdown()``: that **drains**, delivering what is
/// buffered for at most ``DeliverySettings/drainTimeout`` (a request still running at the deadline is
/// cancelled; what is left is dropped with an error), and then ``run()`` returns. Records enqueued after the
/// drain began are refused. A host running it as a swift-service-lifecycle `Service` bridges the two in
/// one line: `try await withGracefulShutdownHandler { try await queue.run() } onGracefulShutdown: {
/// queue.gracefulShutdown() }`.
///
/// ## One engine
/// The queue is a front: its engine is the one ``DeliveryPipeline``, over a ``MemoryRecordStore``.
///
/// ## Batching
/// The loop sends when ``Configuration/flushCount`` records are buffered, once the oldest buffered
/// record waited ``Configuration/flushInterval``, on ``flush()`` and while draining; each delivery carries at most
/// ``DeliverySettings/batchSize`` records (by default the destination's preferred batch size).
///
/// ## Failures
/// Retryable failures (429 with `Retry-After`, 5xx, timeouts) are retried after
/// ``DeliveryRetryPolicy``'s jittered backoff, up to ``DeliveryRetryPolicy/maximumAttempts`` attempts;
/// then the records are dropped with an error. Rejected records (for Braze, a 4xx) are dropped at once
/// with the destination's message. The first failure of a kind is logged at once, repeats at most once
/// per ``DeliverySettings/logInterval`` with a count.
public final class InMemoryQueue: AnalyticsSink, Runnable {
    /// Tunables of the queue: the ``DeliverySettings`` every front shares, and when to send.
    public struct Configuration: Sendable {
        /// Batch size, deliveries at once, retries (a bounded number of attempts), drain and start timeouts,
        /// logging and observing — the settings every front shares.
        public var delivery = DeliverySettings()
        /// Deliver once this many records are buffered (75).
        public var flushCount = 75
        /// Deliver whatever is buffered this often (10 s, like Braze's SDKs).
        public var flushInterval: Duration = .seconds(10)
        /// The most records buffered; more are refused (50,000).
        public var maximumBufferedRecords = 50_000

        /// The defaults, with any of the common settings changed.
        public init(
            flushCount: Int = 75,
            flushInterval: Duration = .seconds(10),
            retry: DeliveryRetryPolicy = DeliveryRetryPolicy(),
            logger: (any DiagnosticLogger)? = nil
        ) {
            self.flushCount = flushCount
            self.flushInterval = flushInterval
            delivery.retry = retry
            delivery.logger = logger
        }
    }

    /// Counters for monitoring and tests: the pipeline's one ``DeliveryStatistics``.
    public typealias Statistics = DeliveryStatistics

    /// Where records are delivered.
    public let destination: any AnalyticsDestination
    /// The queue's tunables.
    public let configuration: Configuration
    /// The engine: the one delivery pipeline, over a memory store.
    public let pipeline: DeliveryPipeline<MemoryRecordStore>
    private let store: MemoryRecordStore
    private let leftAtStop = Mutex(0)

    /// Creates a queue in front of `destination`. It starts nothing; call ``run()``.
    public init<C: Clock>(
        destination: any AnalyticsDestination,
        configuration: Configuration = Configuration(),
        clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        self.destination = destination
        self.configuration = configuration
        var settings = DeliveryPipeline<MemoryRecordStore>.Configuration(delivery: configuration.delivery)
        settings.linger = configuration.flushInterval
        settings.lingerCount = configuration.flushCount
        settings.label = "queue"
        store = MemoryRecordStore(maximumRecords: configuration.maximumBufferedRecords)
        pipeline = DeliveryPipeline(store: store, destination: destination, configuration: settings, clock: clock)
    }

    /// Counters for monitoring and tests; records still buffered when ``run()`` ended count as dropped.
    public var statistics: Statistics {
        var statistics = pipeline.statistics
        statistics.droppedRecords += leftAtStop.withLock { $0 }
        return statistics
    }

    /// Reports to `logger` and `observer` from now on, for what ``DeliverySettings/logger`` and
    /// ``DeliverySettings/observer`` leave unset (the Braze provider passes its tag manager's on registration).
    public func inherit(logger: any DiagnosticLogger, observer: (any DeliveryObserver)?) {
        pipeline.inherit(logger: logger, observer: observer)
    }

    /// Buffers `records` (there is no durability to wait for: returns `nil`).
    /// - Throws: `.queueFull` when the buffer is full, `.closed` once the queue drains or stopped.
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard !records.isEmpty else { return nil }
        _ = try pipeline.append(EncodedRecords(records))
        return nil
    }

    /// Buffers records the provider encoded (the memory store keeps the records, not the bytes).
    public func enqueue(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard !encoded.records.isEmpty else { return nil }
        _ = try pipeline.append(encoded)
        return nil
    }

    /// Returns once everything enqueued so far is settled (delivered, rejected or dropped); needs
    /// ``run()`` to be running.
    /// - Throws: the first ``DeliveryError`` that settled some of those records without delivering them.
    public func flush() async throws { try await pipeline.flush() }

    // MARK: Running

    /// Delivers until the task is cancelled — then stops at once: what is buffered is dropped — or until
    /// ``gracefulShutdown()`` drained the buffer.
    /// - Throws: `AnalyticsSinkError` `.closed` when called twice.
    public func run() async throws {
        defer {
            let left = store.count
            leftAtStop.withLock { $0 = left }
            if left > 0 {
                (configuration.delivery.logger ?? StandardErrorLogger()).write(
                    .error,
                    "dropped records: the queue stopped before delivering them",
                    metadata: ["queue": "queue", "records": String(left)]
                )
            }
        }
        try await pipeline.run()
    }

    /// Starts the drain: new records are refused and what is buffered is delivered for at most
    /// ``DeliverySettings/drainTimeout`` (what is left then is dropped with an error); then ``run()`` returns.
    public func gracefulShutdown() { pipeline.gracefulShutdown() }
}
