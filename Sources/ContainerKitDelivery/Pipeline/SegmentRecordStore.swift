import ContainerKit
import Dispatch
import Foundation
import Synchronization

/// The on-disk ``RecordStore``: the segment log (``SegmentLog``: append-only segments of checksummed
/// lines, an ack file) driven by ``SegmentLogMachine``. The store of
/// ``DeliveryPipeline/durable(directory:destination:settings:storage:clock:)``, which makes it; its own
/// settings are ``Options``.
///
/// It stores and nothing more: it hands out a ticket per append, reports each commit to the pipeline, and
/// answers reads and acknowledgements; who waits, the batches in flight and their order are the
/// pipeline's (``DeliveryPipelineMachine``).
///
/// ## Threads
/// ``run(reporting:)`` owns two threads and joins both before it returns: the **writer**, which takes
/// every line appended while its previous `fsync` ran and writes them with one `write` and one `fsync`
/// (group commit), and the **reader**, which performs disk reads of the backlog and the ack's
/// `pwrite`/`fdatasync`, so neither blocks the cooperative pool. Recently committed records are read
/// from memory without a thread hop.
public final class SegmentRecordStore: RecordStore, @unchecked Sendable {
    /// A segment and a byte offset in it.
    public typealias Position = SegmentPosition

    /// What only the segment log has: the storage choice of a durable pipeline, beside the
    /// ``DeliverySettings`` every pipeline has.
    ///
    /// ```swift
    /// var storage = SegmentRecordStore.Options()
    /// storage.commitDelay = .milliseconds(1)   // fewer fsyncs per record under many producers
    /// let pipeline = try DeliveryPipeline.durable(directory: path, destination: braze, storage: storage)
    /// ```
    public struct Options: Sendable {
        /// A segment is sealed and a new one started once it would pass this many bytes (8 MiB).
        public var maximumSegmentBytes = 8 << 20
        /// The most bytes the segments and pending lines may hold (1 GiB); beyond, new records are refused
        /// (`.queueFull`). Records already stored are never dropped.
        public var maximumQueueBytes = 1 << 30
        /// Committed records kept in memory for delivery (10,000); a backlog beyond is read back from disk.
        public var maximumBufferedRecords = 10_000
        /// How long the writer pauses after each commit before it takes the next one, so that records keep
        /// gathering (zero by default: at once). A writer that was idle commits the first records without
        /// delay, so a quiet store keeps its latency; under many concurrent producers a few hundred
        /// microseconds fold several commits into one `write` and one `fsync` — less CPU per record — at the
        /// price of up to that much more time before a record is durable (PostgreSQL's `commit_delay` is the
        /// same idea).
        public var commitDelay: Duration = .zero
        /// How often, at most, the ack file is `fdatasync`ed (1 s; also before a segment is deleted and at the
        /// end of a run). Every batch's acknowledgement is written as soon as it is settled, so a process crash
        /// re-delivers at most the batches in flight and one settled batch; a power loss at most this interval's
        /// batches more.
        public var acknowledgementSyncInterval: Duration = .seconds(1)
        /// Injected file-system faults (tests only).
        package var faults: SegmentLogFaults?

        /// The defaults.
        public init() {}

        /// The defaults, with injected file-system faults (tests only).
        package init(faults: SegmentLogFaults?) { self.faults = faults }
    }

    /// Counters of the store.
    struct Counters: Sendable, Hashable {
        var commits = 0
        var failedCommitRecords = 0
        var recordsReadFromDisk = 0
        var skippedLines = 0
        var corruptLines = 0
        var segmentCount = 0
        var queueBytes = 0
        /// Appends refused because a session line of theirs was fenced.
        var fencedAppends = 0
        /// Compaction snapshots written.
        var compactions = 0
        /// Session lines a load or a compaction could not apply (a corrupt line, a gap).
        var unappliedSessionLines = 0
    }

