import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// PostgreSQL as a ``RecordStore`` of the one ``DeliveryPipeline``: records (and the session checkpoints their
/// push produced) are committed in group commits, and delivered from any number of instances, each leasing
/// a share of the delivery partitions.
///
/// ```swift
/// let store = PostgresRecordStore(configuration: .init(endpoint: try PostgresEndpoint(url: url)))
/// let pipeline = DeliveryPipeline(store: store, destination: SharedRateLimitDestination(braze, store: store))
/// let sessions = SessionStore(
///     tagManager: manager,
///     configuration: .init(persistence: store.sessions, committer: RecordCommitter(pipeline, keepsSessions: true))
/// )
/// BrazeTagProvider(sink: CommitSink()).register(on: manager)
/// // in the service's task group:  try await pipeline.run();  try await sessions.run()
/// // per request: the push's records and its session delta are committed together, then it returns
/// let result = try await sessions.push(event: "purchase", parameters: parameters, for: user)
/// ```
///
/// ## Group commit
/// Every ``append(_:)`` joins the open **group**; the writer commits each group in **one call**: one
/// prepared call of `ck_commit_group` (a PL/pgSQL function ``PostgresSchema`` creates), in autocommit, which
/// takes the advisory locks of the group's session users, reads their heads, and — only if no user is fenced —
/// inserts all the group's records (one multi-row `INSERT`), its session rows, deletes the rows a snapshot
/// replaces and applies removals, in one transaction. Then the writer reports the group's tickets to the
/// pipeline. Nothing is parsed twice: the call is prepared once per connection and PL/pgSQL plans its
/// statements once per connection. The group is acknowledged only after PostgreSQL answered a second, empty
/// statement on the same connection: the call's transaction commits when PostgreSQL reaches its Sync, after the
/// rows postgres-nio hands back, and the next answer comes after that commit (``Statistics/roundTrips`` counts
/// both: two per group).
///
/// While a commit runs, the next group gathers. Like PostgreSQL's `commit_delay` / `commit_siblings`, a writer
/// that saw appends arrive during its commit (others are coming) waits up to ``Configuration/commitDelay`` for
/// more before the next commit, and stops early once ``Configuration/gatherTarget`` appends wait or a tick
/// (a quarter of the delay, at most 10 ms) passes with no new one; with nothing arriving it commits at once, so a
/// lone request waits for nothing. Under load one commit carries many requests (``Statistics/rowsPerCommit``).
///
/// ## Sessions
/// A user's session is kept in `ck_session_changes` as its last snapshot and the deltas committed after it,
/// one row per version (``SessionCheckpoint``): a push inserts a small delta row; every few commits (the
/// ``SessionStore``'s ``SessionStore/Configuration/snapshotInterval``) it inserts the whole snapshot, from which
/// the user's chain starts: the rows before it are read by nothing, and the next compaction (``compactSessions()``,
/// every health interval, one instance at a time) deletes them in bulk. A load folds the newest snapshot and the
/// deltas after it (``PostgresSessionPersistence``). The `ck_sessions` rows versions before deltas wrote are moved into
/// `ck_session_changes` as snapshot rows, once, by the first store whose definitions do so (``PostgresSchema``).
///
/// ## Fencing
/// A checkpoint carries its version and the version it continues (``SessionCheckpoint/expected``). The user's
/// stored **head** is their newest version in either table. A delta is kept only if the head is exactly its
/// expected version (it applies to that state); a snapshot only if the head is no higher. The group's
/// checkpoints of one user are checked as a chain: the first against the head, each next one against the one
/// before. Otherwise another instance wrote the user meanwhile, and the write is **refused**: the call
/// writes nothing, the appends that carried that user fail with ``AnalyticsSinkError/Code/superseded``, and
/// the rest of the group is committed again without them (another call, only then). The group's users
/// are locked first (`pg_advisory_xact_lock`, in one order), so the head is read after any other instance's
/// write of the same user committed: two instances never both continue one version, and a removal never
/// deletes the snapshot a concurrent delta applies to.
///
/// ## Delivery
/// The rows are split into ``Configuration/partitions`` partitions (`hash(user) % partitions`, so a user's
/// records are delivered in order). An instance **leases** a partition with a session-level advisory lock on
/// its lease connection, so the lease dies with the connection: a killed instance's partitions are taken
/// over at the next lease check. ``read(after:limit:)`` reads the leased partitions in `(xid, seq)` order,
/// only below the oldest transaction still running (`pg_snapshot_xmin`), so a row committed late never lands
/// behind a cursor (a read that finds rows committed only behind such a transaction reads again shortly instead
/// of reporting none, so a flush or a drain waits for them); ``acknowledge(through:)`` moves the partitions' cursor rows on the lease connection, so an
/// instance that lost a lease can acknowledge nothing of it. A crash re-sends at most the batches in flight.
/// A pipeline's `flush()` or drain over this store waits for the partitions this instance leases: records this
/// instance committed into a partition another instance leases are delivered by that instance, and the flush does not
/// wait for them.
///
/// ## Connections
/// Commits, loads, health checks, figures and rotation take a connection of postgres-nio's pool
/// (`PostgresClient`, at most ``Configuration/maximumConnections``; it runs inside ``run(reporting:)``).
/// Loads are gathered like commits: while one load query runs, the users asked for meanwhile join the next,
/// and each query reads up to ``Configuration/maximumUsersPerLoad`` users at once (`user_id = ANY($1)`), so a
/// burst of new users opens no more connections than the pool holds. Delivery keeps a connection of its own
/// (the lease connection, below).
///
/// ## Failures and deadlines
/// Every call has a deadline, ``Configuration/callTimeout`` (5 s), below a proxy's usual timeout (nginx's
/// `proxy_read_timeout` is 60 s): the server cancels a statement past `statement_timeout` (four fifths of it;
/// `lock_timeout` the same), and the client closes a connection whose call outlives the deadline (a server or
/// network that stopped answering). A commit that fails — the deadline passed (`postgres_timeout`), the
/// connection was lost (`postgres_unavailable`), the role lacks a privilege (`postgres_permission_denied`,
/// naming what to grant) — fails its group with `.timeout` past the deadline, `.unavailable` otherwise (nothing of
/// it acknowledged; when the answer was cut off after the server committed, its rows may still be delivered — at
/// least once), and ``isAvailable`` turns `false`: new groups and loads fail at once until a later call succeeds —
/// the next commit is attempted after the health check (`ck_probe()`, which takes the locks a commit takes)
/// passes, every ``Configuration/healthInterval``. Messages never hold the database URL, its password, SQL text
/// or the server's detail; the log has the server's message and SQLSTATE.
///
/// ## Rotation
/// Rows are never deleted one by one. Records go into the current **generation** (a partition of
/// `ck_records`); every ``Configuration/rotationInterval`` one instance starts a new generation and drops the
/// older ones whose rows every delivery partition has acknowledged (see ``PostgresSchema``).
public final class PostgresRecordStore: RecordStore {
    /// A batch's place: the store numbers the batches it reads, and remembers per batch where each partition's
    /// cursor moves when it is acknowledged.
    public struct Position: Comparable, Hashable, Sendable, CustomStringConvertible {
        /// The batch's number, from 1 in each run.
        public var batch: UInt64

