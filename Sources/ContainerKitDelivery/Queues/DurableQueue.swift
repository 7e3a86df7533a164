import ContainerKit
import Dispatch
import Foundation
import Synchronization

/// The durable front of the delivery pipeline: a crash-safe queue in front of one
/// ``AnalyticsDestination``. Every record is appended to files on disk and reported durable only once
/// it is `fsync`ed; the delivery loop forwards records and acknowledges each batch the destination
/// settled; after a restart (even a `kill -9`) the unacknowledged records are delivered again. Delivery
/// is therefore **at least once**, and a crash re-delivers at most the batches in flight (one, unless
/// ``DeliverySettings/maximumConcurrentDeliveries`` allows more) and one settled batch whose acknowledgement
/// was being written (the next batch goes out while the last one's acknowledgement is written).
///
/// ```swift
/// let braze = BrazeUsersTrackDestination(endpoint: url, apiKey: key)
/// let queue = try DurableQueue(directory: "/var/lib/app/braze-queue", destination: braze)
/// BrazeTagProvider(sink: queue).register(on: tagManager)
/// // in the service's task group:  try await queue.run()
/// let result = session.push(event: "purchase")   // the tag's records are enqueued, not yet durable
/// try await result.waitUntilDurable()             // now they survive a crash
/// ```
///
/// ## Parts
/// The engine is the one ``DeliveryPipeline`` (its machine, ``DeliveryPipelineMachine``, owns the
/// durability waiters, the batches in flight and their acknowledgement order) over the segment log's store
/// (``SegmentRecordStore``: ``DurableQueueMachine`` decides appends, commits, rotation, the memory buffer
/// and the read cursor; ``SegmentLog`` owns the files; a writer and a reader thread do the I/O).
///
/// ## Lifetime
/// The initializer opens the directory (taking its lock and recovering what a previous run left) and
/// starts nothing. ``run()`` starts the writer thread and the delivery loop. Cancelling its task stops it
/// at once: deliveries in flight are abandoned, what is enqueued is committed, the writer thread is
/// joined, and every committed record stays on disk for the next run. ``gracefulShutdown()`` **drains**
/// instead, in this order: new records are refused; everything enqueued is committed; the delivery loop
/// delivers what it can within ``DeliverySettings/drainTimeout`` (a request still running at the deadline
/// is cancelled; undelivered records stay on disk); the directory is released and ``run()`` returns. A
/// swift-service-lifecycle host bridges the two in one line: `try await withGracefulShutdownHandler {
/// try await queue.run() } onGracefulShutdown: { queue.gracefulShutdown() }`.
///
/// ## Durability barrier and group commit
/// ``enqueue(_:)`` returns at once with a ``DurabilityToken`` (the provider puts it in the tag's
/// ``TagOutput``, so `PushResult.waitUntilDurable()` waits for it); ``waitUntilDurable(ticket:)``
/// returns once that ticket's records are written and `fsync`ed, or throws if **that** commit failed —
/// other commits are unaffected (after a full disk, operation resumes when space returns). The writer
/// thread takes every line enqueued while its previous `fsync` ran and writes them with one `write` and
/// one `fsync`; lines are encoded on the producer's thread, outside any lock.
///
/// ## Bounded disk use
/// When segments plus pending lines would exceed ``Configuration/maximumQueueBytes``, new records are
/// refused (`.queueFull`). Records already queued are never dropped.
///
/// ## Delivery
/// Records go out in batches of ``DeliverySettings/batchSize`` (by default the destination's preferred
/// batch size), one batch at a time or, with ``DeliverySettings/maximumConcurrentDeliveries``, several at once;
/// acknowledgements stay in log order either way. Recently committed records come from memory
/// (up to ``Configuration/maximumBufferedRecords``); a backlog beyond that, and what a previous run left,
/// is read back from disk. Retryable failures (429 with `Retry-After`, 5xx, timeouts) are retried with
/// ``DeliveryRetryPolicy``'s jittered backoff, without limit (durable records are never dropped);
/// rejections are dropped with the destination's message. The first failure is logged at once, then at
/// most once per ``DeliverySettings/logInterval`` with a count. An unreadable segment is reported with its
/// name and skipped; the good records are still delivered.
public final class DurableQueue: AnalyticsSink, DurabilitySource, Runnable {
    /// Tunables of a queue: the ``DeliverySettings`` every front shares, and the segment log's own.
    public struct Configuration: Sendable {
        /// Batch size, deliveries at once, retries, drain and start timeouts, logging and observing — the
        /// settings every front shares. A durable queue's retries are unlimited (0.1 s doubling to 30 s,
        /// jittered): durable records are never dropped.
        public var delivery = DeliverySettings(
            retry: DeliveryRetryPolicy(maximumAttempts: .max, baseDelay: .milliseconds(100), maximumDelay: .seconds(30))
        )
        /// A segment is sealed and a new one started once it would pass this many bytes (8 MiB).
        public var maximumSegmentBytes = 8 << 20
        /// The most bytes the queue's segments and pending lines may hold (1 GiB); beyond, new records
        /// are refused.
        public var maximumQueueBytes = 1 << 30
        /// Committed records kept in memory for delivery; a backlog beyond is read back from disk.
        public var maximumBufferedRecords = 10_000
        /// How long the delivery loop lets a partial batch wait for more records before it delivers it
        /// (zero by default: at once — except that, without a flush or the drain waiting, a partial batch
        /// always waits for the commit in flight when appended records are being committed). A few hundred
        /// milliseconds turn a steady trickle of small commits into full batches — far fewer requests to the
        /// destination (Braze counts requests against its rate limit) — at the price of that much delivery
        /// delay. Never applies while ``flush()`` waits or during the drain.
        public var deliveryLinger: Duration = .zero
        /// How long the writer pauses after each commit before it takes the next one, so that records keep
        /// gathering (zero by default: at once). A writer that was idle commits the first records without
        /// delay, so a quiet queue keeps its latency; under many concurrent producers a few hundred
        /// microseconds fold several commits into one `write` and one `fsync` — less CPU per record — at
        /// the price of up to that much more time before a record is durable (PostgreSQL's `commit_delay`
        /// is the same idea).
        public var commitDelay: Duration = .zero
        /// How often, at most, the ack file is `fdatasync`ed (1 s; also before a segment is deleted and at
        /// the end of a run). Every batch's acknowledgement is written as soon as it is settled (beside the
        /// next batch's delivery), so a process crash re-delivers at most the batch in flight and one settled
        /// batch; a power loss at most this interval's batches more.
        public var acknowledgementSyncInterval: Duration = .seconds(1)
        /// Injected file-system faults (tests only).
        package var faults: SegmentLogFaults?