    private struct State {
        var machine: SegmentLogMachine
        var counters = Counters()
        var commits: RecordStoreCommits?
        var stopping = false
        var jobs: [@Sendable () -> Void] = []
        var lastAckSync: ContinuousClock.Instant?
        /// Whether a compaction job is queued or running.
        var compacting = false
    }

    /// The segment log's directory.
    public let directory: String
    let log: SegmentLog
    private let settings: Options
    private let batchSize: Int
    private let state: Mutex<State>
    private let writerWakeup = DispatchSemaphore(value: 0)
    private let readerWakeup = DispatchSemaphore(value: 0)
    /// Where problems the store meets while it runs (a failed commit, an unreadable line) are reported: the
    /// pipeline's ``RecordStoreCommits``, set for the length of ``run(reporting:)``.
    private let problems = Mutex<RecordStoreCommits?>(nil)

    /// Opens (creating if needed) the segment log in `directory` and recovers what a previous run left;
    /// `batchSize` bounds a read.
    init(directory: String, options settings: Options, batchSize: Int) throws(AnalyticsSinkError) {
        self.directory = directory
        self.settings = settings
        self.batchSize = batchSize
        log = try SegmentLog(directory: directory, faults: settings.faults)
        let recovery = log.recovery
        state = Mutex(
            State(
                machine: SegmentLogMachine(
                    segments: recovery.segments,
                    cursor: recovery.cursor,
                    nextSegmentIndex: recovery.nextIndex,
                    maximumSegmentBytes: settings.maximumSegmentBytes,
                    maximumQueueBytes: settings.maximumQueueBytes,
                    maximumBufferedRecords: settings.maximumBufferedRecords,
                    batchSize: batchSize,
                    sessions: recovery.sessions
                )
            )
        )
        if recovery.unreadableSessionLines > 0 {
            state.withLock { $0.counters.unappliedSessionLines += recovery.unreadableSessionLines }
        }
    }

    /// The store's counters now.
    var counters: Counters {
        state.withLock { state in
            var counters = state.counters
            counters.segmentCount = state.machine.segments.count
            counters.queueBytes = state.machine.queueBytes
            return counters
        }
    }

    public func addCounters(to statistics: inout DeliveryStatistics) {
        let counters = self.counters
        statistics.recordsReadFromDisk = counters.recordsReadFromDisk
        statistics.corruptRecords = counters.corruptLines
        statistics.segmentCount = counters.segmentCount
        statistics.queueBytes = counters.queueBytes
        statistics.unappliedSessionLines = counters.unappliedSessionLines
        statistics.fencedAppends = counters.fencedAppends
        statistics.sessionCompactions = counters.compactions
    }

    /// The ticket of the latest append.
    var lastTicket: UInt64 { state.withLock { $0.machine.lastTicket } }

    // MARK: RecordStore

    public func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 {
        guard !records.sessions.isEmpty else {
            let (ticket, actions) = try state.withLock { state throws(AnalyticsSinkError) in
                try state.machine.enqueue(records.bytes, records: records.records, lineEnds: records.lineEnds)
            }
            perform(actions)
            return ticket
        }
        // The push's session change follows its records, in the same append (encoded here, outside the lock).
        var json = JSONByteWriter(capacity: records.bytes.count + 512 * records.sessions.count)
        records.bytes.withUnsafeBufferPointer { json.append($0) }
        var lines: [(header: SessionLine, range: Range<Int>)] = []
        for checkpoint in records.sessions {
            let start = json.count
            SessionLine.append(checkpoint, to: &json)
            lines.append((SessionLine(checkpoint), start..<json.count))
        }
        let bytes = json.bytes
        let (ticket, actions) = try state.withLock { state throws(AnalyticsSinkError) in
            try state.machine.enqueue(bytes, records: records.records, lineEnds: records.lineEnds, sessions: lines)
        }
        perform(actions)
        return ticket
    }

