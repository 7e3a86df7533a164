import ContainerKit
import Dispatch
import Foundation

/// The on-disk ``RecordStore``: the segment log (``SegmentLog``: append-only segments of checksummed
/// lines, an ack file) driven by ``DurableQueueMachine``. The store behind ``DurableQueue``.
///
/// ## Threads
/// ``run(reporting:)`` owns two threads and joins both before it returns: the **writer**, which takes
/// every line appended while its previous `fsync` ran and writes them with one `write` and one `fsync`
/// (group commit), and the **reader**, which performs disk reads of the backlog and the ack's
/// `pwrite`/`fdatasync`, so neither blocks the cooperative pool. Recently committed records are read
/// from memory without a thread hop.
final class SegmentRecordStore: RecordStore, @unchecked Sendable {
    typealias Position = SegmentLog.Position

    /// The store's tunables (a subset of ``DurableQueue/Configuration``).
    struct Settings: Sendable {
        var maximumSegmentBytes: Int
        var maximumQueueBytes: Int
        var maximumBufferedRecords: Int
        var batchSize: Int
        var maximumInFlight: Int
        var commitDelay: Duration
        var acknowledgementSyncInterval: Duration
        var faults: SegmentLogFaults?
    }

    /// Counters of the store.
    struct Counters: Sendable, Hashable {
        var commits = 0
        var failedCommitRecords = 0
        var recordsReadFromDisk = 0
        var skippedLines = 0
        var corruptLines = 0
        var acknowledgements = 0
        var segmentCount = 0
        var queueBytes = 0
    }

    private struct State {
        var machine: DurableQueueMachine
        var counters = Counters()
        var commits: RecordStoreCommits?
        var stopping = false
        var jobs: [@Sendable () -> Void] = []
        var lastAckSync: ContinuousClock.Instant?
    }

    let directory: String
    let log: SegmentLog
    private let settings: Settings
    private let state: Mutex<State>
    private let writerWakeup = DispatchSemaphore(value: 0)
    private let readerWakeup = DispatchSemaphore(value: 0)
    /// Problems the writer met (a failed commit), for the pipeline's log.
    private let report: @Sendable (String) -> Void