        /// Creates a position.
        public init(batch: UInt64) { self.batch = batch }

        public static func < (lhs: Position, rhs: Position) -> Bool { lhs.batch < rhs.batch }
        public var description: String { "batch \(batch)" }
    }

    /// Tunables of a store.
    public struct Configuration: Sendable {
        /// The server.
        public var endpoint: PostgresEndpoint
        /// This instance's name in logs and in `pg_stat_activity`'s `application_name`.
        public var instanceName = "containerkit"
        /// Delivery partitions, used when this instance creates the tables (16): a user's records all go to
        /// partition `hash(user) % partitions`, and one instance at a time delivers a partition.
        public var partitions = 16
        /// The most records one transaction carries (10,000); a larger backlog takes several commits.
        public var maximumRowsPerCommit = 10_000
        /// The most records waiting for a commit (200,000); beyond, ``append(_:)`` refuses with `queueFull`.
        public var maximumPendingRows = 200_000
        /// The longest the writer lets a group gather after a commit during which appends arrived
        /// (``defaultCommitDelay``); 0: never (a busy writer still gathers while it commits). A lone request
        /// never waits for it: with nothing arriving the writer commits at once.
        public var commitDelay: Duration = PostgresRecordStore.Configuration.defaultCommitDelay
        /// The appends a gathering group stops waiting at (64).
        public var gatherTarget = 64
        /// How long a gathering writer goes without a new append before it commits what waits: a quarter of
        /// ``commitDelay``, at most 10 ms (5 ms with the default delay).
        public var gatherTick: Duration { min(commitDelay / 4, .milliseconds(10)) }
        /// The deadline of every call to PostgreSQL (5 s): a commit, a load, a health check, a delivery read.
        /// The server's `statement_timeout` and `lock_timeout` are four fifths of it, so that the server
        /// usually ends a slow statement itself; past the whole deadline the client closes the connection.
        public var callTimeout: Duration = .seconds(5)
        /// The most connections the store's pool opens (4): the writer, the loader, the health check and one
        /// for figures or rotation. Delivery's lease connection comes on top.
        public var maximumConnections = 4
        /// The most users one load query reads (1,000).
        public var maximumUsersPerLoad = 1000
        /// How often the newest generation is closed and fully acknowledged ones are dropped (30 s).
        public var rotationInterval: Duration = .seconds(30)
        /// How often the server's reachability is checked (1 s), and how long after a failed connection new
        /// groups fail at once before the next attempt.
        public var healthInterval: Duration = .seconds(1)
        /// How often leases are balanced (1 s): the longest a dead instance's partitions stay undelivered,
        /// beyond the time PostgreSQL takes to see its connection close.
        public var leaseInterval: Duration = .seconds(1)
        /// How often an idle pipeline is told to read the leased partitions again (100 ms): how soon records
        /// another instance committed are delivered.
        public var pollInterval: Duration = .milliseconds(100)
        /// How long to wait after losing the lease connection before connecting again (1 s).
        public var reconnectDelay: Duration = .seconds(1)
        /// Whether this instance delivers (leases partitions) at all (`true`).
        public var delivers = true
        /// The first key of the advisory locks the store takes.
        public var lockNamespace = PostgresSchema.defaultLockNamespace
        /// Called when ``PostgresRecordStore/isAvailable`` changes (a host's readiness follows it).
        public var onAvailabilityChanged: (@Sendable (Bool) -> Void)?
        /// Called when the set of leased partitions changed, with the partitions now held.
        public var onLeasesChanged: (@Sendable ([Int]) -> Void)?
        /// Called when a read found committed rows only behind a transaction still running, and reads again
        /// (tests).
        var onRowsBehindHorizon: (@Sendable () -> Void)?
        /// Where the store logs.
        public var logger = Logger(label: "containerkit.postgres.records")

