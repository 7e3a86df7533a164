import ContainerKit
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A crash-safe queue in front of another sink: every record is appended to files on disk and
/// acknowledged only once it is durable; a background task forwards records to the downstream
/// ``AcknowledgingSink`` and deletes only what it confirmed; after a restart (even a `kill -9`) the
/// unconfirmed records are delivered again. Delivery is therefore **at least once**.
///
/// ```swift
/// let braze = BrazeUsersTrackSink(endpoint: url, apiKey: key)
/// let queue = try DurableQueueSink(directory: "/var/lib/app/braze-queue", downstream: braze)
/// BrazeTagProvider(sink: queue).register(on: tagManager)
/// session.push(event: "purchase")                 // the tag's records are enqueued, not yet durable
/// try await queue.waitUntilDurable()               // now they survive a crash
/// ```
///
/// ## Durability barrier
/// ``enqueue(_:)`` (and ``receive(_:)``) return at once; ``enqueue(_:)`` gives a ``Ticket``.
/// ``waitUntilDurable(_:)`` returns once everything up to that ticket has been written and `fsync`ed,
/// or throws if writing it failed. ``append(_:)`` does both. Without an argument,
/// ``waitUntilDurable()`` waits for everything enqueued so far.
///
/// ## Group commit
/// One writer thread takes every line enqueued while its previous `fsync` ran and writes them with one
/// `write` and one `fsync`, so many concurrent producers share each `fsync` (``Statistics/commits``
/// counts them). Lines are encoded on the producer's thread, outside any lock.
///
/// ## Files
/// The directory holds append-only segments of JSON lines (rotated at
/// ``Configuration/maximumSegmentBytes``), an `ack` file with the position after the last confirmed
/// record (replaced atomically), and a `lock` file (`flock`; a second queue on the same directory gets
/// ``AnalyticsSinkError/Code/locked``). Opening a directory always starts a new segment; a torn last line
/// left by a crash in an old segment was never acknowledged and is ignored. Fully confirmed segments are
/// deleted. ``pendingRecords(in:)`` reads what is still undelivered without opening the queue, for tools
/// and for crash tests (run a child that appends and prints what was acknowledged, `kill -9` it, then
/// check that every acknowledged record is pending or delivered after reopening).
///
/// ## Bounded disk use
/// When segments plus pending lines would exceed ``Configuration/maximumQueueBytes``, new records are
/// refused (``enqueue(_:)`` throws ``AnalyticsSinkError/Code/queueFull``; ``receive(_:)`` logs an
/// error and counts them in ``Statistics/refusedRecords``). Records already queued are never dropped.
///
/// ## Delivery
/// Records are forwarded in order, in batches of ``Configuration/deliveryBatchSize`` (by default the
/// downstream's ``AcknowledgingSink/preferredBatchSize``). Recently committed records are handed over
/// from memory (up to ``Configuration/maximumBufferedRecords``); a backlog beyond that, and everything
/// left from a previous run, is read back from disk. A batch the downstream throws for is retried
/// after an exponential backoff (``Configuration/retryBaseDelay`` doubling to
/// ``Configuration/retryMaximumDelay``) until it succeeds.
///
/// Call ``shutdown()`` when done: it makes everything durable, delivers what it can (stopping at the
/// first downstream failure; the rest stays on disk for the next run), stops the writer thread and
/// releases the directory. The queue does not shut the downstream down.
public final class DurableQueueSink: AnalyticsSink {
    /// Tunables of a queue.
    public struct Configuration: Sendable {
        /// A segment is sealed and a new one started once it holds this many bytes (8 MiB).
        public var maximumSegmentBytes = 8 << 20
        /// The most bytes the queue's segments and pending lines may hold (1 GiB); beyond, new records
        /// are refused.
        public var maximumQueueBytes = 1 << 30
        /// Records per downstream delivery; `nil` uses the downstream's preferred batch size.
        public var deliveryBatchSize: Int?
        /// Committed records kept in memory for delivery; a backlog beyond is read back from disk.
        public var maximumBufferedRecords = 10_000
        /// The first delay after a failed delivery.
        public var retryBaseDelay: Duration = .milliseconds(100)
        /// The longest delay between delivery attempts.
        public var retryMaximumDelay: Duration = .seconds(30)
        /// How often, at most, delivery progress is written to the `ack` file (1 s); also whenever a confirmed
        /// segment can be deleted and at shutdown. A crash re-delivers at most this much.
        public var acknowledgementInterval: Duration = .seconds(1)
        /// How the delivery task waits between attempts (injectable so tests need not wait).
        public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
        /// Where problems are reported.
        public var logger: any Logger = StandardErrorLogger()

