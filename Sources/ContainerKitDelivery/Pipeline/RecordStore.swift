public import ContainerKit

/// Where the delivery pipeline keeps records between the tag that made them and the destination that
/// takes them: the one seam a new kind of storage plugs into. Two stores ship — ``MemoryRecordStore``
/// (records are lost with the process) and the on-disk segment log, ``SegmentRecordStore`` — and a
/// transactional database (PostgreSQL, one group commit per transaction) implements the same protocol
/// outside this package.
///
/// ## The contract
/// The pipeline (``DeliveryPipeline``) owns everything that is not storage: who waits for what, the
/// delivery loop, retries and backoff, the number of batches in flight, their acknowledgement order, the
/// drain and its deadline, statistics and logging. A store only stores, and guarantees this:
///
/// 1. **Append is prompt and ordered.** ``append(_:)`` returns at once (it is called inside event
///    evaluation) with a ticket; tickets grow by one per accepted append, starting at 1 for each store
///    instance. Records are kept in append order.
/// 2. **Durability is reported per commit, in ticket order.** The store commits appended records in its
///    ``run(reporting:)`` (a writer thread, a database connection) — as many appends per commit as it
///    likes (group commit) — and reports each commit to the ``RecordStoreCommits`` it was given:
///    ``RecordStoreCommits/committed(through:records:)`` once every ticket up to a number is durable, or
///    ``RecordStoreCommits/failed(_:records:error:)`` for the tickets of a commit that failed: those
///    records are not stored and will never be read. The store converts its failure into a
///    ``DurabilityError`` there, once (a full disk is `.diskFull`, whatever the store's own error type);
///    every waiter of those tickets gets that value. A failed commit does not fail earlier or later ones.
///    Every accepted ticket is eventually reported, once, in ascending order.
/// 3. **Reads return committed records in commit order.** ``read(after:limit:)`` returns at most `limit`
///    records that are committed (never one whose commit was not reported, never one of a failed
///    commit), in the order they were appended — each user's in that order at least: a store partitioned by
///    user (PostgreSQL) may interleave users — starting right after `position` (`nil`: at the oldest
///    record not acknowledged). Positions compare in that order: a record committed later never gets a
///    position below one already returned — a database must not hand out positions that a transaction
///    still open could undercut (one writer per partition, or read only below the oldest open
///    transaction).
/// 4. **Only provably bad data is skipped.** A record that cannot be decoded (a torn or corrupt line) may
///    be skipped, counted in ``StoredBatch/skipped`` — its position is still inside the batch's range, so
///    acknowledging the batch moves past it. A store that cannot be read right now (`EMFILE`, `EIO`, a
///    lost connection) **throws**: the pipeline retries after a backoff and never acknowledges past it.
/// 5. **Acknowledgement is per batch, in order, and durable enough.** ``acknowledge(through:)`` is called
///    with the ``StoredBatch/end`` of a batch once it and every batch before it are settled (one call for
///    the batches settled while the previous call ran); each call's position is above the previous one,
///    and calls do not overlap. After it returns, a restart must not deliver those records
///    again — except that a store may keep the last few acknowledgements in a buffer that a power loss
///    (not a process crash) rolls back. Several batches may be in flight at once; a crash re-delivers at
///    most those not acknowledged. A failed acknowledgement throws; the pipeline logs it and goes on (the
///    next one covers it).
/// 6. **Nothing runs before ``run(reporting:)``.** Initializers open and recover; they start no thread
///    or task. ``run(reporting:)`` works until its task is cancelled; then it stops at once: tickets not
///    committed yet are reported failed (`.closed`), nothing committed is lost, and it returns.
///
/// ## Stores that keep sessions
/// A store may keep the sessions of a ``SessionStore`` with the records (the segment log behind
/// ``DeliveryPipeline/sessions``; PostgreSQL's `ck_session_changes`): a ``RecordCommitter`` with
/// `keepsSessions: true` then hands it, in **one append per push**, the push's records and its session's
/// change (``EncodedRecords/sessions``). Such a store also implements ``SessionPersistence`` over the same
/// storage, and guarantees:
///
/// 7. **An append commits whole.** Its records and its session lines are durable together or not at all;
///    "committed" (item 2) covers both: once reported, a load on any instance sees the change.
/// 8. **A session is its last snapshot and the deltas after it.** A delta of version *v* applies to the state
///    of version *v − 1* (``SessionDelta/apply(to:)``); a snapshot is a whole state. The store keeps, per user,
///    the last snapshot and the later deltas (older lines may go), and loads a session on a miss by folding
///    them in version order (``SessionFold``), evaluating nothing.
/// 9. **Fencing refuses a stale owner.** A delta is kept only if the user's newest stored version is exactly
///    its ``SessionCheckpoint/expected``; a snapshot only if it is that or lower; a removal only if it is the
///    removal's version or lower. A refused change refuses its whole append (its records too), reported as a
///    failed commit with `.superseded`; the ``SessionStore`` then loads the newest state and pushes again.
///    Two owners of one version never both commit (a unique key, or one writer that checks in commit order).
/// 10. **What cannot be applied is not a crash.** A line that does not parse or leaves a version gap stops
///    the fold there: the load returns what applies with the newest version seen and
///    ``StoredSession/deltas`` `Int.max`, so the session's next commit is a snapshot, fenced like any other;
///    the store counts the lines and logs the user ID.
///
/// `SessionPersistenceConformance` and `SessionCommitConformance` (ContainerKitTesting) check these
/// promises against a store; they run against the segment log, PostgreSQL and the in-memory reference
/// `InMemorySessionLog`.
///
/// ```swift
/// final class ListStore: RecordStore {           // a store for tests, in memory
///     let state = Mutex<(records: [AnalyticsRecord], acknowledged: Int, tickets: UInt64)>(([], 0, 0))
///     let commits = Mutex<RecordStoreCommits?>(nil)
///     func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 {
///         let ticket = state.withLock { $0.records += records.records; $0.tickets += 1; return $0.tickets }
///         commits.withLock { $0 }?.committed(through: ticket, records: records.records.count)
///         return ticket
///     }
///     func run(reporting commits: RecordStoreCommits) async throws {
///         self.commits.withLock { $0 = commits }
///         try await Task.sleepUntilCancelled()
///     }
///     func read(after position: Int?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<Int> { … }
///     func acknowledge(through position: Int) async throws(AnalyticsSinkError) { … }
/// }
/// ```
public protocol RecordStore: AnyObject, Sendable {
    /// A place in the store's order of records: the segment log's is a segment and a byte offset, a
    /// database's the sequence number of a row. Comparable in append (commit) order.
    associatedtype Position: Comparable & Hashable & Sendable

