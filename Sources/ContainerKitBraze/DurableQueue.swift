import ContainerKit
import Dispatch
import Foundation
import Synchronization

/// The durable front of the delivery pipeline: a crash-safe queue in front of one
/// ``AnalyticsDestination``. Every record is appended to files on disk and reported durable only once
/// it is `fsync`ed; the delivery loop forwards records and acknowledges each batch the destination
/// settled; after a restart (even a `kill -9`) the unacknowledged records are delivered again. Delivery
/// is therefore **at least once**, and a crash re-delivers at most the batches in flight (one, unless
/// ``Configuration/maximumConcurrentDeliveries`` allows more).
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
/// ## Three parts
/// ``DurableQueueMachine`` holds the state and decides (enqueue, commit, next batch, confirm — each
/// step returns the actions to perform); ``SegmentLog`` owns the files (append, `fsync`, rotate,
/// acknowledge, read); this class is the shell: the writer thread, the delivery loop and the waiters.
///
/// ## Lifetime
/// The initializer opens the directory (taking its lock and recovering what a previous run left) and
/// starts nothing. ``run()`` starts the writer thread and the delivery loop. Cancelling its task stops it
/// at once: deliveries in flight are abandoned, what is enqueued is committed, the writer thread is
/// joined, and every committed record stays on disk for the next run. ``gracefulShutdown()`` **drains**
/// instead, in this order: new records are refused; everything enqueued is committed; the delivery loop
/// delivers what it can within ``Configuration/drainTimeout`` (a request still running at the deadline
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
/// Records go out in batches of ``Configuration/deliveryBatchSize`` (by default the destination's preferred
/// batch size), one batch at a time or, with ``Configuration/maximumConcurrentDeliveries``, several at once;
/// acknowledgements stay in log order either way. Recently committed records come from memory
/// (up to ``Configuration/maximumBufferedRecords``); a backlog beyond that, and what a previous run left,
/// is read back from disk. Retryable failures (429 with `Retry-After`, 5xx, timeouts) are retried with
/// ``DeliveryRetryPolicy``'s jittered backoff, without limit (durable records are never dropped);
/// rejections are dropped with the destination's message. The first failure is logged at once, then at
/// most once per ``Configuration/logInterval`` with a count. An unreadable segment is reported with its
/// name and skipped; the good records are still delivered.
public final class DurableQueue: AnalyticsSink, DurabilitySource {
    /// Tunables of a queue.
    public struct Configuration: Sendable {
        /// A segment is sealed and a new one started once it would pass this many bytes (8 MiB).
        public var maximumSegmentBytes = 8 << 20
        /// The most bytes the queue's segments and pending lines may hold (1 GiB); beyond, new records
        /// are refused.
        public var maximumQueueBytes = 1 << 30
        /// Records per delivery; `nil` uses the destination's preferred batch size.
        public var deliveryBatchSize: Int?
        /// Committed records kept in memory for delivery; a backlog beyond is read back from disk.
        public var maximumBufferedRecords = 10_000
        /// How many batches may be out to the destination at once (1). One request at a time caps delivery
        /// at one batch per round trip — against Braze, tens of milliseconds away, a few thousand records a
        /// second — so a busy service raises it (Braze allows thousands of requests per second). The batch
        /// ends are still acknowledged in log order (a batch once it and every batch before it are settled),
        /// and a crash re-delivers at most this many batches.
        public var maximumConcurrentDeliveries = 1
        /// The backoff of failed deliveries (0.1 s doubling to 30 s, jittered; attempts unlimited).
        public var retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(100),
            maximumDelay: .seconds(30)
        )
        /// How long the delivery loop lets a partial batch wait for more records before it delivers it
        /// (zero by default: at once). A few hundred milliseconds turn a steady trickle of small commits
        /// into full batches — far fewer requests to the destination (Braze counts requests against its
        /// rate limit) — at the price of that much delivery delay. Never applies while ``flush()`` waits
        /// or during the drain.
        public var deliveryLinger: Duration = .zero
        /// How long the writer pauses after each commit before it takes the next one, so that records keep
        /// gathering (zero by default: at once). A writer that was idle commits the first records without
        /// delay, so a quiet queue keeps its latency; under many concurrent producers a few hundred
        /// microseconds fold several commits into one `write` and one `fsync` — less CPU per record — at
        /// the price of up to that much more time before a record is durable (PostgreSQL's `commit_delay`
        /// is the same idea).
        public var commitDelay: Duration = .zero
        /// How long the drain's deliveries may take after cancellation (10 s).
        public var drainTimeout: Duration = .seconds(10)
        /// How often, at most, a repeated failure is logged again (60 s).
        public var logInterval: Duration = .seconds(60)
        /// How often, at most, the ack file is `fdatasync`ed (1 s; also before a segment is deleted and at
        /// the end of a run). Every batch's acknowledgement is written at once, so a process crash
        /// re-delivers at most the batch in flight; a power loss at most this interval's batches more.
        public var acknowledgementSyncInterval: Duration = .seconds(1)
        /// Random numbers in `0..<1` for jitter (injectable for tests).
        public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
        /// Where problems are reported; `nil` (the default): the logger of the tag manager the queue's
        /// provider is registered on (standard error until then).
        public var logger: (any DiagnosticLogger)?
        /// Where enqueued, durable, delivered and rejected records, the backlog and delivery failures are
        /// reported (for metrics); `nil` (the default): the observer of the tag manager the queue's provider
        /// is registered on, if it has one.
        public var observer: (any RuntimeObserver)?
        /// Injected file-system faults (tests only).
        package var faults: SegmentLogFaults?