        /// Creates a configuration for `endpoint` with the defaults.
        public init(endpoint: PostgresEndpoint, instanceName: String = "containerkit") {
            self.endpoint = endpoint
            self.instanceName = instanceName
        }

        /// ``commitDelay``'s default, 20 ms: what RudderStack's gateway waits to batch its database writes (15 ms
        /// for a batch of requests, 5 ms for the write). Under load a commit then carries 37–40 requests where
        /// 2 ms gathered 24–27, at less PostgreSQL CPU per event (Docs/Scaling.md); a request pays for it
        /// only when others arrived during the commit before, and at most one ``gatherTick`` (5 ms) once they
        /// stop coming.
        public static let defaultCommitDelay: Duration = .milliseconds(20)

        /// The connection parameters every connection starts with: its name in `pg_stat_activity`, the
        /// server's side of the call deadline, and plans made once per connection. The store's statements are
        /// short and keyed by their parameters: left to choose, PostgreSQL planned the delivery's read and
        /// acknowledgement afresh at every call (4.9 % of its CPU samples under load), and JIT compilation never
        /// pays for them.
        func connectionParameters(applicationName: String) -> [(String, String)] {
            let milliseconds = max(1, Int(callTimeout.seconds * 800))
            return [
                ("application_name", applicationName),
                ("statement_timeout", "\(milliseconds)"),
                ("lock_timeout", "\(milliseconds)"),
                ("plan_cache_mode", "force_generic_plan"),
                ("jit", "off"),
            ]
        }
    }