    /// Appends session lines without records (saves, removals, compactions), one append per line so that a
    /// fenced line refuses only itself; returns each line's ticket.
    func appendSessionLines(
        _ lines: [(header: SessionLine, body: ((inout JSONByteWriter) -> Void)?)]
    ) throws(AnalyticsSinkError) -> [UInt64] {
        var tickets: [UInt64] = []
        for (header, body) in lines {
            var json = JSONByteWriter(capacity: 512)
            SessionLine.append(header, to: &json, body: body)
            let bytes = json.bytes
            let (ticket, actions) = try state.withLock { state throws(AnalyticsSinkError) in
                try state.machine.enqueue(bytes, records: [], lineEnds: [], sessions: [(header, 0..<bytes.count)])
            }
            perform(actions)
            tickets.append(ticket)
        }
        return tickets
    }

    // MARK: Sessions

    /// Returns once the reader thread ran every job queued before the call (a compaction among them).
    func drainReaderJobs() async { _ = await onReader {} }

    /// How many delivered segments are kept only for their session lines.
    var segmentsKeptForSessions: Int { state.withLock { $0.machine.retainedForSessions.count } }

    /// Compacts the oldest segment kept for session lines, on the reader thread, and returns when done.
    func compactOldestNow() async {
        state.withLock { $0.compacting = true }
        _ = await onReader { [self] in compactOldest() }
    }

    /// Whether ``run(reporting:)`` started.
    var isRunning: Bool { state.withLock { $0.commits != nil || $0.stopping } }

    /// Commits what is pending on the caller's thread (before ``run(reporting:)``: no writer thread runs).
    /// - Returns: how many appends were written (not refused).
    /// - Throws: the write's error.
    func commitNow() throws(AnalyticsSinkError) -> Int {
        guard let commit = state.withLock({ $0.machine.takeCommit() }) else { return 0 }
        do throws(SegmentLog.AppendFailure) {
            if !commit.bytes.isEmpty { try log.append(commit.bytes, to: commit.segment, at: commit.offset) }
            _ = state.withLock { state in
                state.counters.commits += 1
                return state.machine.committed(commit)
            }
            return commit.tickets.count - commit.refused.count
        } catch {
            let usable: Bool
            if case .clean = error { usable = true } else { usable = false }
            state.withLock { $0.machine.commitFailed(commit, segmentUsable: usable) }
            throw error.error
        }
    }

    /// The session of `userID` as the log holds it: its last snapshot with the later deltas applied, read on
    /// the reader thread. `nil` when the log holds none (never stored, or ended).
    /// - Throws: when a segment cannot be read now.
    func loadSession(_ userID: String) async throws(AnalyticsSinkError) -> SessionFold? {
        let key = SessionKey(userID)
        let directory = self.directory
        for attempt in 1...3 {
            guard let chain = state.withLock({ $0.machine.sessions.chain(of: key) }), !chain.lines.isEmpty else {
                return nil
            }
            let outcome = await onReader { () -> Result<SessionFold, AnalyticsSinkError> in
                do throws(AnalyticsSinkError) {
                    return .success(try Self.fold(chain, directory: directory))
                } catch {
                    return .failure(error)
                }
            }
            switch outcome {
            case .success(let fold):
                if fold.unapplied > 0 {
                    state.withLock { $0.counters.unappliedSessionLines += fold.unapplied }
                }
                return fold
            case .failure(let error):
                // A compaction deleted a segment of the chain meanwhile: the index has the new chain.
                if error.errorNumber == ENOENT, attempt < 3 { continue }
                throw error
            }
        }
        return nil
    }

    /// The version at which `userID`'s session ended (its removal), or 0.
    func endedVersion(_ userID: String) -> Int64 {
        state.withLock { state in
            guard let chain = state.machine.sessions.chain(of: SessionKey(userID)), chain.ended else { return 0 }
            return chain.head
        }
    }