        /// The defaults.
        public init() {}
    }

    /// Identifies one ``enqueue(_:)`` call, for ``waitUntilDurable(_:)``. Tickets grow with each call.
    public struct Ticket: Sendable, Hashable, Comparable {
        /// The call's sequence number (1 for the first call; 0 means nothing).
        public let sequence: UInt64

        /// Creates a ticket.
        public init(sequence: UInt64) { self.sequence = sequence }

        /// Orders tickets by sequence.
        public static func < (lhs: Ticket, rhs: Ticket) -> Bool { lhs.sequence < rhs.sequence }
    }

    /// Counters for monitoring and tests.
    public struct Statistics: Sendable, Hashable {
        /// Group commits made: each is one `write` and one `fsync` of a segment.
        public var commits = 0
        /// Every `fsync`: commits, directory syncs and ack-file replacements.
        public var fsyncs = 0
        /// Records made durable by this queue.
        public var durableRecords = 0
        /// Records the downstream confirmed.
        public var deliveredRecords = 0
        /// Downstream deliveries that threw (and were retried).
        public var failedDeliveries = 0
        /// Records read back from disk (a previous run's, or a backlog beyond the memory buffer).
        public var recordsReadFromDisk = 0
        /// Torn or unreadable lines ignored.
        public var skippedLines = 0
        /// Records refused: the queue was full or shut down, or their commit failed.
        public var refusedRecords = 0
        /// Segment files on disk.
        public var segmentCount = 0
        /// Bytes in segments and pending lines.
        public var queueBytes = 0
    }

    typealias Position = DurableQueueLayout.Position

    private struct Segment {
        var index: UInt64
        var size: Int
        var sealed: Bool
    }

    private struct Delivered {
        var record: AnalyticsRecord
        var end: Position
    }

    private struct Commit {
        var bytes: [UInt8]
        var records: [AnalyticsRecord]
        var lineEnds: [Int]
        var tickets: ClosedRange<UInt64>
    }

    private enum WriterWork {
        case stop
        case idle(Duration?)
        case work(Commit?, ack: Position?)
    }

    private enum DeliveryStep {
        case stop
        case wait
        case batch([AnalyticsRecord], end: Position)
        case readDisk(from: Position, segments: [DurableQueueLayout.SegmentExtent], sealed: Set<UInt64>)
    }

    private struct State {
        // Appending.
        var lastTicket: UInt64 = 0
        var pendingBytes: [UInt8] = []
        var pendingRecords: [AnalyticsRecord] = []
        var pendingLineEnds: [Int] = []
        var pendingFirstTicket: UInt64 = 0
        var resolvedTicket: UInt64 = 0
        var failedTickets: [(range: ClosedRange<UInt64>, error: AnalyticsSinkError)] = []
        var durabilityWaiters: [(ticket: UInt64, continuation: CheckedContinuation<AnalyticsSinkError?, Never>)] = []
        var closed = false
        // Writer thread.
        var writerIdle = false
        var writerStopping = false
        var writerExited = false
        var writerExitWaiters: [CheckedContinuation<Void, Never>] = []
        var ackToPersist: Position?
        var activeSegmentSuspect = false
        // Files.
        var segments: [Segment] = []
        var queueBytes = 0
        // Delivery.
        var cursor = Position(segment: 0, offset: 0)
        var memory: [Delivered] = []
        var memoryHead = 0
        var diskBacklog = true
        var deliveryWaiter: CheckedContinuation<Void, Never>?
        var deliverySignalled = false
        var deliveryStopping = false
        var flushWaiters: [(target: Position, continuation: CheckedContinuation<(any Error)?, Never>)] = []
        var shutdownTask: Task<Void, Never>?
        var statistics = Statistics()