    /// Counters since the store was created, and the leases held now.
    public struct Statistics: Sendable, Hashable {
        /// Transactions committed.
        public var commits = 0
        /// Commit calls sent (one per group; a fenced group's retry is another).
        public var roundTrips = 0
        /// Record rows committed.
        public var committedRows = 0
        /// Session rows inserted (one per checkpoint; a checkpoint followed by a snapshot in the same commit is
        /// not written), plus removals.
        public var committedSessions = 0
        /// Groups (or parts of groups) that failed: nothing of them acknowledged.
        public var failedCommits = 0
        /// Session writes refused because another instance holds a newer version.
        public var fencedSessions = 0
        /// Stored session deltas (or snapshots) a load could not apply: the row does not parse, or does not
        /// follow the version before it. The session continues from what applied; its next commit is a snapshot.
        public var unappliedSessionDeltas = 0
        /// Total seconds spent in committed transactions (BEGIN to COMMIT answered).
        public var commitSeconds = 0.0
        /// The longest commit, in seconds.
        public var maximumCommitSeconds = 0.0
        /// Generations started.
        public var rotations = 0
        /// Generations dropped (all their rows acknowledged).
        public var droppedGenerations = 0
        /// Session rows deleted by compactions: deltas and snapshots a newer snapshot of their user supersedes.
        public var compactedSessionRows = 0
        /// Records waiting for a commit.
        public var pendingRows = 0
        /// Partitions this instance leases now.
        public var leasesHeld = 0
        /// Delivering instances seen at the last lease check (this one included).
        public var instances = 0
        /// Leases taken (including after a reconnect).
        public var leasesTaken = 0
        /// Batches acknowledged (cursors moved).
        public var acknowledgedBatches = 0
        /// Rows acknowledged.
        public var acknowledgedRows = 0
        /// Session load queries sent (each reads many users' rows).
        public var loadQueries = 0
        /// Users read by those queries.
        public var loadedUsers = 0
        /// Calls that ran past ``Configuration/callTimeout`` (or the server's timeouts derived from it).
        public var timedOutCalls = 0

        /// Record rows per commit, on average.
        public var rowsPerCommit: Double { commits == 0 ? 0 : Double(committedRows) / Double(commits) }
        /// Round trips per commit, on average (1 unless groups were fenced).
        public var roundTripsPerCommit: Double { commits == 0 ? 0 : Double(roundTrips) / Double(commits) }
    }

    /// The configuration the store was created with.
    public let configuration: Configuration

    struct Entry {
        var ticket: UInt64
        var partitions: [Int32]
        var payloads: [String]
        var sessions: [SessionCheckpoint]
        var removals: [(userID: String, version: Int64)]
    }

    /// Where a partition's delivery stands: a cursor is the `(xid, seq)` of the last row.
    struct Cursor: Comparable, Hashable, Sendable {
        var xid: Int64
        var seq: Int64
        static func < (lhs: Cursor, rhs: Cursor) -> Bool { (lhs.xid, lhs.seq) < (rhs.xid, rhs.seq) }
    }

    struct Lease {
        /// The lease connection's number when the lease was taken.
        var epoch: UInt64
        /// The last row handed to the pipeline.
        var read: Cursor
        /// The last row acknowledged.
        var acknowledged: Cursor
        /// Batches read and not acknowledged that hold rows of the partition.
        var inFlight = 0
        /// Given back once nothing of it is in flight.
        var releasing = false
    }