    /// Reads and folds the lines of `chain` (on the calling thread).
    private static func fold(_ chain: SessionIndex.Chain, directory: String) throws(AnalyticsSinkError) -> SessionFold {
        var fold = SessionFold()
        for ref in chain.lines {
            switch try SegmentLog.readSessionLine(directory, ref) {
            case .success(let parsed):
                do throws(ContainerError) {
                    switch parsed.header.kind {
                    case .snapshot, .compaction:
                        fold.apply(
                            snapshot: try SessionSnapshot(jsonValue: parsed.body ?? .null),
                            version: ref.version,
                            id: parsed.header.id
                        )
                    case .delta:
                        fold.apply(
                            delta: try SessionDelta(jsonValue: parsed.body ?? .null),
                            version: ref.version,
                            id: parsed.header.id
                        )
                    case .removal:
                        break
                    }
                } catch {
                    fold.skip(
                        version: ref.version,
                        id: parsed.header.id,
                        problem: "the line of version \(ref.version) does not parse: \(error.message)"
                    )
                }
            case .failure(let problem):
                fold.skip(version: ref.version, problem: "the line of version \(ref.version): \(problem.message)")
            }
        }
        return fold
    }

    /// Folds the chains that keep the oldest delivered segment and appends each as a compaction snapshot
    /// (fenced at its head: a push committed meanwhile wins, and the next compaction tries again). Reader
    /// thread.
    private func compactOldest() {
        let (work, directory) = state.withLock { ($0.machine.sessionsToCompact, self.directory) }
        var lines: [(header: SessionLine, body: ((inout JSONByteWriter) -> Void)?)] = []
        var unapplied = 0
        for (key, chain) in work {
            let fold: SessionFold
            do {
                fold = try Self.fold(chain, directory: directory)
            } catch {
                report("could not compact the session of '\(key.userID)': \(error.message)")
                continue
            }
            guard let stored = fold.stored else { continue }
            if fold.unapplied > 0 {
                unapplied += fold.unapplied
                report(
                    "compacted the session of '\(key.userID)' without \(fold.unapplied) unreadable lines: "
                        + (fold.problem ?? "")
                )
            }
            // The fold of the chain up to its head: the same change, so it keeps the head's identity.
            let header = SessionLine(
                userID: key.userID,
                version: chain.head,
                expected: chain.head,
                kind: .compaction,
                id: chain.headID
            )
            let snapshot = stored.snapshot
            lines.append((header, { snapshot.writeJSON(to: &$0) }))
        }
        do {
            _ = try appendSessionLines(lines)
        } catch {
            report("could not compact sessions: \(error.message)")
        }
        state.withLock { state in
            state.compacting = false
            state.counters.compactions += lines.count
            state.counters.unappliedSessionLines += unapplied
        }
    }

    public func run(reporting commits: RecordStoreCommits) async throws {
        problems.withLock { $0 = commits }
        defer { problems.withLock { $0 = nil } }
        // What recovery found wrong on disk, reported now that the pipeline's logger is known.
        for warning in log.recovery.warnings { commits.reportProblem("recovered with a problem: \(warning)") }
        state.withLock { $0.commits = commits }
        let writer = OwnedThread.start(name: "containerkit.segment-store.writer") { [self] in writerLoop(commits) }
        let reader = OwnedThread.start(name: "containerkit.segment-store.reader") { [self] in readerLoop() }
        // Until cancelled.
        await Latch().wait()
        // Stop: refuse new lines; the writer commits what is pending and exits; the reader finishes its jobs.
        let actions = state.withLock { state in
            state.stopping = true
            return state.machine.close()
        }
        perform(actions)
        writerWakeup.signal()
        readerWakeup.signal()
        await writer.join()
        await reader.join()
        state.withLock { $0.commits = nil }
        do {
            try log.syncAck()
        } catch {
            report(error.message)
        }
        log.close()
    }

