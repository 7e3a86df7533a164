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
/// buffered for at most ``Configuration/drainTimeout`` (a request still running at the deadline is
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
/// ``Configuration/batchSize`` records (by default the destination's preferred batch size).
///
/// ## Failures
/// Retryable failures (429 with `Retry-After`, 5xx, timeouts) are retried after
/// ``DeliveryRetryPolicy``'s jittered backoff, up to ``DeliveryRetryPolicy/maximumAttempts`` attempts;
/// then the records are dropped with an error. Rejected records (for Braze, a 4xx) are dropped at once
/// with the destination's message. The first failure of a kind is logged at once, repeats at most once
/// per ``Configuration/logInterval`` with a count.
public final class InMemoryQueue: AnalyticsSink {
    /// Tunables of the queue.
    public struct Configuration: Sendable {
        /// Deliver once this many records are buffered (75).
        public var flushCount = 75
        /// Records per delivery; `nil` uses the destination's preferred batch size.
        public var batchSize: Int?
        /// Deliver whatever is buffered this often (10 s, like Braze's SDKs).
        public var flushInterval: Duration = .seconds(10)
        /// The most records buffered; more are refused (50,000).
        public var maximumBufferedRecords = 50_000
        /// When and how often to retry.
        public var retry = DeliveryRetryPolicy()
        /// How long the drain after ``gracefulShutdown()`` may take (10 s).
        public var drainTimeout: Duration = .seconds(10)
        /// How long a ``flush()`` waits for ``run()`` to begin before it fails with
        /// ``DurabilityError/Code-swift.struct/notRunning`` (1 s).
        public var startTimeout: Duration = .seconds(1)
        /// How often, at most, a repeated failure is logged again (60 s).
        public var logInterval: Duration = .seconds(60)
        /// Random numbers in `0..<1` for jitter (injectable for tests).
        public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
        /// Where failures, rejections and partial successes are reported; `nil` (the default): the logger
        /// of the tag manager the queue's provider is registered on (standard error until then).
        public var logger: (any DiagnosticLogger)?
        /// Where enqueued, delivered and rejected records, the backlog and delivery failures are reported
        /// (for metrics); `nil` (the default): the observer of the tag manager the queue's provider is
        /// registered on, if it has one that is a ``DeliveryObserver``.
        public var observer: (any DeliveryObserver)?

        /// The defaults, with any of the common settings changed.
        public init(
            flushCount: Int = 75,
            flushInterval: Duration = .seconds(10),
            retry: DeliveryRetryPolicy = DeliveryRetryPolicy(),
            logger: (any DiagnosticLogger)? = nil
        ) {
            self.flushCount = flushCount
            self.flushInterval = flushInterval
            self.retry = retry
            self.logger = logger
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
        var settings = DeliveryPipeline<MemoryRecordStore>.Configuration()
        settings.batchSize = configuration.batchSize
        settings.retry = configuration.retry
        settings.linger = configuration.flushInterval
        settings.lingerCount = configuration.flushCount
        settings.drainTimeout = configuration.drainTimeout
        settings.startTimeout = configuration.startTimeout
        settings.logInterval = configuration.logInterval
        settings.random = configuration.random
        settings.logger = configuration.logger
        settings.observer = configuration.observer
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

    /// Reports to `logger` and `observer` from now on, for what ``Configuration/logger`` and
    /// ``Configuration/observer`` leave unset (the Braze provider passes its tag manager's on registration).
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
                (configuration.logger ?? StandardErrorLogger()).write(
                    .error,
                    "dropped records: the queue stopped before delivering them",
                    metadata: ["queue": "queue", "records": String(left)]
                )
            }
        }
        try await pipeline.run()
    }

    /// Starts the drain: new records are refused and what is buffered is delivered for at most
    /// ``Configuration/drainTimeout`` (what is left then is dropped with an error); then ``run()`` returns.
    public func gracefulShutdown() { pipeline.gracefulShutdown() }
}