    struct Batch {
        var epoch: UInt64
        var ends: [Int: Cursor]
        var rows: [Int: Int]
    }

    enum Phase { case idle, running, stopped }

    struct State {
        var phase = Phase.idle
        var pending: [Entry] = []
        var pendingRows = 0
        var lastTicket: UInt64 = 0
        var resolvedTicket: UInt64 = 0
        var failures: [UInt64: AnalyticsSinkError] = [:]
        var waiters: [(UInt64, CheckedContinuation<AnalyticsSinkError?, Never>)] = []
        var writerWakeup: CheckedContinuation<Void, Never>?
        var partitions: Int
        var available = false
        /// Set by a call that found the server unusable (lost, too slow, refusing the role): new groups and
        /// loads fail with it at once until a call succeeds.
        var failingFast: PostgresStoreError?
        /// The last failure logged at warning level (the same one again is logged at debug).
        var lastLoggedFailure: String?
        /// Session loads waiting for the next load query, and the loader waiting for them.
        var loads: [LoadRequest] = []
        var loaderWakeup: CheckedContinuation<Void, Never>?
        var statistics = Statistics()
        var availabilityWaiters: [CheckedContinuation<Void, Never>] = []
        var schemaReady = false
        /// A call is creating the schema; the others wait for it (``schemaWaiters``) instead of running the same
        /// DDL at once (two of them deadlock with a commit between them).
        var ensuringSchema = false
        var schemaWaiters: [CheckedContinuation<Bool, Never>] = []
        /// A call found a table or function missing: the next ensure runs the DDL whatever the schema's mark says.
        var schemaStale = false
        var commits: RecordStoreCommits?
        // Delivery.
        var epoch: UInt64 = 0
        var leaseConnection: PostgresConnection?
        var leases: [Int: Lease] = [:]
        var batches: [UInt64: Batch] = [:]
        var nextBatch: UInt64 = 0
        var readOffset = 0
        /// The pipeline's last read found nothing: the lease loop tells it to read again every poll interval.
        var idle = true
        /// The last read passed over partitions with a batch in flight: an acknowledgement tells the pipeline
        /// to read again.
        var waitingForAcknowledgement = false
        /// Users whose stored rows a load found but could not make a session of (no readable snapshot), with
        /// their head version: ``PostgresSessionPersistence/endedVersion(userID:)`` starts their new session
        /// above it, so that its first snapshot is kept (bounded; see ``PostgresSessionPersistence``).
        var unreadableHeads: [UserIDKey: Int64] = [:]
    }

    let state: Mutex<State>
    /// Whether the lease loop has balanced the leases once: a read waits for that (see ``read(after:limit:)``);
    /// an atomic, so that the reads after it take no lock for it.
    let leasesChecked = Atomic<Bool>(false)
    /// postgres-nio's pool: the writer's, the loader's and the maintenance calls' connections.
    let client: PostgresClient