    /// Reads from the store's read cursor (the pipeline reads in order, after the batch it read last: its
    /// `position` is that cursor, or `nil` at the acknowledged cursor at start).
    public func read(after position: Position?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<Position> {
        // A few rounds at most: a disk read may find the sizes it was given already stale.
        for _ in 0..<4 {
            let step = state.withLock { $0.machine.nextRead(limit: limit) }
            switch step {
            case .nothing:
                return .empty
            case .batch(let batch):
                return StoredBatch(records: batch.records, end: batch.end, json: batch.json)
            case .readDisk(let from, let segments, let sealed):
                let (directory, faults, limit) = (self.directory, settings.faults, min(limit, batchSize))
                let result = await onReader {
                    SegmentLog.read(
                        directory,
                        from: from,
                        segments: segments,
                        limit: limit,
                        sealed: { sealed.contains($0) },
                        faults: faults
                    )
                }
                let batch = state.withLock { state in
                    state.counters.recordsReadFromDisk += result.records.count
                    state.counters.skippedLines += result.skippedLines
                    state.counters.corruptLines += result.corruptLines
                    return state.machine.diskRead(result, from: from).batch
                }
                for message in result.messages { report(message) }
                if let batch {
                    // Records, or only skipped lines (the pipeline acknowledges them like a settled batch).
                    return StoredBatch(records: batch.records, end: batch.end, skipped: result.skippedLines)
                }
                if let failure = result.failure { throw failure }
            }
        }
        return .empty
    }

    public func acknowledge(through position: Position) async throws(AnalyticsSinkError) {
        let now = ContinuousClock.now
        let interval = settings.acknowledgementSyncInterval
        // The machine's step and whether this write syncs, under one lock.
        let (actions, sync) = state.withLock { state -> ([SegmentLogMachine.Action], Bool) in
            let actions = state.machine.acknowledge(through: position)
            guard !actions.isEmpty else { return (actions, false) }
            if let last = state.lastAckSync, last.duration(to: now) < interval { return (actions, false) }
            state.lastAckSync = now
            return (actions, true)
        }
        let log = self.log
        for case .acknowledge(let position, let deleting) in actions {
            let failure = await onReader { () -> AnalyticsSinkError? in
                do throws(AnalyticsSinkError) {
                    try log.acknowledge(position, deleting: deleting, sync: sync)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure { throw failure }
        }
    }

    // MARK: Actions

    private func perform(_ actions: [SegmentLogMachine.Action]) {
        // Acknowledgements are written by the caller that asked for them; every other wake-up is the
        // pipeline's, through the commit reports.
        for case .wakeWriter in actions { writerWakeup.signal() }
    }

    /// Performs the actions of a commit on the writer thread: deletions its snapshots allowed and
    /// compactions go to the reader thread (not waited for).
    private func performAfterCommit(_ actions: [SegmentLogMachine.Action]) {
        perform(actions)
        for action in actions {
            switch action {
            case .acknowledge(let position, let deleting):
                let log = self.log
                let report = self.report
                queueOnReader {
                    do throws(AnalyticsSinkError) {
                        try log.acknowledge(position, deleting: deleting, sync: true)
                    } catch {
                        report("could not delete delivered segments: \(error.message)")
                    }
                }
            case .compactSessions:
                let first = state.withLock { state -> Bool in
                    defer { state.compacting = true }
                    return !state.compacting
                }
                if first { queueOnReader { [self] in compactOldest() } }
            default:
                break
            }
        }
    }

    /// Queues `job` for the reader thread without waiting (dropped once the store stops).
    private func queueOnReader(_ job: @escaping @Sendable () -> Void) {
        let queued = state.withLock { state -> Bool in
            guard state.commits != nil, !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if queued { readerWakeup.signal() }
    }

    /// Runs `job` on the reader thread and returns its result; runs it here when the reader is not running.
    private func onReader<T: Sendable>(_ job: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            let queued = state.withLock { state -> Bool in
                guard state.commits != nil, !state.stopping else { return false }
                state.jobs.append { continuation.resume(returning: job()) }
                return true
            }
            if queued { readerWakeup.signal() } else { continuation.resume(returning: job()) }
        }
    }

    // MARK: Threads

    private func readerLoop() {
        while true {
            let (jobs, stop) = state.withLock { state -> ([@Sendable () -> Void], Bool) in
                defer { state.jobs.removeAll() }
                return (state.jobs, state.stopping)
            }
            for job in jobs { job() }
            if stop && jobs.isEmpty { break }
            if jobs.isEmpty { readerWakeup.wait() }
        }
    }

    /// Commits until the store stops, reporting each commit to `commits`. Without a commit delay, the lock
    /// that records a commit also takes the next one (one lock per commit while appends keep coming).
    private func writerLoop(_ commits: RecordStoreCommits) {
        let delay = settings.commitDelay
        // The commit to write next, when the last lock took one already.
        var next: SegmentLogMachine.Commit?
        // Whether the last round found records waiting (the store is busy: let more gather first).
        var busy = false
        while true {
            let commit: SegmentLogMachine.Commit
            if let taken = next {
                commit = taken
                next = nil
            } else {
                if busy, delay > .zero { Self.sleep(delay) }
                let (taken, stop) = state.withLock { state -> (SegmentLogMachine.Commit?, Bool) in
                    let commit = state.machine.takeCommit()
                    return (commit, commit == nil && state.stopping)
                }
                if stop { break }
                guard let taken else {
                    busy = false
                    writerWakeup.wait()
                    continue
                }
                commit = taken
            }
            busy = true
            do throws(SegmentLog.AppendFailure) {
                if !commit.bytes.isEmpty { try log.append(commit.bytes, to: commit.segment, at: commit.offset) }
                let (actions, following, stop) = state.withLock { state in
                    state.counters.commits += 1
                    state.counters.fencedAppends += commit.refused.count
                    let actions = state.machine.committed(commit)
                    guard delay == .zero else { return (actions, SegmentLogMachine.Commit?.none, false) }
                    let following = state.machine.takeCommit()
                    return (actions, following, following == nil && state.stopping)
                }
                for ticket in commit.refused {
                    commits.failed(
                        ticket...ticket,
                        records: 0,
                        error: DurabilityError(.superseded, "a newer version of the session is stored")
                    )
                }
                commits.committed(through: commit.tickets.upperBound, records: commit.recordCount)
                performAfterCommit(actions)
                if stop { break }
                if let following {
                    next = following
                } else if delay == .zero {
                    // The machine marked the writer asleep: an append wakes it.
                    busy = false
                    writerWakeup.wait()
                }
            } catch {
                let usable: Bool
                if case .clean = error { usable = true } else { usable = false }
                state.withLock { state in
                    state.counters.failedCommitRecords += commit.recordCount
                    state.machine.commitFailed(commit, segmentUsable: usable)
                }
                commits.failed(commit.tickets, records: commit.recordCount, error: DurabilityError(error.error))
            }
        }
    }

    /// Blocks the writer thread for `duration` (the commit delay).
    private static func sleep(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        var request = timespec(tv_sec: Int(seconds), tv_nsec: Int(attoseconds / 1_000_000_000))
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}

extension SegmentRecordStore {
    /// Reports a problem met while running to the pipeline's log (dropped when not running).
    private func report(_ problem: String) {
        problems.withLock { $0 }?.reportProblem(problem)
    }

    /// The records in `directory` that no destination has confirmed yet, oldest first, read without opening
    /// the store (a snapshot; torn, unparsable and corrupt lines are left out).
    /// - Throws: `.corruptFile` for an ack or segment index out of range; the error of a segment that cannot be
    ///   read.
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
