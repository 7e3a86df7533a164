import ContainerKit
import ContainerKitBraze
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Records and sessions in PostgreSQL, acknowledged only after their transaction commits.
///
/// Every ``append(_:session:)`` (or ``enqueue(_:)``, as the Braze provider's sink) joins the open **group**;
/// one writer connection commits each group in **one transaction** — one multi-row `INSERT` of all its
/// records, and the snapshot of every session the group touched, guarded by its version — then resolves
/// the group's tickets. While a transaction runs, the next group gathers, so under load one commit carries
/// many requests (`rows per commit` in ``statistics``).
///
/// ```swift
/// let store = PostgresRecordStore(configuration: .init(endpoint: try PostgresEndpoint(url: url)))
/// // in the service's task group:  try await store.run()
/// let snapshot = try await store.loadSession(userID: "u1")          // on a miss; nil for a new user
/// try await store.commit(records, session: .init(userID: "u1", snapshot: session.snapshot()))
/// ```
///
/// ## Fencing
/// The store remembers, per user, the version it last read or wrote. A session write expects that version
/// (`UPDATE … WHERE version = expected`, or an `INSERT … ON CONFLICT DO NOTHING` for a user it never saw).
/// When another instance wrote a newer version meanwhile, the write is **refused**: the transaction is rolled
/// back, the requests that touched that user fail with ``PostgresStoreError/Code/fenced``, the rest of the
/// group is committed again without them, and ``Configuration/onSessionsInvalidated`` names the user so the
/// host drops its stale copy and loads the session again on the next request.
///
/// ## Failures
/// A lost connection fails the group being committed (``PostgresStoreError/Code/commitFailed``: nothing of it
/// is acknowledged; when `COMMIT` itself was cut off its rows may still be delivered — at least once) and
/// invalidates the sessions it touched. Until the server answers again, new groups fail at once
/// (``PostgresStoreError/Code/unavailable``) and ``isAvailable`` is `false`; the store reconnects by itself.
///
/// ## Rotation
/// Rows are never deleted one by one. Records go into the current **generation** (a partition of
/// `ck_records`); every ``Configuration/rotationInterval`` one instance starts a new generation and drops the
/// older ones whose rows every delivery partition has acknowledged (see ``PostgresSchema``).
public final class PostgresRecordStore: AnalyticsSink, DurabilitySource, Sendable {
    /// Tunables of a store.
    public struct Configuration: Sendable {
        /// The server.
        public var endpoint: PostgresEndpoint
        /// Delivery partitions, used when this instance creates the tables (16): a user's records all go to
        /// partition `hash(user) % partitions`, and one instance at a time delivers a partition.
        public var partitions = 16
        /// The most records one transaction carries (10,000); a larger backlog takes several commits.
        public var maximumRowsPerCommit = 10_000
        /// The most records waiting for a commit (200,000); beyond, ``enqueue(_:)`` refuses with `queueFull`.
        public var maximumPendingRows = 200_000
        /// How long the writer lets a group gather after a commit (0: a busy writer gathers while it commits).
        public var commitDelay: Duration = .zero
        /// How often the newest generation is closed and fully acknowledged ones are dropped (30 s).
        public var rotationInterval: Duration = .seconds(30)
        /// How often the server's reachability is checked (1 s), and how long after a failed connection new
        /// groups fail at once before the next attempt.
        public var healthInterval: Duration = .seconds(1)
        /// The first key of the advisory locks the adapters take.
        public var lockNamespace = PostgresSchema.defaultLockNamespace
        /// Called with the users whose sessions this instance must load again: their write was fenced, or
        /// a commit that held it failed.
        public var onSessionsInvalidated: (@Sendable ([String]) -> Void)?
        /// Called when ``PostgresRecordStore/isAvailable`` changes (a host's readiness follows it).
        public var onAvailabilityChanged: (@Sendable (Bool) -> Void)?
        /// Where the store logs.
        public var logger = Logger(label: "containerkit.postgres.records")

        /// Creates a configuration for `endpoint` with the defaults.
        public init(endpoint: PostgresEndpoint) { self.endpoint = endpoint }
    }

    /// The session snapshot a request produced, written in the same transaction as its records.
    public struct SessionWrite: Sendable {
        /// The user (compared as bytes).
        public var userID: String
        /// The session's state after the request.
        public var snapshot: SessionSnapshot

