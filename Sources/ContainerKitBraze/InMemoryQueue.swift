import ContainerKit
import Synchronization

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
///     group.addTask { try await queue.run() }     // delivers until cancelled, then drains
///     …
/// }
/// ```
///
/// ## Lifetime
/// The initializer starts nothing. ``run()`` delivers until its task is cancelled, then **drains**: it
/// delivers what is buffered, for at most ``Configuration/drainTimeout`` (a request still running at the
/// deadline is cancelled; what is left is dropped with an error), and returns. Records enqueued after
/// the drain began are refused. A host conforms it to swift-service-lifecycle's `Service` with
/// `extension InMemoryQueue: @retroactive Service {}`.
///
/// ## Batching
/// The loop sends when ``Configuration/flushCount`` records are buffered, every
/// ``Configuration/flushInterval``, on ``flush()`` and while draining; each delivery carries at most
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
        /// How long the drain after cancellation may take (10 s).
        public var drainTimeout: Duration = .seconds(10)
        /// How often, at most, a repeated failure is logged again (60 s).
        public var logInterval: Duration = .seconds(60)
        /// Random numbers in `0..<1` for jitter (injectable for tests).
        public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
        /// Where failures, rejections and partial successes are reported; `nil` (the default): the logger
        /// of the tag manager the queue's provider is registered on (standard error until then).
        public var logger: (any DiagnosticLogger)?
        /// Where enqueued, delivered and rejected records, the backlog and delivery failures are reported
        /// (for metrics); `nil` (the default): the observer of the tag manager the queue's provider is
        /// registered on, if it has one.
        public var observer: (any RuntimeObserver)?

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

    /// Counters for monitoring and tests.
    public struct Statistics: Sendable, Hashable {
        /// Records taken by ``enqueue(_:)``.
        public var enqueuedRecords = 0
        /// Records the destination accepted.
        public var deliveredRecords = 0
        /// Records the destination rejected.
        public var rejectedRecords = 0
        /// Records dropped: refused (buffer full, shut down), out of attempts, or left at the drain deadline.
        public var droppedRecords = 0
        /// Deliveries that failed in a retryable way.
        public var failedDeliveries = 0
        /// Deliveries repeated after a failure.
        public var retries = 0
    }

    private struct FlushWaiter {
        var target: UInt64
        var error: DeliveryError?
        var continuation: CheckedContinuation<DeliveryError?, Never>
    }

    private enum Phase { case idle, running, draining, stopped }

    private struct State {
        var buffer: [AnalyticsRecord] = []
        var head = 0
        var enqueued: UInt64 = 0
        var taken: UInt64 = 0
        var settled: UInt64 = 0
        var drainRequested = false
        var flushWaiters: [FlushWaiter] = []
        var phase = Phase.idle
        var statistics = Statistics()

        var available: Int { buffer.count - head }
    }

    /// Where records are delivered.
    public let destination: any AnalyticsDestination
    /// The queue's tunables.
    public let configuration: Configuration
    private let clock: DeliveryClock
    private let state = Mutex(State())
    private let wakeup = Wakeup()
    private let log: LogLimiter
    private let diagnostics: FrontDiagnostics
    private let batchSize: Int

    /// Creates a queue in front of `destination`. It starts nothing; call ``run()``.
    public init<C: Clock>(
        destination: any AnalyticsDestination,
        configuration: Configuration = Configuration(),
        clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        self.destination = destination
        self.configuration = configuration
        self.clock = DeliveryClock(clock)
        self.batchSize = max(1, configuration.batchSize ?? destination.preferredBatchSize)
        let diagnostics = FrontDiagnostics(logger: configuration.logger, observer: configuration.observer)
        self.diagnostics = diagnostics
        self.log = LogLimiter(
            logger: diagnostics,
            interval: configuration.logInterval,
            elapsed: self.clock.elapsed
        )
    }

    /// Counters for monitoring and tests.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// Reports to `logger` and `observer` from now on, for what ``Configuration/logger`` and
    /// ``Configuration/observer`` leave unset (the Braze provider passes its tag manager's on registration).
    public func inherit(logger: any DiagnosticLogger, observer: (any RuntimeObserver)?) {
        diagnostics.inherit(logger: logger, observer: observer)
    }

    /// Buffers `records` (there is no durability to wait for: returns `nil`).
    /// - Throws: `.queueFull` when the buffer is full, `.closed` once the queue drains or stopped.
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard !records.isEmpty else { return nil }
        let maximum = configuration.maximumBufferedRecords
        let flushCount = configuration.flushCount
        let outcome = state.withLock { state -> Result<Bool, AnalyticsSinkError> in
            if state.phase == .draining || state.phase == .stopped {
                state.statistics.droppedRecords += records.count
                return .failure(AnalyticsSinkError(.closed, "the queue is shut down"))
            }
            guard state.available + records.count <= maximum else {
                state.statistics.droppedRecords += records.count
                return .failure(AnalyticsSinkError(.queueFull, "the queue holds \(state.available) records"))
            }
            state.buffer.append(contentsOf: records)
            state.enqueued += UInt64(records.count)
            state.statistics.enqueuedRecords += records.count
            return .success(state.available >= flushCount)
        }
        if let observer = diagnostics.observer {
            switch outcome {
            case .success: observer.observe(.recordsEnqueued(count: records.count))
            case .failure(let error): observer.observe(.recordsRejected(count: records.count, reason: error.message))
            }
        }
        switch outcome {
        case .success(let wake):
            if wake { wakeup.signal() }
            return nil
        case .failure(let error):
            log.log(.error, key: "refused", "queue: refused \(records.count) records: \(error.message)")
            throw error
        }
    }

    /// Returns once everything enqueued so far is settled (delivered, rejected or dropped); needs
    /// ``run()`` to be running.
    /// - Throws: the first ``DeliveryError`` that settled some of those records without delivering them.
    public func flush() async throws {
        let error: DeliveryError? = await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                if state.settled >= state.enqueued { return true }
                state.flushWaiters.append(FlushWaiter(target: state.enqueued, continuation: continuation))
                state.drainRequested = true
                return false
            }
            if done { continuation.resume(returning: nil) } else { wakeup.signal() }
        }
        if let error { throw error }
    }

    // MARK: Running

    /// Delivers until the task is cancelled, then drains (see the type's documentation) and returns.
    /// - Throws: `AnalyticsSinkError` `.closed` when called twice.
    public func run() async throws {
        try state.withLock { state throws(AnalyticsSinkError) in
            guard state.phase == .idle else { throw AnalyticsSinkError(.closed, "the queue already ran") }
            state.phase = .running
        }
        // The loop runs in its own task, joined here, so that the drain after our cancellation can still
        // sleep and send; the drain deadline bounds it.
        let drainStarted = Latch()
        let (limit, clock) = (configuration.drainTimeout, self.clock)
        let worker = Task {
            await runWithDrainDeadline(limit, on: clock, drainStarted: drainStarted) { await self.deliveryLoop() }
            self.finish()
        }
        await withTaskCancellationHandler {
            await worker.value
        } onCancel: {
            self.state.withLock { if $0.phase == .running { $0.phase = .draining } }
            drainStarted.open()
            self.wakeup.signal()
        }
        log.flush()
    }

    private enum Step {
        case deliver([AnalyticsRecord], through: UInt64)
        case wait
        case exit
    }

    private func deliveryLoop() async {
        let flushCount = configuration.flushCount
        var drainDeadline: Duration?
        var lastFlush = clock.elapsed()
        while true {
            let now = clock.elapsed()
            let intervalDue = now - lastFlush >= configuration.flushInterval
            let step = state.withLock { state -> Step in
                let draining = state.phase == .draining
                if state.available == 0 {
                    state.drainRequested = false
                    state.buffer.removeAll(keepingCapacity: true)
                    state.head = 0
                    return draining ? .exit : .wait
                }
                guard draining || state.drainRequested || intervalDue || state.available >= flushCount else {
                    return .wait
                }
                let count = min(state.available, batchSize)
                let records = Array(state.buffer[state.head..<(state.head + count)])
                state.head += count
                state.taken += UInt64(count)
                if state.head > 4096 && state.head * 2 > state.buffer.count {
                    state.buffer.removeFirst(state.head)
                    state.head = 0
                }
                return .deliver(records, through: state.taken)
            }
            switch step {
            case .exit:
                return
            case .wait:
                let remaining = configuration.flushInterval - (clock.elapsed() - lastFlush)
                if remaining <= .zero {
                    lastFlush = clock.elapsed()
                } else {
                    _ = await wakeup.sleep(remaining, on: clock)
                }
            case .deliver(let records, let through):
                lastFlush = clock.elapsed()
                await deliver(records, through: through, drainDeadline: &drainDeadline)
            }
        }
    }

    /// Delivers one batch with retries; settles it.
    private func deliver(_ batch: [AnalyticsRecord], through: UInt64, drainDeadline: inout Duration?) async {
        var pending = batch
        var attempt = 0
        var failure: DeliveryError?
        while !pending.isEmpty {
            if Task.isCancelled {
                // The drain's hard deadline passed: what is left is dropped.
                failure = drop(pending, DeliveryError(.retriesExhausted, "the drain deadline passed"))
                break
            }
            attempt += 1
            if state.withLock({ $0.phase == .draining }), drainDeadline == nil {
                drainDeadline = clock.elapsed() + configuration.drainTimeout
            }
            let result: DeliveryResult
            let records = pending
            let destination = self.destination
            if let deadline = drainDeadline {
                guard
                    let answer = await withDeadline(
                        deadline - clock.elapsed(),
                        on: clock,
                        {
                            await destination.deliver(records)
                        }
                    )
                else {
                    failure = drop(pending, DeliveryError(.retriesExhausted, "the drain deadline passed"))
                    break
                }
                result = answer
            } else {
                result = await destination.deliver(records)
            }
            failure = failure ?? record(result)
            pending = result.retryable
            guard !pending.isEmpty, let error = result.retryError else { break }
            state.withLock { $0.statistics.failedDeliveries += 1 }
            diagnostics.observer?.observe(.deliveryFailed(message: error.message))
            if error.code == .shutDown {
                failure = drop(pending, error)
                break
            }
            // A refused request (a key or endpoint problem) says nothing about the records: it pauses
            // delivery without using up their attempts.
            if error.code == .requestRefused { attempt -= 1 }
            guard attempt < configuration.retry.maximumAttempts else {
                var exhausted = DeliveryError(
                    .retriesExhausted,
                    "\(error.message) after \(attempt) attempts",
                    status: error.status,
                    errors: error.errors
                )
                exhausted.retryAfter = error.retryAfter
                failure = drop(pending, exhausted)
                break
            }
            let delay = configuration.retry.delay(afterAttempt: attempt, error: error, random: configuration.random())
            if error.code == .requestRefused {
                log.log(
                    .error,
                    key: "refused-request",
                    "queue: \(error); \(pending.count) records kept, delivery paused for \(delay)"
                )
            } else {
                log.log(
                    .warning,
                    key: "retry",
                    "queue: delivering \(pending.count) records failed (attempt \(attempt)): \(error); "
                        + "retrying in \(delay)"
                )
            }
            if let deadline = drainDeadline, clock.elapsed() + delay > deadline {
                failure = drop(pending, DeliveryError(.retriesExhausted, "\(error.message); the drain deadline passed"))
                break
            }
            state.withLock { $0.statistics.retries += 1 }
            if drainDeadline == nil {
                // Wait out the delay; a cancellation meanwhile starts the drain, which retries at once.
                let wakeAt = clock.elapsed() + delay
                while clock.elapsed() < wakeAt, !state.withLock({ $0.phase == .draining }) {
                    _ = await wakeup.sleep(wakeAt - clock.elapsed(), on: clock)
                }
            } else {
                try? await clock.sleep(delay)
            }
        }
        settle(through: through, failure: failure)
    }

    /// Counts and logs a result's accepted, rejected and warned-about records; the first rejection.
    private func record(_ result: DeliveryResult) -> DeliveryError? {
        let backlog = state.withLock {
            $0.statistics.deliveredRecords += result.accepted.count
            $0.statistics.rejectedRecords += result.rejectedCount
            return $0.available
        }
        diagnostics.report(result, backlog: { (backlog, 0) }, logs: log, label: "queue")
        return result.rejected.first?.error
    }

    private func drop(_ records: [AnalyticsRecord], _ error: DeliveryError) -> DeliveryError {
        state.withLock { $0.statistics.droppedRecords += records.count }
        diagnostics.observer?.observe(.recordsRejected(count: records.count, reason: error.message))
        log.log(.error, key: "dropped", "queue: dropped \(records.count) records: \(error)")
        return error
    }

    private func settle(through: UInt64, failure: DeliveryError?) {
        let ready = state.withLock { state -> [(CheckedContinuation<DeliveryError?, Never>, DeliveryError?)] in
            let first = state.settled + 1
            state.settled = max(state.settled, through)
            var ready: [(CheckedContinuation<DeliveryError?, Never>, DeliveryError?)] = []
            var waiting: [FlushWaiter] = []
            for var waiter in state.flushWaiters {
                if let failure, waiter.error == nil, waiter.target >= first { waiter.error = failure }
                if waiter.target <= state.settled {
                    ready.append((waiter.continuation, waiter.error))
                } else {
                    waiting.append(waiter)
                }
            }
            state.flushWaiters = waiting
            return ready
        }
        for (continuation, error) in ready { continuation.resume(returning: error) }
    }

    private func finish() {
        let (left, waiters) = state.withLock { state -> (Int, [FlushWaiter]) in
            state.phase = .stopped
            let left = state.available
            state.statistics.droppedRecords += left
            state.buffer.removeAll()
            state.head = 0
            defer { state.flushWaiters.removeAll() }
            return (left, state.flushWaiters)
        }
        if left > 0 {
            log.log(.error, key: "dropped", "queue: dropped \(left) records: the drain deadline passed")
        }
        for waiter in waiters {
            waiter.continuation.resume(returning: waiter.error ?? DeliveryError(.shutDown, "the queue stopped"))
        }
    }
}