        var durableEnd: Position {
            guard let active = segments.last else { return cursor }
            return Position(segment: active.index, offset: active.size)
        }

        var memoryCount: Int { memory.count - memoryHead }

        /// Moves the cursor past sealed segments it has reached the end of.
        mutating func normalizeCursor() {
            while let segment = segments.first(where: { $0.index == cursor.segment }), segment.sealed,
                cursor.offset >= segment.size,
                let next = segments.first(where: { $0.index > cursor.segment })
            {
                cursor = Position(segment: next.index, offset: 0)
            }
        }
    }

    /// The queue's directory.
    public let directory: String
    /// The sink confirmed records are forwarded to.
    public let downstream: any AcknowledgingSink
    /// The queue's tunables.
    public let configuration: Configuration

    private let state = Mutex(State())
    private let writerWakeup = DispatchSemaphore(value: 0)
    private let lockFD: Int32
    // Only the writer thread touches the active segment's descriptor after `init`.
    private nonisolated(unsafe) var activeFD: Int32
    private let batchSize: Int
    private let deliveryTask = Mutex<Task<Void, Never>?>(nil)

    /// Opens (creating if needed) the queue in `directory`, replays what a previous run left
    /// unconfirmed, and starts delivering to `downstream`.
    /// - Throws: ``AnalyticsSinkError``: `.unwritable` or `.io` when the directory cannot be used,
    ///   `.locked` when another queue has it open.
    public init(
        directory: String,
        downstream: any AcknowledgingSink,
        configuration: Configuration = Configuration()
    ) throws(AnalyticsSinkError) {
        self.directory = directory
        self.downstream = downstream
        self.configuration = configuration
        self.batchSize = max(1, configuration.deliveryBatchSize ?? downstream.preferredBatchSize)

        try FileIO.makeDirectory(directory)
        let lockPath = DurableQueueLayout.path(directory, DurableQueueLayout.lockFileName)
        lockFD = try FileIO.openFile(lockPath, O_RDWR | O_CREAT)
        var opened: Int32 = -1
        do throws(AnalyticsSinkError) {
            guard flock(lockFD, LOCK_EX | LOCK_NB) == 0 else {
                if errno == EWOULDBLOCK {
                    throw AnalyticsSinkError(.locked, "queue directory '\(directory)' is in use by another queue")
                }
                throw FileIO.error("locking", lockPath)
            }
            _ = unlink(DurableQueueLayout.path(directory, DurableQueueLayout.ackFileName + ".tmp"))
            let ack = try DurableQueueLayout.readAck(directory)
            var found = try DurableQueueLayout.listSegments(directory)
            // Segments before the ack were fully confirmed; a crash may have kept them.
            if let ack {
                for segment in found where segment.index < ack.segment {
                    _ = unlink(DurableQueueLayout.path(directory, DurableQueueLayout.segmentName(segment.index)))
                }
                found.removeAll { $0.index < ack.segment }
            }
            let nextIndex = max(found.last.map { $0.index + 1 } ?? 1, (ack?.segment ?? 0) + 1)
            let cursor = DurableQueueLayout.startPosition(ack: ack, segments: found, nextIndex: nextIndex)
            let activePath = DurableQueueLayout.path(directory, DurableQueueLayout.segmentName(nextIndex))
            opened = try FileIO.openFile(activePath, O_WRONLY | O_CREAT | O_EXCL | O_APPEND)
            try FileIO.syncDirectory(directory)
            state.withLock { state in
                state.segments = found.map { Segment(index: $0.index, size: $0.size, sealed: true) }
                state.segments.append(Segment(index: nextIndex, size: 0, sealed: false))
                state.queueBytes = found.reduce(0) { $0 + $1.size }
                state.cursor = cursor
                state.diskBacklog = !found.isEmpty
                state.normalizeCursor()
                state.statistics.fsyncs = 1
            }
        } catch {
            if opened >= 0 { close(opened) }
            close(lockFD)
            throw error
        }
        activeFD = opened
        let thread = Thread { [self] in writerLoop() }
        thread.name = "containerkit.durable-queue.writer"
        thread.start()
        deliveryTask.withLock { $0 = Task { [self] in await deliveryLoop() } }
    }

