@_spi(Hot) import ContainerKit
import Synchronization

/// A ``RecordStore`` in memory: every append is committed at once, and records are lost when the process
/// ends. The store of ``DeliveryPipeline/inMemory(destination:settings:maximumRecords:clock:)``; also the model of the protocol for a new store's tests.
///
/// Positions are record counts: a record's position is how many records were appended before it, plus one.
public final class MemoryRecordStore: RecordStore {
    private struct State {
        /// The records not acknowledged yet, oldest first.
        var records = HeadIndexQueue<AnalyticsRecord>()
        /// The position of `records[0]` minus one (what was acknowledged and dropped).
        var base: UInt64 = 0
        var ticket: UInt64 = 0
        var commits: RecordStoreCommits?
        var stopped = false
    }

    /// The most records held (not yet acknowledged); more are refused (`.queueFull`).
    public let maximumRecords: Int
    private let state = Mutex(State())

    /// Creates an empty store holding at most `maximumRecords` unacknowledged records (50,000).
    public init(maximumRecords: Int = 50_000) { self.maximumRecords = maximumRecords }

    /// `false`: records are lost with the process.
    public var isDurable: Bool { false }

    /// Records taken and not acknowledged yet.
    public var count: Int { state.withLock { $0.records.count } }

    public func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 {
        let (ticket, commits) = try state.withLock {
            state throws(AnalyticsSinkError) -> (UInt64, RecordStoreCommits?) in
            guard !state.stopped else { throw AnalyticsSinkError(.closed, "the queue is shut down") }
            let held = state.records.count
            guard held + records.records.count <= maximumRecords else {
                throw AnalyticsSinkError(.queueFull, "the queue holds \(held) records")
            }
            state.records.append(contentsOf: records.records)
            state.ticket += 1
            return (state.ticket, state.commits)
        }
        // Committed at once; a pipeline that is not running yet learns it when its run begins.
        commits?.committed(through: ticket, records: records.records.count)
        return ticket
    }

    public func run(reporting commits: RecordStoreCommits) async throws {
        let (ticket, count) = state.withLock { state -> (UInt64, Int) in
            state.commits = commits
            return (state.ticket, state.records.count)
        }
        if ticket > 0 { commits.committed(through: ticket, records: count) }
        // Nothing to commit in the background: wait for the cancellation.
        await Latch().wait()
        state.withLock {
            $0.commits = nil
            $0.stopped = true
        }
    }

    public func read(after position: UInt64?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<UInt64> {
        state.withLock { state in
            let first = position.map { $0 > state.base ? Int($0 - state.base) : 0 } ?? 0
            guard first < state.records.count else { return .empty }
            let end = min(state.records.count, first + max(1, limit))
            let records = (first..<end).map { state.records[$0] }
            return StoredBatch(records: records, end: state.base + UInt64(end))
        }
    }

    public func acknowledge(through position: UInt64) async throws(AnalyticsSinkError) {
        state.withLock { state in
            let done = Int(min(position - min(position, state.base), UInt64(state.records.count)))
            state.records.removeFirst(done)
            state.base += UInt64(done)
        }
    }
}