        /// The defaults.
        public init() {}
    }

    /// Counters for monitoring and tests: the pipeline's one ``DeliveryStatistics`` (with the segment
    /// log's own: records read from disk, corrupt lines, segments and bytes on disk).
    public typealias Statistics = DeliveryStatistics

    /// The queue's directory.
    public let directory: String
    /// Where records are delivered.
    public let destination: any AnalyticsDestination
    /// The queue's tunables.
    public let configuration: Configuration

    /// The store: the segment log, its writer and reader threads.
    let store: SegmentRecordStore
    /// The engine: the one delivery pipeline.
    let pipeline: DeliveryPipeline<SegmentRecordStore>
    private let diagnostics: FrontDiagnostics
    let logs: LogLimiter
    /// What recovery found wrong on disk, logged when ``run()`` starts (by then the queue reports to the
    /// manager's logger).
    private let recoveryWarnings: [String]

    /// Opens (creating if needed) the queue in `directory` and recovers what a previous run left
    /// unacknowledged. Starts nothing: call ``run()``.
    /// - Throws: ``AnalyticsSinkError``: `.unwritable` or `.io` when the directory cannot be used,
    ///   `.locked` when another queue has it open, `.corruptFile` (naming the file) for an ack or segment
    ///   index out of range.
    public init<C: Clock>(
        directory: String,
        destination: any AnalyticsDestination,
        configuration: Configuration = Configuration(),
        clock: C = ContinuousClock()
    ) throws(AnalyticsSinkError) where C.Duration == Duration {
        self.directory = directory
        self.destination = destination
        self.configuration = configuration
        let elapsed = DeliveryClock(clock).elapsed
        let diagnostics = FrontDiagnostics(
            logger: configuration.delivery.logger,
            observer: configuration.delivery.observer
        )
        self.diagnostics = diagnostics
        let logs = LogLimiter(logger: diagnostics, interval: configuration.delivery.logInterval, elapsed: elapsed)
        self.logs = logs
        let batchSize = max(1, configuration.delivery.batchSize ?? destination.preferredBatchSize)
        // The `queue` metadata of the queue's messages.
        let label = directory
        store = try SegmentRecordStore(
            directory: directory,
            settings: SegmentRecordStore.Settings(
                maximumSegmentBytes: configuration.maximumSegmentBytes,
                maximumQueueBytes: configuration.maximumQueueBytes,
                maximumBufferedRecords: configuration.maximumBufferedRecords,
                batchSize: batchSize,
                commitDelay: configuration.commitDelay,
                acknowledgementSyncInterval: configuration.acknowledgementSyncInterval,
                faults: configuration.faults
            ),
            report: { problem in
                logs.log(
                    .warning,
                    key: "store:\(problem.prefix(60))",
                    "the durable queue's store reported a problem",
                    metadata: ["queue": label, "problem": problem]
                )
            }
        )
        recoveryWarnings = store.log.recovery.warnings
        var settings = configuration.delivery
        settings.batchSize = batchSize
        settings.linger = configuration.deliveryLinger
        settings.lingerCount = batchSize
        settings.name = label
        pipeline = DeliveryPipeline(store: store, destination: destination, settings: settings, clock: clock)
    }

    /// Counters for monitoring and tests.
    public var statistics: Statistics { pipeline.statistics }

    /// The ticket of the latest enqueue (0 before the first).
    public var lastTicket: UInt64 { store.lastTicket }