    /// Takes `records` (encoded once by the pipeline: the store may write ``EncodedRecords/bytes`` as
    /// they are) and returns the append's ticket, at once. Must not wait for I/O.
    /// - Throws: ``AnalyticsSinkError`` `.queueFull` when the store holds as much as it may (nothing is
    ///   taken), `.closed` once the store stopped.
    func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64

    /// Commits what ``append(_:)`` took and reports every commit to `commits`, until the task is
    /// cancelled; then reports the tickets not committed as failed and returns. Called once.
    func run(reporting commits: RecordStoreCommits) async throws

    /// Up to `limit` committed records after `position` (`nil`: from the oldest not acknowledged), in
    /// order; an empty batch when nothing is committed after it. Must not block the caller's thread on
    /// disk or network I/O for long (do it on a thread the store owns, or with non-blocking I/O).
    /// - Throws: when the store cannot be read right now; nothing is skipped then.
    func read(after position: Position?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<Position>

    /// Records that everything up to and including `position` (a batch's ``StoredBatch/end``) is delivered.
    /// Called in order; never with a position beyond what ``read(after:limit:)`` returned.
    func acknowledge(through position: Position) async throws(AnalyticsSinkError)

    /// Whether a commit survives the process (`true` by default): the pipeline reports commits of a
    /// durable store as durable records to its observer.
    var isDurable: Bool { get }

    /// Adds the store's own counters to the pipeline's (``DeliveryStatistics/recordsReadFromDisk``,
    /// ``DeliveryStatistics/corruptRecords``, ``DeliveryStatistics/segmentCount``,
    /// ``DeliveryStatistics/queueBytes``). The default adds nothing.
    func addCounters(to statistics: inout DeliveryStatistics)
}

extension RecordStore {
    public var isDurable: Bool { true }
    public func addCounters(to statistics: inout DeliveryStatistics) {}
}

/// Records as the pipeline encoded them, once: each record's segment line (`<json>\t<crc32c>\n`), one
/// after the other in ``bytes``; ``lineEnds`` says where each record's line ends. A store that keeps
/// JSON (a database's `jsonb` column) takes ``json(at:)``.
///
/// A store that keeps sessions also takes ``sessions``: the change of the session whose push produced the
/// records (a ``SessionCheckpoint``: a delta, or now and then a whole snapshot), to be committed **in the same
/// commit** (see "Stores that keep sessions" in ``RecordStore``). A store that keeps only records (memory)
/// ignores them.
public struct EncodedRecords: Sendable {
    /// The records, in order.
    public var records: [AnalyticsRecord]
    /// Every record's line, one after the other.
    public var bytes: [UInt8]
    /// Where each record's line ends in ``bytes`` (just after its line feed).
    public var lineEnds: [Int]
    /// Session changes to commit with the records (deltas or snapshots, each fenced by its version: see
    /// ``SessionCheckpoint``); empty for records alone.
    public var sessions: [SessionCheckpoint]