    // MARK: Appending

    /// The ticket of the latest ``enqueue(_:)`` call (sequence 0 before the first).
    public var lastTicket: Ticket { Ticket(sequence: state.withLock { $0.lastTicket }) }

    /// Counters for monitoring and tests.
    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.segmentCount = state.segments.count
            statistics.queueBytes = state.queueBytes
            return statistics
        }
    }

    /// Enqueues `records` without waiting; a refusal (queue full or shut down) is logged.
    public func receive(_ records: [AnalyticsRecord]) {
        do {
            try enqueue(records)
        } catch {
            configuration.logger.error(
                "durable queue '\(directory)': refused \(records.count) records: \(error.message)"
            )
        }
    }

    /// Encodes `records` and hands them to the writer thread; returns at once with the ticket to wait on.
    /// - Throws: `.queueFull` or `.closed`; nothing is enqueued then.
    @discardableResult
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> Ticket {
        guard !records.isEmpty else { return lastTicket }
        var json = JSONByteWriter(capacity: records.count * 200)
        var lineEnds: [Int] = []
        lineEnds.reserveCapacity(records.count)
        for record in records {
            record.write(to: &json)
            json.raw(0x0A)
            lineEnds.append(json.bytes.count)
        }
        let lines = json.bytes
        let maximumBytes = configuration.maximumQueueBytes
        let directory = self.directory
        let (ticket, wake) = try state.withLock { (state: inout State) throws(AnalyticsSinkError) -> (UInt64, Bool) in
            guard !state.closed else {
                state.statistics.refusedRecords += records.count
                throw AnalyticsSinkError(.closed, "durable queue '\(directory)' is shut down")
            }
            let size = lines.count
            guard state.queueBytes + size <= maximumBytes else {
                state.statistics.refusedRecords += records.count
                throw AnalyticsSinkError(
                    .queueFull,
                    "durable queue '\(directory)' holds \(state.queueBytes) bytes; the limit is \(maximumBytes)"
                )
            }
            state.lastTicket += 1
            if state.pendingRecords.isEmpty { state.pendingFirstTicket = state.lastTicket }
            let base = state.pendingBytes.count
            state.pendingBytes.append(contentsOf: lines)
            for end in lineEnds { state.pendingLineEnds.append(base + end) }
            state.pendingRecords.append(contentsOf: records)
            state.queueBytes += size
            let wake = state.writerIdle
            state.writerIdle = false
            return (state.lastTicket, wake)
        }
        if wake { writerWakeup.signal() }
        return Ticket(sequence: ticket)
    }

    /// Enqueues `records` and returns once they are durable.
    public func append(_ records: [AnalyticsRecord]) async throws(AnalyticsSinkError) {
        let ticket = try enqueue(records)
        try await waitUntilDurable(ticket)
    }

    /// Returns once every record enqueued up to `ticket` is written and `fsync`ed.
    /// - Throws: the write error if a commit covering `ticket` failed (those records are not queued).
    public func waitUntilDurable(_ ticket: Ticket) async throws(AnalyticsSinkError) {
        let error: AnalyticsSinkError? = await withCheckedContinuation { continuation in
            let immediate: AnalyticsSinkError?? = state.withLock { state in
                if ticket.sequence <= state.resolvedTicket {
                    return .some(Self.failure(for: ticket.sequence, in: state))
                }
                state.durabilityWaiters.append((ticket.sequence, continuation))
                return .none
            }
            if case .some(let result) = immediate { continuation.resume(returning: result) }
        }
        if let error { throw error }
    }

    /// Returns once everything enqueued so far is durable.
    public func waitUntilDurable() async throws(AnalyticsSinkError) {
        try await waitUntilDurable(lastTicket)
    }

    private static func failure(for ticket: UInt64, in state: State) -> AnalyticsSinkError? {
        // A ticket stands for everything up to it: it fails if any commit at or before it failed
        // since the oldest failure kept.
        state.failedTickets.last { $0.range.lowerBound <= ticket }?.error
    }

    // MARK: Writer thread

    private func writerLoop() {
        let clock = ContinuousClock()
        let ackInterval = configuration.acknowledgementInterval
        var lastAck = clock.now - ackInterval
        while true {
            let now = clock.now
            let work = state.withLock { state -> WriterWork in
                var commit: Commit?
                if !state.pendingRecords.isEmpty {
                    commit = Commit(
                        bytes: state.pendingBytes,
                        records: state.pendingRecords,
                        lineEnds: state.pendingLineEnds,
                        tickets: state.pendingFirstTicket...state.lastTicket
                    )
                    state.pendingBytes = []
                    state.pendingBytes.reserveCapacity(commit!.bytes.count)
                    state.pendingRecords = []
                    state.pendingLineEnds = []
                }
                // Delivery progress is recorded at most once per interval, unless it frees a segment or
                // the queue is stopping: a crash then re-delivers at most one interval's records.
                var ack: Position?
                if let pending = state.ackToPersist {
                    let freesSegment = state.segments.first.map { $0.sealed && $0.index < pending.segment } ?? false
                    if freesSegment || state.writerStopping || now - lastAck >= ackInterval {
                        ack = pending
                        state.ackToPersist = nil
                    }
                }
                if commit != nil || ack != nil { return .work(commit, ack: ack) }
                if state.writerStopping { return .stop }
                state.writerIdle = true
                return .idle(state.ackToPersist == nil ? nil : ackInterval - (now - lastAck))
            }
            switch work {
            case .stop:
                close(activeFD)
                let waiters = state.withLock { state in
                    state.writerExited = true
                    defer { state.writerExitWaiters.removeAll() }
                    return state.writerExitWaiters
                }
                for waiter in waiters { waiter.resume() }
                return
            case .idle(nil):
                writerWakeup.wait()
            case .idle(let timeout?):
                let nanoseconds = max(
                    timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000,
                    1
                )
                if writerWakeup.wait(timeout: .now() + .nanoseconds(Int(nanoseconds))) == .timedOut {
                    state.withLock { $0.writerIdle = false }
                }
            case .work(let commit, let ack):
                if let commit { write(commit) }
                if let ack {
                    persistAck(ack)
                    lastAck = clock.now
                }
            }
        }
    }

    private func write(_ commit: Commit) {
        var failure: AnalyticsSinkError?
        var rotated = false
        let (index, size, needsRotation) = state.withLock { state in
            let active = state.segments[state.segments.count - 1]
            let full = active.size >= configuration.maximumSegmentBytes
            return (active.index, active.size, full || state.activeSegmentSuspect)
        }
        var activeIndex = index
        var activeSize = size
        if needsRotation && !commit.bytes.isEmpty {
            do {
                try rotate(from: index)
                activeIndex = index + 1
                activeSize = 0
                rotated = true
            } catch {
                failure = error
            }
        }
        let path = DurableQueueLayout.path(directory, DurableQueueLayout.segmentName(activeIndex))
        if failure == nil && !commit.bytes.isEmpty {
            do {
                try FileIO.writeAll(activeFD, commit.bytes, path: path)
                try FileIO.sync(activeFD, path: path)
            } catch {
                failure = error
                // Take back what may have been written; those records were never acknowledged. The segment
                // is sealed at its last good size and the next commit starts a new one, so that offsets stay
                // right even if the truncation failed.
                _ = ftruncate(activeFD, off_t(activeSize))
            }
        }
        let (waiters, wakeDelivery) = state.withLock {
            state -> ([(CheckedContinuation<AnalyticsSinkError?, Never>, AnalyticsSinkError?)], Bool) in
            if rotated {
                state.segments[state.segments.count - 1].sealed = true
                state.segments.append(Segment(index: activeIndex, size: 0, sealed: false))
                state.statistics.fsyncs += 1
                state.normalizeCursor()
            }
            state.activeSegmentSuspect = failure != nil
            if let failure {
                state.failedTickets.append((commit.tickets, failure))
                if state.failedTickets.count > 64 { state.failedTickets.removeFirst() }
                state.statistics.refusedRecords += commit.records.count
                state.queueBytes -= commit.bytes.count
            } else if !commit.bytes.isEmpty {
                state.statistics.commits += 1
                state.statistics.fsyncs += 1
                state.statistics.durableRecords += commit.records.count
                state.segments[state.segments.count - 1].size = activeSize + commit.bytes.count
                if !state.diskBacklog
                    && state.memoryCount + commit.records.count <= configuration.maximumBufferedRecords
                {
                    for (record, end) in zip(commit.records, commit.lineEnds) {
                        state.memory.append(
                            Delivered(record: record, end: Position(segment: activeIndex, offset: activeSize + end))
                        )
                    }
                } else {
                    state.diskBacklog = true
                }
            }
            state.resolvedTicket = commit.tickets.upperBound
            var ready: [(CheckedContinuation<AnalyticsSinkError?, Never>, AnalyticsSinkError?)] = []
            var waiting: [(ticket: UInt64, continuation: CheckedContinuation<AnalyticsSinkError?, Never>)] = []
            for waiter in state.durabilityWaiters {
                if waiter.ticket <= state.resolvedTicket {
                    ready.append((waiter.continuation, Self.failure(for: waiter.ticket, in: state)))
                } else {
                    waiting.append(waiter)
                }
            }
            state.durabilityWaiters = waiting
            return (ready, failure == nil && !commit.bytes.isEmpty)
        }
        if let failure {
            configuration.logger.error(
                "durable queue '\(directory)': \(commit.records.count) records not queued: \(failure.message)"
            )
        }
        for (continuation, error) in waiters { continuation.resume(returning: error) }
        if wakeDelivery { signalDelivery() }
    }

    private func rotate(from index: UInt64) throws(AnalyticsSinkError) {
        let path = DurableQueueLayout.path(directory, DurableQueueLayout.segmentName(index + 1))
        let fd = try FileIO.openFile(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND)
        do {
            try FileIO.syncDirectory(directory)
        } catch {
            close(fd)
            _ = unlink(path)
            throw error
        }
        close(activeFD)
        activeFD = fd
    }

    private func persistAck(_ position: Position) {
        let path = DurableQueueLayout.path(directory, DurableQueueLayout.ackFileName)
        do {
            try FileIO.replaceFile(path, with: Array(DurableQueueLayout.ackText(position).utf8), directory: directory)
        } catch {
            configuration.logger.warning(
                "durable queue '\(directory)': could not record delivery progress: \(error.message)"
            )
            return
        }
        let deletable = state.withLock { state -> [UInt64] in
            state.statistics.fsyncs += 2
            let done = state.segments.filter { $0.sealed && $0.index < position.segment }
            state.segments.removeAll { $0.sealed && $0.index < position.segment }
            for segment in done { state.queueBytes -= segment.size }
            return done.map(\.index)
        }
        for index in deletable {
            _ = unlink(DurableQueueLayout.path(directory, DurableQueueLayout.segmentName(index)))
        }
    }

    // MARK: Delivery

    private func signalDelivery() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            defer { state.deliveryWaiter = nil }
            if state.deliveryWaiter == nil { state.deliverySignalled = true }
            return state.deliveryWaiter
        }
        waiter?.resume()
    }

    private func deliveryLoop() async {
        var failures = 0
        var retry: ([AnalyticsRecord], Position)?
        while true {
            let next: ([AnalyticsRecord], Position)?
            if let retry {
                next = retry
            } else {
                next = await nextBatch()
            }
            guard let (records, end) = next else { return }
            retry = nil
            do {
                if !records.isEmpty { try await downstream.deliver(records) }
                failures = 0
                confirm(count: records.count, through: end)
            } catch {
                failures += 1
                let (waiters, stopping) = state.withLock { state in
                    state.statistics.failedDeliveries += 1
                    defer { state.flushWaiters.removeAll() }
                    return (state.flushWaiters.map(\.continuation), state.deliveryStopping)
                }
                for waiter in waiters { waiter.resume(returning: error) }
                configuration.logger.warning(
                    "durable queue '\(directory)': delivering \(records.count) records failed (attempt \(failures)); "
                        + "retrying later: \(error)"
                )
                if stopping || Task.isCancelled { return }
                retry = (records, end)
                do {
                    try await configuration.sleep(backoff(failures))
                } catch {
                    return
                }
                if Task.isCancelled || state.withLock({ $0.deliveryStopping }) { return }
            }
        }
    }

    private func backoff(_ failures: Int) -> Duration {
        let base = configuration.retryBaseDelay
        let maximum = configuration.retryMaximumDelay
        let factor = 1 << min(max(failures - 1, 0), 30)
        let delay = base * factor
        return delay > maximum ? maximum : delay
    }

    private func nextBatch() async -> ([AnalyticsRecord], Position)? {
        let batch = batchSize
        var emptyReads = 0
        while true {
            let step = state.withLock { state -> DeliveryStep in
                if state.deliveryStopping { return .stop }
                if state.memoryCount > 0 {
                    let end = min(state.memory.count, state.memoryHead + batch)
                    let taken = state.memory[state.memoryHead..<end]
                    let records = taken.map(\.record)
                    let position = taken.last!.end
                    state.memoryHead = end
                    if state.memoryHead > 4096 && state.memoryHead * 2 > state.memory.count {
                        state.memory.removeFirst(state.memoryHead)
                        state.memoryHead = 0
                    }
                    return .batch(records, end: position)
                }
                if state.diskBacklog {
                    let extents = state.segments.map {
                        DurableQueueLayout.SegmentExtent(index: $0.index, size: $0.size)
                    }
                    let sealed = Set(state.segments.filter(\.sealed).map(\.index))
                    return .readDisk(from: state.cursor, segments: extents, sealed: sealed)
                }
                return .wait
            }
            switch step {
            case .stop:
                return nil
            case .batch(let records, let end):
                return (records, end)
            case .readDisk(let from, let extents, let sealed):
                let result: DurableQueueLayout.ReadResult
                do {
                    result = try DurableQueueLayout.read(
                        directory,
                        from: from,
                        segments: extents,
                        limit: batch,
                        sealed: { sealed.contains($0) }
                    )
                } catch {
                    configuration.logger.error("durable queue '\(directory)': \(error.message)")
                    try? await configuration.sleep(backoff(4))
                    continue
                }
                for message in result.messages {
                    configuration.logger.warning("durable queue '\(directory)': \(message)")
                }
                let caughtUp = state.withLock { state -> Bool in
                    state.statistics.recordsReadFromDisk += result.records.count
                    state.statistics.skippedLines += result.skippedLines
                    if result.records.isEmpty && result.end >= state.durableEnd {
                        state.diskBacklog = false
                        return true
                    }
                    return false
                }
                if caughtUp {
                    if result.end > from { confirm(count: 0, through: result.end) }
                    continue
                }
                if result.records.isEmpty && result.end == from {
                    // The segment sizes read under the lock were already stale: read again at once, and
                    // only pause if that keeps happening.
                    emptyReads += 1
                    if emptyReads > 1 { try? await configuration.sleep(configuration.retryBaseDelay) }
                    continue
                }
                emptyReads = 0
                return (result.records, result.end)
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.deliverySignalled || state.deliveryStopping {
                            state.deliverySignalled = false
                            return true
                        }
                        state.deliveryWaiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            }
        }
    }

    private func confirm(count: Int, through end: Position) {
        let (ready, wake) = state.withLock { state -> ([CheckedContinuation<(any Error)?, Never>], Bool) in
            state.statistics.deliveredRecords += count
            if end > state.cursor { state.cursor = end }
            state.normalizeCursor()
            state.ackToPersist = state.cursor
            let cursor = state.cursor
            var ready: [CheckedContinuation<(any Error)?, Never>] = []
            state.flushWaiters.removeAll { waiter in
                guard waiter.target <= cursor else { return false }
                ready.append(waiter.continuation)
                return true
            }
            let wake = state.writerIdle
            state.writerIdle = false
            return (ready, wake)
        }
        if wake { writerWakeup.signal() }
        for waiter in ready { waiter.resume(returning: nil) }
    }

    // MARK: Flush and shutdown

    /// Returns once everything enqueued so far is durable and confirmed by the downstream.
    /// - Throws: a commit error, or the downstream's error if a delivery fails meanwhile (the records
    ///   stay queued and are retried).
    public func flush() async throws {
        try await waitUntilDurable()
        let error: (any Error)? = await withCheckedContinuation { continuation in
            let done = state.withLock { state -> Bool in
                state.normalizeCursor()
                let target = state.durableEnd
                if state.cursor >= target && state.memoryCount == 0 { return true }
                state.flushWaiters.append((target, continuation))
                return false
            }
            if done { continuation.resume(returning: nil) }
        }
        if let error { throw error }
    }

    /// Makes everything durable, delivers what it can (stopping at the first downstream failure), then
    /// stops the writer thread and releases the directory. Later records are refused. Safe to call twice.
    public func shutdown() async {
        let task = state.withLock { state -> Task<Void, Never> in
            if let task = state.shutdownTask { return task }
            let task = Task { await self.performShutdown() }
            state.shutdownTask = task
            return task
        }
        await task.value
    }

    private func performShutdown() async {
        do {
            try await waitUntilDurable()
        } catch {
            configuration.logger.error("durable queue '\(directory)': \(error.message)")
        }
        state.withLock { $0.closed = true }
        do {
            try await flush()
        } catch {
            configuration.logger.warning(
                "durable queue '\(directory)': undelivered records stay queued for the next run"
            )
        }
        let flushWaiters = state.withLock { state in
            state.deliveryStopping = true
            defer { state.flushWaiters.removeAll() }
            return state.flushWaiters.map(\.continuation)
        }
        for waiter in flushWaiters {
            waiter.resume(returning: AnalyticsSinkError(.closed, "durable queue is shut down"))
        }
        signalDelivery()
        let task = deliveryTask.withLock { $0 }
        task?.cancel()
        await task?.value
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let exited = state.withLock { state -> Bool in
                state.writerStopping = true
                if state.writerExited { return true }
                state.writerExitWaiters.append(continuation)
                return false
            }
            writerWakeup.signal()
            if exited { continuation.resume() }
        }
        close(lockFD)
    }

    // MARK: Inspection

    /// The records in `directory` that no downstream has confirmed yet, oldest first, read without
    /// opening the queue (a snapshot; torn and unreadable lines are left out).
    public static func pendingRecords(in directory: String) throws(AnalyticsSinkError) -> [AnalyticsRecord] {
        let ack = try DurableQueueLayout.readAck(directory)
        let segments = try DurableQueueLayout.listSegments(directory).filter { $0.index >= (ack?.segment ?? 0) }
        let start = DurableQueueLayout.startPosition(
            ack: ack,
            segments: segments,
            nextIndex: (segments.last?.index ?? 0) + 1
        )
        return try DurableQueueLayout.read(
            directory,
            from: start,
            segments: segments,
            limit: .max,
            sealed: { _ in true }
        )
        .records
    }
}