    /// Flushes waiting for their records to be delivered (for tests).
    var waitingFlushCount: Int { pipeline.waitingFlushCount }

    /// Reports to `logger` and `observer` from now on, for what ``DeliverySettings/logger`` and
    /// ``DeliverySettings/observer`` leave unset (the Braze provider passes its tag manager's on registration).
    public func inherit(logger: any DiagnosticLogger, observer: (any DeliveryObserver)?) {
        diagnostics.inherit(logger: logger, observer: observer)
        pipeline.inherit(logger: logger, observer: observer)
    }

    /// Encodes `records` once and hands them to the writer; returns at once with the token to wait on.
    /// - Throws: `.queueFull` or `.closed`; nothing is enqueued then.
    @discardableResult
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard !records.isEmpty else { return nil }
        return try enqueue(EncodedRecords(records))
    }

    /// Hands records the provider encoded to the writer, as they are; returns at once with the token.
    /// - Throws: `.queueFull` or `.closed`; nothing is enqueued then.
    @discardableResult
    public func enqueue(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard let token = try pipeline.enqueue(encoded) else { return nil }
        return DurabilityToken(source: self, ticket: token.ticket)
    }

    /// Enqueues `records` and returns once they are durable (needs ``run()``).
    /// - Throws: ``DurabilityError``: `.full` or `.stopped` when the queue refused them (nothing is
    ///   enqueued then), or the error of their commit (see ``waitUntilDurable(ticket:)``).
    public func append(_ records: [AnalyticsRecord]) async throws(DurabilityError) {
        let token: DurabilityToken?
        do {
            token = try enqueue(records)
        } catch {
            throw DurabilityError(error)
        }
        guard let token else { return }
        try await waitUntilDurable(ticket: token.ticket)
    }

    /// Returns once the records of `ticket` are written and `fsync`ed (needs ``run()``).
    /// - Throws: ``DurabilityError``: the write error if the commit holding `ticket` failed (its records
    ///   are not queued: `.diskFull`, `.io`, …); `.stopped` when the queue stopped first; `.notRunning` when
    ///   ``run()`` did not begin within ``DeliverySettings/startTimeout``.
    public func waitUntilDurable(ticket: UInt64) async throws(DurabilityError) {
        try await pipeline.waitUntilDurable(ticket: ticket)
    }

    /// Returns once the records of every one of `tickets` are written and `fsync`ed (or their writes
    /// failed).
    /// - Throws: the error of the first commit that held one of `tickets` and failed, although later
    ///   commits (and so later tickets) may have succeeded.
    public func waitUntilDurable(tickets: [UInt64]) async throws(DurabilityError) {
        try await pipeline.waitUntilDurable(tickets: tickets)
    }

    /// Returns once everything enqueued so far has been written and `fsync`ed.
    /// - Throws: the error of the latest commit if it failed.
    public func waitUntilDurable() async throws(DurabilityError) {
        try await waitUntilDurable(ticket: lastTicket)
    }

    /// Returns once everything enqueued so far is durable and settled by the destination, and nothing more
    /// is on disk (needs ``run()``).
    /// - Throws: a commit error, a rejection of some of those records, or the destination's error if a
    ///   delivery fails meanwhile (the records stay queued and are retried).
    public func flush() async throws {
        try await waitUntilDurable()
        try await pipeline.flush()
    }

    // MARK: Running

    /// Starts the drain: new records are refused; everything enqueued is committed; what is on disk is
    /// delivered for at most ``DeliverySettings/drainTimeout``; then ``run()`` returns. Undelivered records stay
    /// on disk for the next run. Safe to call at any time, and more than once.
    public func gracefulShutdown() { pipeline.gracefulShutdown() }

    /// Works until the task is cancelled — then it stops at once: deliveries in flight are abandoned and
    /// every committed record stays on disk for the next run — or until ``gracefulShutdown()`` drained (see
    /// the type's documentation).
    /// - Throws: `.closed` when called twice.
    public func run() async throws {
        for warning in recoveryWarnings {
            diagnostics.warning(
                "the durable queue recovered its files with a problem",
                metadata: ["queue": directory, "problem": warning]
            )
        }
        defer { logs.flush() }
        try await pipeline.run()
    }

    // MARK: Inspection

    /// The records in `directory` that no destination has confirmed yet, oldest first, read without
    /// opening the queue (a snapshot; torn, unparsable and corrupt lines are left out).
    /// - Throws: `.corruptFile` for an ack or segment index out of range; the error of a segment that
    ///   cannot be read.
    public static func pendingRecords(in directory: String) throws(AnalyticsSinkError) -> [AnalyticsRecord] {
        var warnings: [String] = []
        let ack = try SegmentLog.readAck(directory, warnings: &warnings)
        let segments = try SegmentLog.listSegments(directory)
        let (cursor, _, kept) = SegmentLog.recover(
            ack: ack,
            segments: segments,
            directory: directory,
            warnings: &warnings
        )
        let result = SegmentLog.read(directory, from: cursor, segments: kept, limit: .max, sealed: { _ in true })
        if let failure = result.failure { throw failure }
        return result.records
    }
}