    /// Encodes `records`: each once, as the segment log writes them; `sessions` travel with them.
    public init(_ records: [AnalyticsRecord], sessions: [SessionCheckpoint] = []) {
        var json = JSONByteWriter(capacity: records.count * 320)
        var ends: [Int] = []
        ends.reserveCapacity(records.count)
        for record in records {
            SegmentLog.appendLine(record, to: &json)
            ends.append(json.count)
        }
        self.records = records
        self.bytes = json.bytes
        self.lineEnds = ends
        self.sessions = sessions
    }

    /// Adds `other`'s records (and sessions) after these, without encoding anything again.
    public mutating func append(_ other: EncodedRecords) {
        let shift = bytes.count
        records += other.records
        bytes += other.bytes
        lineEnds += other.lineEnds.map { $0 + shift }
        sessions += other.sessions
    }

    /// The JSON of record `index` (its line without the checksum and the line feed).
    public func json(at index: Int) -> ArraySlice<UInt8> {
        let start = index == 0 ? 0 : lineEnds[index - 1]
        return bytes[start..<(lineEnds[index] - 10)]
    }

    /// Every record's JSON in these bytes (no copy), for a push's answer (``TagOutput/recordsJSON``).
    public var recordsJSON: RecordsJSON {
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(lineEnds.count)
        var start = 0
        for end in lineEnds {
            ranges.append(start..<(end - 10))
            start = end
        }
        return RecordsJSON(bytes: bytes, ranges: ranges)
    }
}

/// What ``RecordStore/read(after:limit:)`` returns: committed records and the position after the last of
/// them.
public struct StoredBatch<Position: Comparable & Hashable & Sendable>: Sendable {
    /// The records, in order (at most the `limit` asked for).
    public var records: [AnalyticsRecord]
    /// The position of the last record read or skipped (what ``RecordStore/acknowledge(through:)`` gets
    /// once the batch is settled); `nil` when the batch is empty and nothing was skipped.
    public var end: Position?
    /// Records skipped as provably bad (torn, unparsable, a checksum mismatch), inside the batch's range.
    public var skipped: Int
    /// What was wrong with each skipped record (logged by the pipeline).
    public var problems: [String]
    /// Each record's JSON as the store keeps it (``EncodedRecords/json(at:)``: what
    /// ``AnalyticsRecord/jsonLine`` holds), one per record of ``records`` in order, when the store has those
    /// bytes at hand; `nil` otherwise. A destination may copy parts of it instead of encoding the records
    /// again (``AnalyticsDestination/deliver(_:json:)``).
    public var json: RecordsJSON?

    /// Creates a batch (`json`: see ``json``; ignored unless it holds one entry per record).
    public init(
        records: [AnalyticsRecord],
        end: Position?,
        skipped: Int = 0,
        problems: [String] = [],
        json: RecordsJSON? = nil
    ) {
        self.records = records
        self.end = end
        self.skipped = skipped
        self.problems = problems
        self.json = json?.count == records.count ? json : nil
    }

    /// Nothing committed after the position asked for.
    public static var empty: StoredBatch { StoredBatch(records: [], end: nil) }
}

/// Where a ``RecordStore`` reports its commits (the pipeline that runs it). Thread-safe; cheap to call
/// from a writer thread.
public struct RecordStoreCommits: Sendable {
    private let onCommit: @Sendable (UInt64, Int) -> Void
    private let onFailure: @Sendable (ClosedRange<UInt64>, Int, DurabilityError) -> Void
    private let onAvailable: @Sendable () -> Void
    private let onProblem: @Sendable (String) -> Void

    /// Creates a reporter from its callbacks.
    public init(
        committed: @escaping @Sendable (_ through: UInt64, _ records: Int) -> Void,
        failed: @escaping @Sendable (_ tickets: ClosedRange<UInt64>, _ records: Int, _ error: DurabilityError) -> Void,
        available: @escaping @Sendable () -> Void = {},
        problem: @escaping @Sendable (_ message: String) -> Void = { _ in }
    ) {
        onCommit = committed
        onFailure = failed
        onAvailable = available
        onProblem = problem
    }

    /// The store met a problem it handles itself (a recovery that left a torn line out, a segment it could not
    /// delete); the pipeline logs `message` as a warning, at most once per log interval for the same problem.
    public func reportProblem(_ message: String) { onProblem(message) }

    /// Records may be readable that no commit of this store reported: a store shared by several
    /// instances saw another instance's commits, or took over a partition of records. The pipeline reads
    /// again (after an empty read it otherwise waits for the next commit).
    public func recordsAvailable() { onAvailable() }

    /// Every ticket up to and including `through` not reported failed is durable; the commit held
    /// `records` records.
    public func committed(through ticket: UInt64, records: Int) { onCommit(ticket, records) }

    /// The commit holding `tickets` (`records` records) failed with `error`: those records are not stored.
    public func failed(_ tickets: ClosedRange<UInt64>, records: Int, error: DurabilityError) {
        onFailure(tickets, records, error)
    }
}