        /// Creates a write.
        public init(userID: String, snapshot: SessionSnapshot) {
            self.userID = userID
            self.snapshot = snapshot
        }
    }

    /// Counters since the store was created.
    public struct Statistics: Sendable, Hashable {
        /// Transactions committed.
        public var commits = 0
        /// Record rows committed.
        public var committedRows = 0
        /// Session rows written.
        public var committedSessions = 0
        /// Groups (or parts of groups) that failed: nothing of them acknowledged.
        public var failedCommits = 0
        /// Session writes refused because another instance holds a newer version.
        public var fencedSessions = 0
        /// Total seconds spent in committed transactions (BEGIN to COMMIT answered).
        public var commitSeconds = 0.0
        /// The longest commit, in seconds.
        public var maximumCommitSeconds = 0.0
        /// Generations started.
        public var rotations = 0
        /// Generations dropped (all their rows acknowledged).
        public var droppedGenerations = 0
        /// Records waiting for a commit.
        public var pendingRows = 0

        /// Record rows per commit, on average.
        public var rowsPerCommit: Double { commits == 0 ? 0 : Double(committedRows) / Double(commits) }
    }

    /// The configuration the store was created with.
    public let configuration: Configuration

    private struct PendingSession {
        var userID: String
        var expected: Int64
        var version: Int64
        var snapshot: SessionSnapshot
    }

    private struct Entry {
        var ticket: UInt64
        var partitions: [Int32]
        var payloads: [String]
        var session: PendingSession?
    }

    private enum Phase { case idle, running, stopping, stopped }

    private struct State {
        var phase = Phase.idle
        var pending: [Entry] = []
        var pendingRows = 0
        var lastTicket: UInt64 = 0
        var resolvedTicket: UInt64 = 0
        var failures: [UInt64: PostgresStoreError] = [:]
        var waiters: [(UInt64, CheckedContinuation<PostgresStoreError?, Never>)] = []
        var writerWakeup: CheckedContinuation<Void, Never>?
        var versions: [String: Int64] = [:]
        var partitions: Int
        var available = false
        var failFastUntil: ContinuousClock.Instant?
        var statistics = Statistics()
        var commitObservers: [@Sendable () -> Void] = []
        var availabilityWaiters: [CheckedContinuation<Void, Never>] = []
        var schemaReady = false
    }

    private let state: Mutex<State>
    private let pool: PostgresConnectionPool

    /// Creates a store; connects nothing until ``run()``.
    public init(configuration: Configuration) {
        self.configuration = configuration
        self.pool = PostgresConnectionPool(
            endpoint: configuration.endpoint,
            applicationName: "containerkit-store",
            logger: configuration.logger
        )
        self.state = Mutex(State(partitions: max(1, configuration.partitions)))
    }

    /// Counters since the store was created.
    public var statistics: Statistics {
        state.withLock {
            var statistics = $0.statistics
            statistics.pendingRows = $0.pendingRows
            return statistics
        }
    }

    /// Whether PostgreSQL answered the last health check and the last commit did not lose its connection.
    public var isAvailable: Bool { state.withLock { $0.available } }

    /// The delivery partition count in force (read from the tables once ``run()`` connected).
    public var partitions: Int { state.withLock { $0.partitions } }

    /// Calls `observer` after each successful commit (a delivery in the same process wakes up with it).
    public func onCommit(_ observer: @escaping @Sendable () -> Void) {
        state.withLock { $0.commitObservers.append(observer) }
    }

    // MARK: Appending