        /// The defaults.
        public init() {}
    }

    /// Counters for monitoring and tests.
    public struct Statistics: Sendable, Hashable {
        /// Group commits made: each is one `write` and one `fsync` of a segment.
        public var commits = 0
        /// Records made durable by this queue.
        public var durableRecords = 0
        /// Records the destination accepted.
        public var deliveredRecords = 0
        /// Records the destination rejected (dropped).
        public var rejectedRecords = 0
        /// Deliveries that failed in a retryable way (and were retried).
        public var failedDeliveries = 0
        /// Acknowledgements written (one per settled batch).
        public var acknowledgements = 0
        /// Records read back from disk (a previous run's, or a backlog beyond the memory buffer).
        public var recordsReadFromDisk = 0
        /// Torn, unparsable or corrupt lines ignored (only provably bad data is ever skipped).
        public var skippedLines = 0
        /// Of ``skippedLines``, the lines whose checksum did not match their bytes (flipped bits on disk).
        public var corruptLines = 0
        /// Reads of the backlog that failed for the moment (a segment that could not be opened or read:
        /// `EMFILE`, `EIO`, `EACCES`, …) and were retried after a backoff; nothing after them is acknowledged.
        public var failedReads = 0
        /// Records refused: the queue was full or shut down, or their commit failed.
        public var refusedRecords = 0
        /// Segment files on disk.
        public var segmentCount = 0
        /// Bytes in segments and pending lines.
        public var queueBytes = 0
    }

    private enum Phase { case idle, running, draining, stopped }

    private struct Shell {
        var machine: DurableQueueMachine
        var phase = Phase.idle
        var started = false
        var durabilityWaiters: [(ticket: UInt64, continuation: CheckedContinuation<AnalyticsSinkError?, Never>)] = []
        var flushWaiters: [(target: SegmentLog.Position, continuation: CheckedContinuation<(any Error)?, Never>)] = []
        var writerStopping = false
        var writerExit: CheckedContinuation<Void, Never>?
        var writerExited = false
        var lastAckSync: Duration?
        /// When the drain's deliveries must end (on the queue's clock), set when the drain starts.
        var drainDeadline: Duration?
        var statistics = Statistics()
    }

    /// The queue's directory.
    public let directory: String
    /// Where records are delivered.
    public let destination: any AnalyticsDestination
    /// The queue's tunables.
    public let configuration: Configuration

    private let log: SegmentLog
    private let shell: Mutex<Shell>
    private let writerWakeup = DispatchSemaphore(value: 0)
    private let deliveryWakeup = Wakeup()
    /// Opens when the drain starts: interrupts the backoff of every delivery.
    private let drainStarted = Latch()
    private let clock: DeliveryClock
    private let logs: LogLimiter
    private let diagnostics: FrontDiagnostics
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
        self.clock = DeliveryClock(clock)
        let diagnostics = FrontDiagnostics(logger: configuration.logger, observer: configuration.observer)
        self.diagnostics = diagnostics
        self.logs = LogLimiter(
            logger: diagnostics,
            interval: configuration.logInterval,
            elapsed: self.clock.elapsed
        )
        log = try SegmentLog(directory: directory, faults: configuration.faults)
        let recovery = log.recovery
        recoveryWarnings = recovery.warnings
        shell = Mutex(
            Shell(
                machine: DurableQueueMachine(
                    segments: recovery.segments,
                    cursor: recovery.cursor,
                    nextSegmentIndex: recovery.nextIndex,
                    maximumSegmentBytes: configuration.maximumSegmentBytes,
                    maximumQueueBytes: configuration.maximumQueueBytes,
                    maximumBufferedRecords: configuration.maximumBufferedRecords,
                    batchSize: configuration.deliveryBatchSize ?? destination.preferredBatchSize,
                    maximumInFlight: configuration.maximumConcurrentDeliveries
                )
            )
        )
    }

    /// Counters for monitoring and tests.
    public var statistics: Statistics {
        shell.withLock { shell in
            var statistics = shell.statistics
            statistics.segmentCount = shell.machine.segments.count
            statistics.queueBytes = shell.machine.queueBytes
            return statistics
        }
    }

    /// The ticket of the latest enqueue (0 before the first).
    public var lastTicket: UInt64 { shell.withLock { $0.machine.lastTicket } }

    // MARK: Appending

    /// What the observer's backlog reports: records this process made durable and not yet delivered or
    /// rejected (records left by an earlier run count only in the bytes), and the bytes the queue holds.
    private var backlog: (records: Int, bytes: Int) {
        shell.withLock { shell in
            let statistics = shell.statistics
            let records = statistics.durableRecords - statistics.deliveredRecords - statistics.rejectedRecords
            return (max(0, records), shell.machine.queueBytes)
        }
    }

    /// Flushes waiting for their records to be delivered (for tests).
    var waitingFlushCount: Int { shell.withLock { $0.flushWaiters.count } }

    /// Reports to `logger` and `observer` from now on, for what ``Configuration/logger`` and
    /// ``Configuration/observer`` leave unset (the Braze provider passes its tag manager's on registration).
    public func inherit(logger: any DiagnosticLogger, observer: (any RuntimeObserver)?) {
        diagnostics.inherit(logger: logger, observer: observer)
    }

    /// Encodes `records` and hands them to the writer; returns at once with the token to wait on.
    /// - Throws: `.queueFull` or `.closed`; nothing is enqueued then.
    @discardableResult
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard !records.isEmpty else { return nil }
        var json = JSONByteWriter(capacity: records.count * 200)
        var lineEnds: [Int] = []
        lineEnds.reserveCapacity(records.count)
        for record in records {
            SegmentLog.appendLine(record, to: &json)
            lineEnds.append(json.bytes.count)
        }
        let lines = json.bytes
        let outcome = shell.withLock { shell -> Result<(UInt64, [DurableQueueMachine.Action]), AnalyticsSinkError> in
            do throws(AnalyticsSinkError) {
                return .success(try shell.machine.enqueue(lines, records: records, lineEnds: lineEnds))
            } catch {
                shell.statistics.refusedRecords += records.count
                return .failure(error)
            }
        }
        switch outcome {
        case .success(let (ticket, actions)):
            perform(actions)
            diagnostics.observer?.observe(.recordsEnqueued(count: records.count))
            return DurabilityToken(source: self, ticket: ticket)
        case .failure(let error):
            diagnostics.observer?.observe(.recordsRejected(count: records.count, reason: error.message))
            logs.log(
                .error,
                key: "refused",
                "durable queue '\(directory)': refused \(records.count) records: \(error.message)"
            )
            throw error
        }
    }

    /// Enqueues `records` and returns once they are durable (needs ``run()``).
    public func append(_ records: [AnalyticsRecord]) async throws(AnalyticsSinkError) {
        guard let token = try enqueue(records) else { return }
        try await waitUntilDurable(ticket: token.ticket)
    }

    /// Returns once the records of `ticket` are written and `fsync`ed (needs ``run()``).
    /// - Throws: the write error if the commit holding `ticket` failed (its records are not queued).
    public func waitUntilDurable(ticket: UInt64) async throws(AnalyticsSinkError) {
        let error: AnalyticsSinkError? = await withCheckedContinuation { continuation in
            let immediate: AnalyticsSinkError?? = shell.withLock { shell in
                if ticket <= shell.machine.resolvedTicket { return .some(shell.machine.failure(for: ticket)) }
                if shell.phase == .stopped {
                    return .some(
                        AnalyticsSinkError(.closed, "the durable queue stopped before ticket \(ticket) was written")
                    )
                }
                shell.durabilityWaiters.append((ticket, continuation))
                return .none
            }
            if case .some(let result) = immediate { continuation.resume(returning: result) }
        }
        if let error { throw error }
    }

    /// Returns once the records of every one of `tickets` are written and `fsync`ed (or their writes
    /// failed): one wait for the highest, then each ticket's own outcome.
    /// - Throws: the error of the first commit that held one of `tickets` and failed, although later
    ///   commits (and so later tickets) may have succeeded.
    public func waitUntilDurable(tickets: [UInt64]) async throws(AnalyticsSinkError) {
        guard let highest = tickets.max() else { return }
        try await waitUntilDurable(ticket: highest)
        let error = shell.withLock { shell -> AnalyticsSinkError? in
            for ticket in tickets { if let error = shell.machine.failure(for: ticket) { return error } }
            return nil
        }
        if let error { throw error }
    }

    /// Returns once everything enqueued so far has been written and `fsync`ed.
    /// - Throws: the error of the latest commit if it failed (earlier failures were reported to the
    ///   callers waiting for their own tickets).
    public func waitUntilDurable() async throws(AnalyticsSinkError) {
        try await waitUntilDurable(ticket: lastTicket)
    }

    /// Returns once everything enqueued so far is durable and settled by the destination (needs
    /// ``run()``).
    /// - Throws: a commit error, or the destination's error if a delivery fails meanwhile (the records
    ///   stay queued and are retried).
    public func flush() async throws {
        try await waitUntilDurable()
        let error: (any Error)? = await withCheckedContinuation { continuation in
            let done = shell.withLock { shell -> Bool in
                if shell.machine.caughtUp { return true }
                shell.flushWaiters.append((shell.machine.durableEnd, continuation))
                return false
            }
            if done { continuation.resume(returning: nil) } else { deliveryWakeup.signal() }
        }
        if let error { throw error }
    }

    private func perform(_ actions: [DurableQueueMachine.Action]) {
        for action in actions {
            switch action {
            case .wakeWriter: writerWakeup.signal()
            case .wakeDelivery: deliveryWakeup.signal()
            case .resolveDurability(let through): resolveDurability(through: through)
            case .acknowledge(let position, let deleting): acknowledge(position, deleting: deleting)
            case .caughtUp: endFlushes(through: nil)
            }
        }
    }

    private func resolveDurability(through: UInt64) {
        let ready = shell.withLock {
            shell -> [(CheckedContinuation<AnalyticsSinkError?, Never>, AnalyticsSinkError?)] in
            var ready: [(CheckedContinuation<AnalyticsSinkError?, Never>, AnalyticsSinkError?)] = []
            shell.durabilityWaiters.removeAll { waiter in
                guard waiter.ticket <= through else { return false }
                ready.append((waiter.continuation, shell.machine.failure(for: waiter.ticket)))
                return true
            }
            return ready
        }
        for (continuation, error) in ready { continuation.resume(returning: error) }
    }

    private func acknowledge(_ position: SegmentLog.Position, deleting: [UInt64]) {
        let now = clock.elapsed()
        let interval = configuration.acknowledgementSyncInterval
        let sync = shell.withLock { shell -> Bool in
            guard let last = shell.lastAckSync, now - last < interval else {
                shell.lastAckSync = now
                return true
            }
            return false
        }
        do {
            try log.acknowledge(position, deleting: deleting, sync: sync)
            shell.withLock { $0.statistics.acknowledgements += 1 }
        } catch {
            logs.log(
                .warning,
                key: "ack",
                "durable queue '\(directory)': could not record delivery progress: \(error.message)"
            )
        }
        endFlushes(through: position)
    }

    /// Answers the flushes whose records are all delivered: every one when the queue is caught up, else those
    /// whose target is at or before `position`, the acknowledged end.
    private func endFlushes(through position: SegmentLog.Position?) {
        let ready = shell.withLock { shell -> [CheckedContinuation<(any Error)?, Never>] in
            var ready: [CheckedContinuation<(any Error)?, Never>] = []
            let caughtUp = shell.machine.caughtUp
            shell.flushWaiters.removeAll { waiter in
                guard caughtUp || position.map({ waiter.target <= $0 }) == true else { return false }
                ready.append(waiter.continuation)
                return true
            }
            return ready
        }
        for continuation in ready { continuation.resume(returning: nil) }
    }

    // MARK: Running

    /// Starts the drain: new records are refused; everything enqueued is committed; what is on disk is
    /// delivered for at most ``Configuration/drainTimeout``; then ``run()`` returns. Undelivered records stay
    /// on disk for the next run. Safe to call at any time, and more than once.
    public func gracefulShutdown() {
        let actions = shell.withLock { shell -> [DurableQueueMachine.Action] in
            guard shell.phase == .running || shell.phase == .idle else { return [] }
            shell.phase = .draining
            shell.drainDeadline = clock.elapsed() + configuration.drainTimeout
            return shell.machine.close()
        }
        drainStarted.open()
        perform(actions)
        writerWakeup.signal()
        deliveryWakeup.signal()
    }

    /// Works until the task is cancelled — then it stops at once: deliveries in flight are abandoned and
    /// every committed record stays on disk for the next run — or until ``gracefulShutdown()`` drained (see
    /// the type's documentation).
    /// - Throws: `.closed` when called twice.
    public func run() async throws {
        try shell.withLock { shell throws(AnalyticsSinkError) in
            guard !shell.started else { throw AnalyticsSinkError(.closed, "the durable queue already ran") }
            shell.started = true
            // A graceful shutdown that came first leaves the queue draining: it delivers what is on disk.
            if shell.phase == .idle { shell.phase = .running }
        }
        for warning in recoveryWarnings {
            diagnostics.warning("durable queue: \(warning)", metadata: ["queue": directory])
        }
        let thread = Thread { [self] in writerLoop() }
        thread.name = "containerkit.durable-queue.writer"
        thread.start()
        // The loop runs in this task: cancelling run() stops it at once (what is committed stays on disk);
        // gracefulShutdown() makes it drain, bounded by the drain deadline.
        let (limit, clock) = (configuration.drainTimeout, self.clock)
        await runWithDrainDeadline(limit, on: clock, drainStarted: drainStarted) { await self.deliveryLoop() }
        // New records are refused from now on (after a cancellation as after the drain).
        perform(shell.withLock { $0.machine.close() })
        // The writer finished every commit before the delivery loop ended; stop and join it.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = shell.withLock { shell -> Bool in
                shell.writerStopping = true
                if shell.writerExited { return true }
                shell.writerExit = continuation
                return false
            }
            writerWakeup.signal()
            if exited { continuation.resume() }
        }
        let (durability, flushes) = shell.withLock { shell in
            shell.phase = .stopped
            defer {
                shell.durabilityWaiters.removeAll()
                shell.flushWaiters.removeAll()
            }
            return (shell.durabilityWaiters, shell.flushWaiters)
        }
        let stopped = AnalyticsSinkError(.closed, "the durable queue stopped")
        for waiter in durability { waiter.continuation.resume(returning: stopped) }
        for waiter in flushes { waiter.continuation.resume(returning: stopped) }
        logs.flush()
        do {
            try log.syncAck()
        } catch {
            diagnostics.warning("durable queue '\(directory)': \(error.message)")
        }
        log.close()
    }

    // MARK: Writer thread

    private func writerLoop() {
        // Whether the last round found records waiting (the queue is busy: let more gather first).
        var busy = false
        while true {
            if busy, configuration.commitDelay > .zero { Self.sleep(configuration.commitDelay) }
            let (commit, stop) = shell.withLock { shell -> (DurableQueueMachine.Commit?, Bool) in
                let commit = shell.machine.takeCommit()
                return (commit, commit == nil && shell.writerStopping)
            }
            if stop { break }
            guard let commit else {
                busy = false
                writerWakeup.wait()
                continue
            }
            busy = true
            let actions: [DurableQueueMachine.Action]
            do throws(SegmentLog.AppendFailure) {
                try log.append(commit.bytes, to: commit.segment, at: commit.offset)
                actions = shell.withLock { shell in
                    shell.statistics.commits += 1
                    shell.statistics.durableRecords += commit.records.count
                    return shell.machine.committed(commit)
                }
                if let observer = diagnostics.observer {
                    observer.observe(.recordsDurable(count: commit.records.count))
                    let (records, bytes) = backlog
                    observer.observe(.queueBacklog(records: records, bytes: bytes))
                }
            } catch {
                let usable: Bool
                if case .clean = error { usable = true } else { usable = false }
                actions = shell.withLock { shell in
                    shell.statistics.refusedRecords += commit.records.count
                    return shell.machine.commitFailed(commit, error.error, segmentUsable: usable)
                }
                diagnostics.observer?.observe(
                    .recordsRejected(count: commit.records.count, reason: error.error.message)
                )
                logs.log(
                    .error,
                    key: "commit",
                    "durable queue '\(directory)': \(commit.records.count) records not queued: \(error.error.message)"
                )
            }
            perform(actions)
        }
        let exit = shell.withLock { shell -> CheckedContinuation<Void, Never>? in
            shell.writerExited = true
            defer { shell.writerExit = nil }
            return shell.writerExit
        }
        exit?.resume()
    }

    /// Blocks the writer thread for `duration` (``Configuration/commitDelay``).
    private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }

    // MARK: Delivery loop

    /// What a delivery child task of the loop reports.
    private enum DeliveryEvent: Sendable {
        /// The destination settled the batch (accepted or rejected every record).
        case settled(DurableQueueMachine.Batch)
        /// The drain's deadline passed before the batch was settled; it stays queued.
        case abandoned
        /// The loop's wake-up fired (records were committed, a flush began, the drain started) or its
        /// timed wait ended.
        case woken
    }

    /// Hands batches to the destination — up to ``Configuration/maximumConcurrentDeliveries`` at once, each
    /// in a child task that retries it until it is settled — and confirms them as they settle. One child
    /// at a time waits on the wake-up while there is room for another batch (or nothing is running).
    private func deliveryLoop() async {
        let slots = shell.withLock { $0.machine.maximumInFlight }
        await withTaskGroup(of: DeliveryEvent.self) { group in
            var running = 0
            // The child waiting on the wake-up, if any, and when it wakes by itself (`nil`: only when signalled).
            var waking = false
            var wakerDeadline: Duration?
            var staleReads = 0
            // After a failed disk read: how many in a row, and when to read again.
            var failedReads = 0
            var readAgainAt: Duration?
            var lingerUntil: Duration?
            var abandoned = false
            fill: while true {
                if Task.isCancelled { break }  // the drain's hard deadline passed
                let (draining, deadline) = shell.withLock { ($0.phase == .draining, $0.drainDeadline) }
                if let deadline, clock.elapsed() >= deadline || (abandoned && running == 0) {
                    logs.log(
                        .warning,
                        key: "drain",
                        abandoned
                            ? "durable queue '\(directory)': undelivered records stay queued for the next run"
                            : "durable queue '\(directory)': the drain deadline passed; "
                                + "undelivered records stay queued for the next run"
                    )
                    break
                }
                // A partial batch may wait (``Configuration/deliveryLinger``) for more records.
                var wakeAfter = deadline.map { $0 - clock.elapsed() }
                var lingering = false
                if configuration.deliveryLinger > .zero, !draining, lingers() {
                    let until = lingerUntil ?? clock.elapsed() + configuration.deliveryLinger
                    lingerUntil = until
                    if clock.elapsed() < until {
                        lingering = true
                        wakeAfter = until - clock.elapsed()
                    }
                } else {
                    lingerUntil = nil
                }
                if let at = readAgainAt {
                    if clock.elapsed() < at {
                        // The backlog could not be read: nothing moves until the backoff ends.
                        lingering = true
                        let left = at - clock.elapsed()
                        wakeAfter = wakeAfter.map { min($0, left) } ?? left
                    } else {
                        readAgainAt = nil
                    }
                }
                if !lingering {
                    switch takeNextStep(staleReads: &staleReads) {
                    case .deliver(let batch):
                        lingerUntil = nil
                        failedReads = 0
                        running += 1
                        group.addTask { await self.deliverUntilSettled(batch) }
                        continue fill
                    case .readAgain(let pause):
                        failedReads = 0
                        if pause { await Task.yield() }
                        continue fill
                    case .readFailed(let error):
                        failedReads += 1
                        let delay = configuration.retry.delay(
                            afterAttempt: failedReads,
                            error: nil,
                            random: configuration.random()
                        )
                        readAgainAt = clock.elapsed() + delay
                        logs.log(
                            .warning,
                            key: "read-failed",
                            "durable queue '\(directory)': \(error.message) (attempt \(failedReads)); "
                                + "retrying in \(delay), nothing after it is acknowledged"
                        )
                        continue fill
                    case .nothing:
                        let done = shell.withLock {
                            $0.machine.everythingResolved && $0.machine.caughtUp
                        }
                        if draining && running == 0 && done { break fill }
                    }
                }
                if waking, let wakeAfter, wakerDeadline.map({ $0 > clock.elapsed() + wakeAfter }) ?? true {
                    // The waiting child would sleep past the time needed now: end it and start a timed one.
                    deliveryWakeup.signal()
                }
                // With every delivery slot busy, only a settled batch (or the drain's clock) moves the loop on.
                let slotFree = running < slots
                if !waking, slotFree || wakeAfter != nil {
                    waking = true
                    wakerDeadline = wakeAfter.map { clock.elapsed() + $0 }
                    group.addTask {
                        if let wakeAfter {
                            _ = await self.deliveryWakeup.sleep(wakeAfter, on: self.clock)
                        } else {
                            await self.deliveryWakeup.wait()
                        }
                        return .woken
                    }
                }
                guard let event = await group.next() else { break }
                switch event {
                case .woken:
                    waking = false
                case .settled(let batch):
                    running -= 1
                    perform(shell.withLock { $0.machine.confirm(batch) })
                case .abandoned:
                    running -= 1
                    abandoned = true
                }
            }
            group.cancelAll()
        }
    }

    private enum NextStep {
        case deliver(DurableQueueMachine.Batch)
        /// A disk read failed before it found a record: read again after a backoff.
        case readFailed(AnalyticsSinkError)
        /// A disk read found nothing to deliver; ask again (after a pause when that keeps happening).
        case readAgain(pause: Bool)
        /// Nothing new (or the in-flight limit is reached).
        case nothing
    }

    /// The machine's next step, with a disk read performed on the way.
    private func takeNextStep(staleReads: inout Int) -> NextStep {
        let step = shell.withLock { $0.machine.nextBatch() }
        switch step {
        case .wait:
            return .nothing
        case .deliver(let batch):
            return .deliver(batch)
        case .readDisk(let from, let segments, let sealed):
            let result = SegmentLog.read(
                directory,
                from: from,
                segments: segments,
                limit: shell.withLock { $0.machine.batchSize },
                sealed: { sealed.contains($0) },
                faults: configuration.faults
            )
            for message in result.messages {
                logs.log(.warning, key: "read:\(message.prefix(60))", "durable queue '\(directory)': \(message)")
            }
            let (batch, stale, actions) = shell.withLock { shell in
                shell.statistics.recordsReadFromDisk += result.records.count
                shell.statistics.skippedLines += result.skippedLines
                shell.statistics.corruptLines += result.corruptLines
                if result.failure != nil && result.records.isEmpty { shell.statistics.failedReads += 1 }
                return shell.machine.diskRead(result, from: from)
            }
            perform(actions)
            if let batch { return .deliver(batch) }
            if let failure = result.failure { return .readFailed(failure) }
            // The sizes read under the lock were already stale: read again, and pause if that keeps happening.
            staleReads = stale ? staleReads + 1 : 0
            return .readAgain(pause: staleReads > 1)
        }
    }

    /// Delivers `batch`, retrying what is retryable with the backoff of ``Configuration/retry`` until the
    /// destination has settled every record, or until the drain's deadline passes.
    private func deliverUntilSettled(_ batch: DurableQueueMachine.Batch) async -> DeliveryEvent {
        var records = batch.records
        var attempt = 0
        while true {
            if Task.isCancelled { return .abandoned }
            let result: DeliveryResult
            if let deadline = shell.withLock({ $0.drainDeadline }) {
                let (destination, sending) = (self.destination, records)
                let left = deadline - clock.elapsed()
                guard left > .zero,
                    let answer = await withDeadline(left, on: clock, { await destination.deliver(sending) })
                else { return .abandoned }
                result = answer
            } else {
                result = await destination.deliver(records)
            }
            report(result)
            guard let error = result.retryError, !result.retryable.isEmpty else { return .settled(batch) }
            attempt += 1
            records = result.retryable
            let waiters = shell.withLock { shell in
                shell.statistics.failedDeliveries += 1
                defer { shell.flushWaiters.removeAll() }
                return shell.flushWaiters.map(\.continuation)
            }
            for waiter in waiters { waiter.resume(returning: error) }
            let delay = configuration.retry.delay(afterAttempt: attempt, error: error, random: configuration.random())
            if error.code == .requestRefused {
                logs.log(
                    .error,
                    key: "refused-request",
                    "durable queue '\(directory)': \(error); \(result.retryable.count) records kept, delivery "
                        + "paused for \(delay)"
                )
            } else {
                logs.log(
                    .warning,
                    key: "retry",
                    "durable queue '\(directory)': delivering \(result.retryable.count) records failed "
                        + "(attempt \(attempt)): \(error); retrying in \(delay)"
                )
            }
            if let deadline = shell.withLock({ $0.drainDeadline }) {
                if clock.elapsed() + delay > deadline { return .abandoned }
                try? await clock.sleep(delay)
            } else {
                // The backoff ends early when the drain starts (the drain then retries within its deadline).
                let drainStarted = self.drainStarted
                _ = await withDeadline(delay, on: clock) { await drainStarted.wait() }
            }
        }
    }

    /// Counts and reports what one delivery did.
    private func report(_ result: DeliveryResult) {
        shell.withLock {
            $0.statistics.deliveredRecords += result.accepted.count
            $0.statistics.rejectedRecords += result.rejectedCount
        }
        if let error = result.retryError, !result.retryable.isEmpty {
            diagnostics.observer?.observe(.deliveryFailed(message: error.message))
        }
        diagnostics.report(result, backlog: { backlog }, logs: logs, label: "durable queue '\(directory)'")
    }

    /// Whether the delivery loop should let a partial batch wait for more records: the queue runs, nobody
    /// flushes, and fewer records than a batch are waiting in memory.
    private func lingers() -> Bool {
        shell.withLock { $0.phase == .running && $0.flushWaiters.isEmpty && $0.machine.holdsPartialBatch }
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