    /// Opens (creating if needed) the segment log in `directory` and recovers what a previous run left.
    init(directory: String, settings: Settings, report: @escaping @Sendable (String) -> Void) throws(AnalyticsSinkError)
    {
        self.directory = directory
        self.settings = settings
        self.report = report
        log = try SegmentLog(directory: directory, faults: settings.faults)
        let recovery = log.recovery
        state = Mutex(
            State(
                machine: DurableQueueMachine(
                    segments: recovery.segments,
                    cursor: recovery.cursor,
                    nextSegmentIndex: recovery.nextIndex,
                    maximumSegmentBytes: settings.maximumSegmentBytes,
                    maximumQueueBytes: settings.maximumQueueBytes,
                    maximumBufferedRecords: settings.maximumBufferedRecords,
                    batchSize: settings.batchSize,
                    maximumInFlight: settings.maximumInFlight
                )
            )
        )
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

    func addCounters(to statistics: inout DeliveryStatistics) {
        let counters = self.counters
        statistics.recordsReadFromDisk = counters.recordsReadFromDisk
        statistics.corruptRecords = counters.corruptLines
        statistics.segmentCount = counters.segmentCount
        statistics.queueBytes = counters.queueBytes
    }

    /// The ticket of the latest append.
    var lastTicket: UInt64 { state.withLock { $0.machine.lastTicket } }

    // MARK: RecordStore

    func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 {
        let (ticket, actions) = try state.withLock { state throws(AnalyticsSinkError) in
            try state.machine.enqueue(records.bytes, records: records.records, lineEnds: records.lineEnds)
        }
        perform(actions)
        return ticket
    }

    func run(reporting commits: RecordStoreCommits) async throws {
        state.withLock { $0.commits = commits }
        let writer = OwnedThread.start(name: "containerkit.segment-store.writer") { [self] in writerLoop() }
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

    func read(after position: Position?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<Position> {
        // A few rounds at most: a disk read may find the sizes it was given already stale.
        for _ in 0..<4 {
            let step = state.withLock { $0.machine.nextBatch(limit: limit) }
            switch step {
            case .wait:
                return .empty
            case .deliver(let batch):
                return StoredBatch(records: batch.records, end: batch.end, json: batch.json)
            case .readDisk(let from, let segments, let sealed):
                let (directory, faults, limit) = (self.directory, settings.faults, min(limit, settings.batchSize))
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
                let (batch, actions) = state.withLock { state in
                    state.counters.recordsReadFromDisk += result.records.count
                    state.counters.skippedLines += result.skippedLines
                    state.counters.corruptLines += result.corruptLines
                    let (batch, _, actions) = state.machine.diskRead(result, from: from)
                    return (batch, actions)
                }
                for message in result.messages { report(message) }
                await performAcknowledgements(actions)
                if let batch {
                    return StoredBatch(
                        records: batch.records,
                        end: batch.end,
                        skipped: result.skippedLines,
                        problems: []
                    )
                }
                if let failure = result.failure { throw failure }
            }
        }
        return .empty
    }

    func acknowledge(through position: Position) async throws(AnalyticsSinkError) {
        let actions = state.withLock { $0.machine.confirm(through: position) }
        await performAcknowledgements(actions)
    }

    // MARK: Actions

    private func perform(_ actions: [DurableQueueMachine.Action]) {
        // Durability and delivery wake-ups reach the pipeline through the commit reports; acknowledgements
        // are written by the caller that asked for them.
        for case .wakeWriter in actions { writerWakeup.signal() }
    }

    /// Writes the acknowledgements among `actions`, on the reader thread.
    private func performAcknowledgements(_ actions: [DurableQueueMachine.Action]) async {
        for case .acknowledge(let position, let deleting) in actions {
            let now = ContinuousClock.now
            let interval = settings.acknowledgementSyncInterval
            let sync = state.withLock { state -> Bool in
                guard let last = state.lastAckSync, last.duration(to: now) < interval else {
                    state.lastAckSync = now
                    return true
                }
                return false
            }
            let log = self.log
            let failure = await onReader { () -> AnalyticsSinkError? in
                do throws(AnalyticsSinkError) {
                    try log.acknowledge(position, deleting: deleting, sync: sync)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure {
                report("could not record delivery progress: \(failure.message)")
            } else {
                state.withLock { $0.counters.acknowledgements += 1 }
            }
        }
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

    private func writerLoop() {
        // Whether the last round found records waiting (the store is busy: let more gather first).
        var busy = false
        while true {
            if busy, settings.commitDelay > .zero { Self.sleep(settings.commitDelay) }
            let (commit, stop) = state.withLock { state -> (DurableQueueMachine.Commit?, Bool) in
                let commit = state.machine.takeCommit()
                return (commit, commit == nil && state.stopping)
            }
            if stop { break }
            guard let commit else {
                busy = false
                writerWakeup.wait()
                continue
            }
            busy = true
            let commits = state.withLock { $0.commits }
            do throws(SegmentLog.AppendFailure) {
                try log.append(commit.bytes, to: commit.segment, at: commit.offset)
                let actions = state.withLock { state in
                    state.counters.commits += 1
                    return state.machine.committed(commit)
                }
                commits?.committed(through: commit.tickets.upperBound, records: commit.recordCount)
                perform(actions)
            } catch {
                let usable: Bool
                if case .clean = error { usable = true } else { usable = false }
                let actions = state.withLock { state in
                    state.counters.failedCommitRecords += commit.recordCount
                    return state.machine.commitFailed(commit, error.error, segmentUsable: usable)
                }
                commits?.failed(commit.tickets, records: commit.recordCount, error: DurabilityError(error.error))
                perform(actions)
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