    /// Takes `records` into the open group (the ``AnalyticsSink`` entry: records without a session).
    /// - Returns: the token that resolves when their transaction committed.
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard !records.isEmpty else { return nil }
        do {
            return DurabilityToken(source: self, ticket: try append(records, session: nil))
        } catch {
            throw AnalyticsSinkError(error.code == .closed ? .closed : .queueFull, error.message)
        }
    }

    /// Takes `records` and the session state they produced into the open group; returns promptly.
    /// - Returns: the ticket to pass to ``waitUntilDurable(ticket:)``.
    /// - Throws: ``PostgresStoreError/Code/closed`` after ``run()`` ended, `unavailable` when too many records
    ///   wait already.
    public func append(_ records: [AnalyticsRecord], session: SessionWrite?) throws(PostgresStoreError) -> UInt64 {
        var partitionList: [Int32] = []
        var payloads: [String] = []
        partitionList.reserveCapacity(records.count)
        payloads.reserveCapacity(records.count)
        let count = state.withLock { $0.partitions }
        for record in records {
            partitionList.append(PostgresPartitioning.partition(of: record, count: count))
            payloads.append(record.jsonLine)
        }
        return try state.withLock { state throws(PostgresStoreError) -> UInt64 in
            if state.phase == .stopped || state.phase == .stopping {
                throw PostgresStoreError(.closed, "the postgres record store is stopped")
            }
            if state.pendingRows + records.count > configuration.maximumPendingRows {
                throw PostgresStoreError(
                    .unavailable,
                    "\(state.pendingRows) records are waiting for a commit (the most is \(configuration.maximumPendingRows))"
                )
            }
            state.lastTicket += 1
            var pendingSession: PendingSession?
            if let session {
                let expected = state.versions[session.userID] ?? 0
                state.versions[session.userID] = expected + 1
                pendingSession = PendingSession(
                    userID: session.userID,
                    expected: expected,
                    version: expected + 1,
                    snapshot: session.snapshot
                )
            }
            state.pending.append(
                Entry(ticket: state.lastTicket, partitions: partitionList, payloads: payloads, session: pendingSession)
            )
            state.pendingRows += records.count
            let wakeup = state.writerWakeup
            state.writerWakeup = nil
            wakeup?.resume()
            return state.lastTicket
        }
    }

    /// Appends and waits for the commit: returns once the records and the session are durable together.
    /// - Throws: ``PostgresStoreError`` when the commit failed (nothing acknowledged) or the session was fenced.
    public func commit(_ records: [AnalyticsRecord], session: SessionWrite?) async throws(PostgresStoreError) {
        let ticket = try append(records, session: session)
        if let error = await outcome(of: ticket) { throw error }
    }

    /// Returns once `ticket`'s transaction committed; throws if it failed (`.stopped` once the store
    /// stopped, `.io` for any other failure; ``commit(_:session:)`` keeps ``PostgresStoreError``'s code).
    public func waitUntilDurable(ticket: UInt64) async throws(DurabilityError) {
        guard let error = await outcome(of: ticket) else { return }
        throw DurabilityError(error.code == .closed ? .stopped : .io, error.message)
    }

    private func outcome(of ticket: UInt64) async -> PostgresStoreError? {
        await withCheckedContinuation { continuation in
            let immediate: PostgresStoreError?? = state.withLock { state in
                if ticket <= state.resolvedTicket { return .some(state.failures[ticket]) }
                if state.phase == .stopped { return .some(PostgresStoreError(.closed, "the store stopped")) }
                state.waiters.append((ticket, continuation))
                return .none
            }
            if case .some(let result) = immediate { continuation.resume(returning: result) }
        }
    }

    // MARK: Sessions

    /// Loads the latest committed snapshot of `userID`'s session (`nil` for a user PostgreSQL has never seen)
    /// and remembers its version, so this instance's next write of the session is fenced against it.
    /// - Throws: ``PostgresStoreError/Code/unavailable`` when the server cannot be reached, `corruptRow` when
    ///   the stored snapshot does not parse.
    public func loadSession(userID: String) async throws(PostgresStoreError) -> SessionSnapshot? {
        let loaded: (Int64, String)?
        do {
            loaded = try await withShortConnection { connection in
                let rows = try await connection.rows(
                    "SELECT version, snapshot FROM ck_sessions WHERE user_id = \(userID)",
                    logger: configuration.logger
                )
                var found: (Int64, String)?
                for try await row in rows.decode((Int64, String).self) { found = row }
                return found
            }
        } catch let error as PostgresStoreError {
            throw error
        } catch {
            throw PostgresStoreError(
                .unavailable,
                "cannot load the session of '\(userID)': \(PostgresStoreError.describe(error))"
            )
        }
        state.withLock { $0.versions[userID] = loaded?.0 ?? 0 }
        guard let (version, text) = loaded else { return nil }
        do {
            return try SessionSnapshot(jsonText: text)
        } catch {
            throw PostgresStoreError(
                .corruptRow,
                "the session of '\(userID)' (version \(version)) does not parse: \(error)"
            )
        }
    }

    /// Forgets what this instance knew of `userID`'s version (the host evicted the session from memory);
    /// the next write of it must follow a ``loadSession(userID:)``.
    public func forgetSession(userID: String) {
        _ = state.withLock { $0.versions.removeValue(forKey: userID) }
    }

    // MARK: Figures read from PostgreSQL

    /// Committed records no delivery partition has acknowledged yet.
    public func undeliveredRows() async throws -> Int {
        try await withShortConnection { connection in
            let rows = try await connection.rows(
                """
                SELECT count(*) FROM ck_records r JOIN ck_cursors c ON c.part = r.part
                WHERE (r.xid, r.seq) > (c.xid, c.seq)
                """,
                logger: configuration.logger
            )
            var count = 0
            for try await value in rows.decode(Int64.self) { count = Int(value) }
            return count
        }
    }

    // MARK: Running

    /// Connects, creates the tables if needed, and commits groups until the task is cancelled; then commits
    /// what is pending (once), fails what is left with ``PostgresStoreError/Code/closed`` and returns.
    public func run() async throws {
        let start = state.withLock { state -> Bool in
            guard state.phase == .idle else { return false }
            state.phase = .running
            return true
        }
        guard start else { throw PostgresStoreError(.closed, "run() was called twice") }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.writerLoop() }
            group.addTask { await self.maintenanceLoop() }
            await withTaskCancellationHandler {
                await group.waitForAll()
            } onCancel: {
                self.state.withLock { state in
                    if state.phase == .running { state.phase = .stopping }
                    let wakeup = state.writerWakeup
                    state.writerWakeup = nil
                    wakeup?.resume()
                }
            }
        }
        let leftover = state.withLock { state -> [(UInt64, CheckedContinuation<PostgresStoreError?, Never>)] in
            state.phase = .stopped
            for entry in state.pending {
                state.failures[entry.ticket] = PostgresStoreError(.closed, "the store stopped before the commit")
            }
            state.resolvedTicket = state.lastTicket
            state.pending = []
            state.pendingRows = 0
            let waiters = state.waiters
            state.waiters = []
            return waiters.map { ($0.0, $0.1) }
        }
        for (ticket, waiter) in leftover {
            waiter.resume(returning: state.withLock { $0.failures[ticket] })
        }
    }

    /// Waits for pending entries; returns up to ``Configuration/maximumRowsPerCommit`` rows' worth, or `nil`
    /// once stopping with nothing pending.
    private func nextGroup() async -> [Entry]? {
        while true {
            let taken: [Entry]?? = state.withLock { state in
                if state.pending.isEmpty { return state.phase == .running ? .none : .some(nil) }
                var rows = 0
                var count = 0
                for entry in state.pending {
                    if count > 0 && rows + entry.payloads.count > configuration.maximumRowsPerCommit { break }
                    rows += entry.payloads.count
                    count += 1
                }
                let group = Array(state.pending.prefix(count))
                state.pending.removeFirst(count)
                state.pendingRows -= rows
                return .some(group)
            }
            if case .some(let group) = taken { return group }
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if !state.pending.isEmpty || state.phase != .running { return true }
                    state.writerWakeup = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    private func writerLoop() async {
        let logger = configuration.logger
        var connection: PostgresConnection?
        while let group = await nextGroup() {
            if connection == nil || connection?.isClosed == true {
                connection = nil
                let failFast = state.withLock { state in
                    state.failFastUntil.map { ContinuousClock.now < $0 } ?? false
                }
                if !failFast {
                    do {
                        let opened = try await configuration.endpoint.connect(
                            logger: logger,
                            applicationName: "containerkit-writer"
                        )
                        do {
                            try await ensureSchema(on: opened)
                        } catch {
                            try? await opened.close()
                            throw error
                        }
                        connection = opened
                    } catch {
                        logger.warning("postgres writer cannot connect: \(PostgresStoreError.describe(error))")
                    }
                }
            }
            guard let open = connection else {
                state.withLock { state in
                    state.failFastUntil = state.failFastUntil ?? (ContinuousClock.now + configuration.healthInterval)
                }
                setAvailable(false)
                resolve(
                    group,
                    failing: Set(group.map(\.ticket)),
                    error: PostgresStoreError(
                        .unavailable,
                        "postgresql at '\(configuration.endpoint)' cannot be reached"
                    )
                )
                continue
            }
            do {
                try await commit(group, on: open)
            } catch {
                logger.warning("postgres commit failed: \(PostgresStoreError.describe(error))")
                try? await open.close()
                connection = nil
                state.withLock { $0.failFastUntil = ContinuousClock.now + configuration.healthInterval }
                setAvailable(false)
                resolve(
                    group,
                    failing: Set(group.map(\.ticket)),
                    error: PostgresStoreError(
                        .commitFailed,
                        "the transaction failed, nothing of it acknowledged: \(PostgresStoreError.describe(error))"
                    )
                )
            }
            if configuration.commitDelay > .zero, state.withLock({ $0.phase == .running }) {
                try? await Task.sleep(for: configuration.commitDelay)
            }
        }
        try? await connection?.close()
    }

    /// Commits `group` in one transaction; when session writes are fenced, rolls back, fails the entries that
    /// touched those users, and commits the rest again.
    private func commit(_ group: [Entry], on connection: PostgresConnection) async throws {
        let logger = configuration.logger
        var remaining = group
        while !remaining.isEmpty {
            let started = ContinuousClock.now
            var partitions: [Int32] = []
            var payloads: [String] = []
            var sessions: [String: PendingSession] = [:]
            var order: [String] = []
            for entry in remaining {
                partitions.append(contentsOf: entry.partitions)
                payloads.append(contentsOf: entry.payloads)
                if let session = entry.session {
                    if var existing = sessions[session.userID] {
                        existing.version = session.version
                        existing.snapshot = session.snapshot
                        sessions[session.userID] = existing
                    } else {
                        sessions[session.userID] = session
                        order.append(session.userID)
                    }
                }
            }
            try await connection.execute("BEGIN", logger: logger)
            if !payloads.isEmpty {
                try await connection.execute(
                    """
                    INSERT INTO ck_records (generation, part, payload)
                    SELECT (SELECT generation FROM ck_meta WHERE id = 1), t.p, t.j
                    FROM unnest(\(partitions)::int[], \(payloads)::text[]) WITH ORDINALITY AS t(p, j, o) ORDER BY t.o
                    """,
                    logger: logger
                )
            }
            var fenced: Set<String> = []
            if !order.isEmpty {
                let users = order
                let expected = order.map { sessions[$0]!.expected }
                let versions = order.map { sessions[$0]!.version }
                let snapshots = order.map { sessions[$0]!.snapshot.jsonText }
                let rows = try await connection.rows(
                    """
                    WITH input AS (
                        SELECT * FROM unnest(\(users)::text[], \(expected)::bigint[], \(versions)::bigint[], \(snapshots)::text[])
                            AS t(user_id, expected, version, snapshot)),
                    updated AS (
                        UPDATE ck_sessions s SET version = i.version, snapshot = i.snapshot, updated_at = now()
                        FROM input i WHERE s.user_id = i.user_id AND i.expected > 0 AND s.version = i.expected
                        RETURNING s.user_id),
                    inserted AS (
                        INSERT INTO ck_sessions (user_id, version, snapshot)
                        SELECT user_id, version, snapshot FROM input WHERE expected = 0
                        ON CONFLICT (user_id) DO NOTHING RETURNING user_id)
                    SELECT user_id FROM updated UNION ALL SELECT user_id FROM inserted
                    """,
                    logger: logger
                )
                var written: Set<String> = []
                for try await user in rows.decode(String.self) { written.insert(user) }
                fenced = Set(order).subtracting(written)
            }
            if !fenced.isEmpty {
                try await connection.execute("ROLLBACK", logger: logger)
                let refused = remaining.filter { entry in entry.session.map { fenced.contains($0.userID) } ?? false }
                state.withLock { $0.statistics.fencedSessions += fenced.count }
                resolve(
                    refused,
                    failing: Set(refused.map(\.ticket)),
                    error: PostgresStoreError(
                        .fenced,
                        "another instance holds a newer session of '\(fenced.sorted().joined(separator: "', '"))'"
                    )
                )
                remaining.removeAll { entry in entry.session.map { fenced.contains($0.userID) } ?? false }
                continue
            }
            try await connection.execute("COMMIT", logger: logger)
            let seconds = (ContinuousClock.now - started).seconds
            setAvailable(true)
            let observers = state.withLock { state in
                state.failFastUntil = nil
                state.statistics.commits += 1
                state.statistics.committedRows += payloads.count
                state.statistics.committedSessions += order.count
                state.statistics.commitSeconds += seconds
                state.statistics.maximumCommitSeconds = max(state.statistics.maximumCommitSeconds, seconds)
                return state.commitObservers
            }
            resolve(remaining, failing: [], error: nil)
            for observer in observers { observer() }
            return
        }
    }

    /// Resolves the tickets of `entries` (in ticket order); those in `failing` fail with `error`, and the
    /// sessions they touched are invalidated.
    private func resolve(_ entries: [Entry], failing: Set<UInt64>, error: PostgresStoreError?) {
        guard let last = entries.last?.ticket else { return }
        var invalidated: [String] = []
        let ready = state.withLock {
            state -> [(CheckedContinuation<PostgresStoreError?, Never>, PostgresStoreError?)] in
            for entry in entries where failing.contains(entry.ticket) {
                if let error { state.failures[entry.ticket] = error }
                if let user = entry.session?.userID {
                    state.versions.removeValue(forKey: user)
                    invalidated.append(user)
                }
            }
            if !failing.isEmpty { state.statistics.failedCommits += 1 }
            // Entries of a group are resolved in ticket order; a fenced part is resolved before the rest of its
            // group, so the resolved mark only moves forward.
            state.resolvedTicket = max(state.resolvedTicket, last)
            if state.failures.count > 100_000 {
                let floor = state.resolvedTicket &- 50_000
                state.failures = state.failures.filter { $0.key > floor }
            }
            var ready: [(CheckedContinuation<PostgresStoreError?, Never>, PostgresStoreError?)] = []
            state.waiters.removeAll { waiter in
                guard waiter.0 <= state.resolvedTicket else { return false }
                ready.append((waiter.1, state.failures[waiter.0]))
                return true
            }
            return ready
        }
        for (waiter, outcome) in ready { waiter.resume(returning: outcome) }
        if !invalidated.isEmpty { configuration.onSessionsInvalidated?(invalidated) }
    }

    // MARK: Maintenance

    private func setAvailable(_ available: Bool) {
        let (changed, waiters) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
            let changed = state.available != available
            state.available = available
            guard available else { return (changed, []) }
            state.failFastUntil = nil
            defer { state.availabilityWaiters = [] }
            return (changed, state.availabilityWaiters)
        }
        for waiter in waiters { waiter.resume() }
        if changed { configuration.onAvailabilityChanged?(available) }
    }

    /// Returns once ``isAvailable`` is `true` (at once if it is; needs ``run()``).
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

    private func maintenanceLoop() async {
        let logger = configuration.logger
        var lastRotation = ContinuousClock.now
        while state.withLock({ $0.phase == .running }) {
            do {
                logger.debug("health check")
                try await withShortConnection { connection in
                    _ = try await connection.execute("SELECT 1", logger: logger)
                }
                logger.debug("health check passed")
                setAvailable(true)
                if ContinuousClock.now - lastRotation >= configuration.rotationInterval {
                    lastRotation = ContinuousClock.now
                    try await rotate()
                }
            } catch {
                setAvailable(false)
                logger.debug("postgres health check failed: \(PostgresStoreError.describe(error))")
            }
            try? await Task.sleep(for: configuration.healthInterval)
        }
        await pool.close()
    }

    /// Runs `body` on one of the store's side connections (health checks, loads, figures), once the tables
    /// exist.
    private func withShortConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await pool.withConnection { connection in
            try await ensureSchema(on: connection)
            return try await body(connection)
        }
    }

    /// Creates the tables the first time this store reaches the server, and reads the partition count.
    private func ensureSchema(on connection: PostgresConnection) async throws {
        guard !state.withLock({ $0.schemaReady }) else { return }
        let count = try await PostgresSchema.ensure(
            on: connection,
            partitions: configuration.partitions,
            lockNamespace: configuration.lockNamespace,
            logger: configuration.logger
        )
        state.withLock { state in
            state.partitions = count
            state.schemaReady = true
        }
    }

    /// Starts a new generation when the current one holds rows, and drops older generations whose rows are
    /// all acknowledged. One instance at a time (an advisory transaction lock); a lock wait longer than a
    /// second gives up until the next interval.
    public func rotate() async throws {
        let logger = configuration.logger
        let namespace = configuration.lockNamespace
        let connection = try await configuration.endpoint.connect(
            logger: logger,
            applicationName: "containerkit-rotation"
        )
        defer { Task { try? await connection.close() } }
        let (rotated, dropped): (Bool, Int) = try await { () async throws -> (Bool, Int) in
            try await connection.execute("BEGIN", logger: logger)
            do {
                try await connection.execute("SET LOCAL lock_timeout = '1s'", logger: logger)
                var locked = false
                for try await value in try await connection.rows(
                    "SELECT pg_try_advisory_xact_lock(\(namespace), \(PostgresSchema.maintenanceLockKey))",
                    logger: logger
                ).decode(Bool.self) { locked = value }
                guard locked else {
                    try await connection.execute("COMMIT", logger: logger)
                    return (false, 0)
                }
                var current: Int64 = 1
                for try await value in try await connection.rows(
                    "SELECT generation FROM ck_meta WHERE id = 1 FOR UPDATE",
                    logger: logger
                ).decode(Int64.self) { current = value }
                var generations: [Int64] = []
                for try await name in try await connection.rows(
                    "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = 'ck_records'::regclass",
                    logger: logger
                ).decode(String.self) {
                    if let generation = Int64(name.dropFirst("ck_records_".count)) { generations.append(generation) }
                }
                var dropped = 0
                let old = generations.filter { $0 < current }.sorted()
                if !old.isEmpty {
                    try await connection.execute("LOCK TABLE ck_records IN ACCESS EXCLUSIVE MODE", logger: logger)
                    for generation in old {
                        let table = PostgresSchema.generationTable(generation)
                        var unacknowledged = true
                        for try await value in try await connection.rows(
                            PostgresQuery(
                                unsafeSQL: """
                                    SELECT EXISTS (SELECT 1 FROM \(table) r JOIN ck_cursors c ON c.part = r.part
                                    WHERE (r.xid, r.seq) > (c.xid, c.seq))
                                    """
                            ),
                            logger: logger
                        ).decode(Bool.self) { unacknowledged = value }
                        if !unacknowledged {
                            try await connection.execute(
                                PostgresQuery(unsafeSQL: "DROP TABLE \(table)"),
                                logger: logger
                            )
                            dropped += 1
                        }
                    }
                }
                var hasRows = false
                for try await value in try await connection.rows(
                    PostgresQuery(
                        unsafeSQL: "SELECT EXISTS (SELECT 1 FROM \(PostgresSchema.generationTable(current)))"
                    ),
                    logger: logger
                ).decode(Bool.self) { hasRows = value }
                if hasRows {
                    let next = current + 1
                    try await connection.execute(
                        PostgresQuery(
                            unsafeSQL:
                                "CREATE TABLE IF NOT EXISTS \(PostgresSchema.generationTable(next)) PARTITION OF ck_records FOR VALUES IN (\(next))"
                        ),
                        logger: logger
                    )
                    try await connection.execute(
                        "UPDATE ck_meta SET generation = \(next), rotated_at = now() WHERE id = 1",
                        logger: logger
                    )
                }
                try await connection.execute("COMMIT", logger: logger)
                return (hasRows, dropped)
            } catch {
                try? await connection.execute("ROLLBACK", logger: logger)
                throw error
            }
        }()
        state.withLock { state in
            if rotated { state.statistics.rotations += 1 }
            state.statistics.droppedGenerations += dropped
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `Double`.
    var seconds: Double {
        let (whole, fraction) = components
        return Double(whole) + Double(fraction) / 1e18
    }
}

extension PostgresStoreError {
    /// The server's message and SQLSTATE when `error` is PostgreSQL's, else the error's own description.
    static func describe(_ error: any Error) -> String {
        if let error = error as? PostgresStoreError { return error.description }
        if let error = error as? PSQLError {
            if let message = error.serverInfo?[.message] {
                return "'\(message)' (sqlstate \(error.serverInfo?[.sqlState] ?? "?"))"
            }
            return "\(error.code)"
        }
        if let error = error as? PostgresTransactionError {
            return describe(error.commitError ?? error.closureError ?? error.beginError ?? error.rollbackError ?? error)
        }
        return String(describing: error)
    }
}