    /// Creates a store; connects nothing until ``run(reporting:)``.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.client = PostgresClient(
            configuration: configuration.endpoint.clientConfiguration(
                parameters: configuration.connectionParameters(
                    applicationName: "containerkit \(configuration.instanceName)"
                ),
                maximumConnections: configuration.maximumConnections
            ),
            backgroundLogger: configuration.logger
        )
        self.state = Mutex(State(partitions: max(1, configuration.partitions)))
    }

    /// Counters since the store was created, and the leases held now.
    public var statistics: Statistics {
        state.withLock {
            var statistics = $0.statistics
            statistics.pendingRows = $0.pendingRows
            statistics.leasesHeld = $0.leases.count
            return statistics
        }
    }

    /// Whether PostgreSQL answered the last health check or commit, and no call failed since for want of it
    /// (lost, past its deadline, refusing the role). A host's readiness follows it.
    public var isAvailable: Bool { state.withLock { $0.available } }

    /// While the store is unavailable, the code of the failure that made it so (`postgres_timeout`,
    /// `postgres_unavailable`, `postgres_permission_denied`); `nil` while it is available or before its first call.
    public var unavailableReason: PostgresStoreError.Code? {
        state.withLock { $0.available ? nil : $0.failingFast?.code }
    }

    /// The delivery partition count in force (read from the tables once the store connected).
    public var partitions: Int { state.withLock { $0.partitions } }

    /// The partitions leased now, ascending.
    public var leasedPartitions: [Int] { state.withLock { $0.leases.keys.sorted() } }

    /// The share of the partitions this instance leases now (0…1): its share of a cluster-wide rate limit.
    public var leaseShare: Double {
        state.withLock { Double($0.leases.count) / Double(max(1, $0.partitions)) }
    }

    /// The ``SessionPersistence`` over this store's session tables (loads on a miss; saves join the group
    /// commit).
    public var sessions: PostgresSessionPersistence { PostgresSessionPersistence(store: self) }

    // MARK: Appending

    /// Takes `records` and the session checkpoints that travel with them into the open group; returns at once.
    /// - Throws: `.closed` after ``run(reporting:)`` ended, `.queueFull` when too many records wait already.
    public func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 {
        let count = state.withLock { $0.partitions }
        var partitionList: [Int32] = []
        var payloads: [String] = []
        partitionList.reserveCapacity(records.records.count)
        payloads.reserveCapacity(records.records.count)
        for index in records.records.indices {
            partitionList.append(PostgresPartitioning.partition(of: records.records[index], count: count))
            payloads.append(String(decoding: records.json(at: index), as: UTF8.self))
        }
        return try enqueue(
            Entry(ticket: 0, partitions: partitionList, payloads: payloads, sessions: records.sessions, removals: [])
        )
    }

    func enqueue(_ entry: Entry) throws(AnalyticsSinkError) -> UInt64 {
        try state.withLock { state throws(AnalyticsSinkError) -> UInt64 in
            if state.phase == .stopped {
                throw AnalyticsSinkError(.closed, "the postgres record store is stopped")
            }
            if state.pendingRows + entry.payloads.count > configuration.maximumPendingRows {
                throw AnalyticsSinkError(
                    .queueFull,
                    "\(state.pendingRows) records are waiting for a commit (the most is \(configuration.maximumPendingRows))"
                )
            }
            state.lastTicket += 1
            var entry = entry
            entry.ticket = state.lastTicket
            state.pending.append(entry)
            state.pendingRows += entry.payloads.count
            let wakeup = state.writerWakeup
            state.writerWakeup = nil
            wakeup?.resume()
            return state.lastTicket
        }
    }

    /// Returns once `ticket`'s transaction committed, with `nil`, or with the error it failed with.
    func outcome(of ticket: UInt64) async -> AnalyticsSinkError? {
        await withCheckedContinuation { continuation in
            let immediate: AnalyticsSinkError?? = state.withLock { state in
                if ticket <= state.resolvedTicket { return .some(state.failures[ticket]) }
                if state.phase == .stopped { return .some(AnalyticsSinkError(.closed, "the store stopped")) }
                state.waiters.append((ticket, continuation))
                return .none
            }
            if case .some(let result) = immediate { continuation.resume(returning: result) }
        }
    }

    // MARK: Figures read from PostgreSQL

    /// Committed records no delivery partition has acknowledged yet.
    /// - Throws: ``PostgresStoreError`` when the server cannot answer within the call deadline.
    public func undeliveredRows() async throws -> Int {
        let logger = configuration.logger
        let counts = try await call("the figures query") { connection in
            try await connection.all(PostgresStatements.UndeliveredRows(), logger: logger)
        }
        return Int(counts.first ?? 0)
    }

    // MARK: Running

    /// Connects, creates the tables if needed, commits groups and reports them to `commits`, leases delivery
    /// partitions, and rotates generations, until the task is cancelled; then fails what is pending with
    /// `.closed` and returns.
    public func run(reporting commits: RecordStoreCommits) async throws {
        let start = state.withLock { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .running
            state.commits = commits
            return true
        }
        guard start else { throw AnalyticsSinkError(.closed, "run(reporting:) was called twice") }
        await withTaskGroup(of: Void.self) { group in
            // The pool's own work (connecting, keeping idle connections alive) until the store stops.
            group.addTask { await self.client.run() }
            group.addTask { await self.writerLoop() }
            group.addTask { await self.loaderLoop() }
            group.addTask { await self.maintenanceLoop() }
            if configuration.delivers { group.addTask { await self.leaseLoop() } }
            await withTaskCancellationHandler {
                await group.waitForAll()
            } onCancel: {
                let wakeups = self.state.withLock { state in
                    if state.phase == .running { state.phase = .stopped }
                    defer {
                        state.writerWakeup = nil
                        state.loaderWakeup = nil
                    }
                    return [state.writerWakeup, state.loaderWakeup]
                }
                for wakeup in wakeups { wakeup?.resume() }
            }
        }
        let closed = AnalyticsSinkError(.closed, "the store stopped before the commit")
        let (left, waiters, loads) = state.withLock { state in
            state.phase = .stopped
            defer { state.loads = [] }
            let left = state.pending
            for entry in left { state.failures[entry.ticket] = closed }
            state.resolvedTicket = state.lastTicket
            state.pending = []
            state.pendingRows = 0
            defer { state.waiters = [] }
            return (left, state.waiters, state.loads)
        }
        for load in loads {
            load.continuation.resume(returning: .failure(PostgresStoreError(.unavailable, "the store stopped")))
        }
        if let first = left.first?.ticket, let last = left.last?.ticket {
            commits.failed(
                first...last,
                records: left.reduce(0) { $0 + $1.payloads.count },
                error: DurabilityError(closed)
            )
        }
        for (ticket, waiter) in waiters {
            waiter.resume(returning: state.withLock { $0.failures[ticket] })
        }
    }

    // MARK: Availability

    func setAvailable(_ available: Bool) {
        let (changed, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            let changed = state.available != available
            state.available = available
            guard available else { return (changed, []) }
            state.failingFast = nil
            state.lastLoggedFailure = nil
            defer { state.availabilityWaiters = [] }
            return (changed, state.availabilityWaiters)
        }
        for waiter in waiters { waiter.resume() }
        if changed { configuration.onAvailabilityChanged?(available) }
    }

    /// Returns once ``isAvailable`` is `true` (at once if it is; needs ``run(reporting:)``).
    public func waitUntilAvailable() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.available { return true }
                state.availabilityWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Creates the tables and functions the first time this store reaches the server (on the connection of its
    /// first call), and reads the partition count. One call at a time: the others wait for it, and try
    /// themselves only if it failed.
    func ensureSchema(on connection: PostgresConnection) async throws {
        while true {
            if state.withLock({ $0.schemaReady }) { return }
            let mine = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let run = state.withLock { state -> Bool? in
                    if state.schemaReady { return false }
                    if state.ensuringSchema {
                        state.schemaWaiters.append(continuation)
                        return nil
                    }
                    state.ensuringSchema = true
                    return true
                }
                if let run { continuation.resume(returning: run) }
            }
            guard mine else { continue }
            let force = state.withLock { $0.schemaStale }
            do {
                let count = try await PostgresSchema.ensure(
                    on: connection,
                    partitions: configuration.partitions,
                    lockNamespace: configuration.lockNamespace,
                    force: force,
                    logger: configuration.logger
                )
                finishEnsuring { state in
                    state.partitions = count
                    state.schemaReady = true
                    state.schemaStale = false
                }
                return
            } catch {
                finishEnsuring { _ in }
                throw error
            }
        }
    }

    private func finishEnsuring(_ update: (inout State) -> Void) {
        let waiters = state.withLock { state in
            update(&state)
            state.ensuringSchema = false
            defer { state.schemaWaiters = [] }
            return state.schemaWaiters
        }
        for waiter in waiters { waiter.resume(returning: false) }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}
