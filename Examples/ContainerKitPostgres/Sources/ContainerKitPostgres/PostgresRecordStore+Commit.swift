import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO
import Synchronization

extension PostgresRecordStore {
    /// Waits for pending entries; returns up to ``Configuration/maximumRowsPerCommit`` rows' worth, or `nil`
    /// once stopped with nothing pending.
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

    func writerLoop() async {
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
                        logger.warning(
                            "postgres writer cannot connect",
                            metadata: ["error": "\(PostgresStoreError.describe(error))"]
                        )
                    }
                }
            }
            guard let open = connection else {
                state.withLock { state in
                    state.failFastUntil = state.failFastUntil ?? (ContinuousClock.now + configuration.healthInterval)
                }
                setAvailable(false)
                let error = AnalyticsSinkError(
                    .unavailable,
                    "postgresql at '\(configuration.endpoint)' cannot be reached"
                )
                resolve(group, outcomes: group.map { _ in error })
                continue
            }
            do {
                try await commit(group, on: open)
            } catch {
                logger.warning("postgres commit failed", metadata: ["error": "\(PostgresStoreError.describe(error))"])
                try? await open.close()
                connection = nil
                state.withLock { $0.failFastUntil = ContinuousClock.now + configuration.healthInterval }
                setAvailable(false)
                let failure = AnalyticsSinkError(
                    .unavailable,
                    "the transaction failed, nothing of it acknowledged: \(PostgresStoreError.describe(error))"
                )
                resolve(group, outcomes: group.map { _ in failure })
            }
            if configuration.commitDelay > .zero, state.withLock({ $0.phase == .running }) {
                try? await Task.sleep(for: configuration.commitDelay)
            }
        }
        try? await connection?.close()
    }

    /// One user's session checkpoints in a group, in ticket order: how the first is fenced, and the rows to
    /// insert.
    struct SessionChain {
        /// The version the first checkpoint continues.
        var expected: Int64
        /// Whether the first checkpoint is a delta: then the stored head must be exactly ``expected``; for a
        /// snapshot it must be no higher.
        var startsWithDelta: Bool
        /// The newest version of the chain.
        var version: Int64
        /// What is inserted: the chain from its last snapshot on (a snapshot deletes the rows before it).
        var checkpoints: [SessionCheckpoint]

        /// A chain starting with `first`; `nil` when `first` is malformed (a delta that is not of the version
        /// after the one it continues, or a snapshot not above it).
        init?(first: SessionCheckpoint) {
            guard first.isDelta ? first.version == first.expected + 1 : first.version > first.expected else {
                return nil
            }
            expected = first.expected
            startsWithDelta = first.isDelta
            version = first.version
            checkpoints = [first]
        }

        /// Adds `next` if it continues the chain — a delta of the next version from the chain's newest, or a
        /// snapshot above it that expects no more than it — and says whether it did.
        mutating func append(_ next: SessionCheckpoint) -> Bool {
            if next.isDelta {
                guard next.expected == version, next.version == version + 1 else { return false }
                checkpoints.append(next)
            } else {
                guard next.expected >= version, next.version > next.expected else { return false }
                checkpoints = [next]
            }
            version = next.version
            return true
        }
    }

    /// The session checkpoints of the entries `indices` of `group`, folded per user (by the id's bytes: two
    /// canonically equivalent ids are two users) in ticket order, with the users in the order first seen.
    /// An entry with a checkpoint that does not continue its user's chain is refused, and so is every later
    /// entry carrying one of its users (their checkpoints build on a refused one).
    static func sessionChains(
        of group: [Entry],
        _ indices: [Int]
    ) -> (chains: [UserIDKey: SessionChain], order: [UserIDKey], refused: [Int]) {
        var chains: [UserIDKey: SessionChain] = [:]
        var order: [UserIDKey] = []
        var broken: Set<UserIDKey> = []
        var refused: [Int] = []
        for index in indices {
            let sessions = group[index].sessions
            if sessions.isEmpty { continue }
            var tentative: [(UserIDKey, SessionChain)] = []
            var fits = true
            for checkpoint in sessions {
                let user = UserIDKey(checkpoint.userID)
                if broken.contains(user) {
                    fits = false
                    break
                }
                if let at = tentative.lastIndex(where: { $0.0 == user }) {
                    fits = tentative[at].1.append(checkpoint)
                } else if var chain = chains[user] {
                    fits = chain.append(checkpoint)
                    tentative.append((user, chain))
                } else if let chain = SessionChain(first: checkpoint) {
                    tentative.append((user, chain))
                } else {
                    fits = false
                }
                if !fits { break }
            }
            guard fits else {
                refused.append(index)
                for checkpoint in sessions { broken.insert(UserIDKey(checkpoint.userID)) }
                continue
            }
            for (user, chain) in tentative {
                if chains.updateValue(chain, forKey: user) == nil { order.append(user) }
            }
        }
        return (chains, order, refused)
    }

    /// The key of the transaction-level advisory lock a group commit holds on `userID`'s session: the lock
    /// namespace in the high half (a one-`bigint` key, apart from the two-key locks of leases and maintenance),
    /// a hash of the id's bytes (FNV-1a) in the low half. Two users that share a key only wait for each other.
    static func sessionLockKey(_ userID: String, namespace: Int32) -> Int64 {
        var hash: UInt32 = 2_166_136_261
        for byte in userID.utf8 { hash = (hash ^ UInt32(byte)) &* 16_777_619 }
        return Int64(namespace) << 32 | Int64(hash)
    }

    /// Commits `group` in one transaction; when session writes are fenced, rolls back, and commits the entries
    /// that did not carry those users again. Reports every entry's outcome, in ticket order.
    private func commit(_ group: [Entry], on connection: PostgresConnection) async throws {
        let logger = configuration.logger
        var outcomes = [AnalyticsSinkError?](repeating: nil, count: group.count)
        var remaining = Array(group.indices)
        while !remaining.isEmpty {
            let started = ContinuousClock.now
            let (chains, order, refused) = Self.sessionChains(of: group, remaining)
            if !refused.isEmpty {
                // Checked before anything is sent: a checkpoint that does not continue its user's checkpoints
                // of the same group (a copy of the session that was dropped meanwhile) is stale.
                var users: Set<UserIDKey> = []
                for index in refused {
                    let names = group[index].sessions.map(\.userID)
                    users.formUnion(names.map(UserIDKey.init))
                    outcomes[index] = AnalyticsSinkError(
                        .superseded,
                        "the session of '\(names.joined(separator: "', '"))' does not continue its version before"
                    )
                }
                state.withLock { $0.statistics.fencedSessions += users.count }
                let refusedSet = Set(refused)
                remaining.removeAll { refusedSet.contains($0) }
                continue
            }
            var partitions: [Int32] = []
            var payloads: [String] = []
            var removals: [(userID: String, version: Int64)] = []
            for index in remaining {
                partitions.append(contentsOf: group[index].partitions)
                payloads.append(contentsOf: group[index].payloads)
                removals += group[index].removals
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
            if !order.isEmpty || !removals.isEmpty {
                // The group's users, locked in one order (no deadlock between two writers) until the transaction
                // ends: the statements after this one read every other transaction's commit of these users.
                var keys = Set(order.map { Self.sessionLockKey($0.userID, namespace: configuration.lockNamespace) })
                for removal in removals {
                    keys.insert(Self.sessionLockKey(removal.userID, namespace: configuration.lockNamespace))
                }
                try await connection.execute(
                    "SELECT count(pg_advisory_xact_lock(k)) FROM unnest(\(keys.sorted())::bigint[]) AS t(k)",
                    logger: logger
                )
            }
            var fenced: Set<UserIDKey> = []
            var sessionRows = 0
            if !order.isEmpty {
                let users = order.map(\.userID)
                let expected = order.map { chains[$0]!.expected }
                let startsWithDelta = order.map { chains[$0]!.startsWithDelta }
                var rowUsers: [String] = []
                var rowVersions: [Int64] = []
                var rowSnapshots: [Bool] = []
                var rowBodies: [String] = []
                for user in order {
                    for checkpoint in chains[user]!.checkpoints {
                        rowUsers.append(checkpoint.userID)
                        rowVersions.append(checkpoint.version)
                        rowSnapshots.append(!checkpoint.isDelta)
                        rowBodies.append(checkpoint.jsonText)
                    }
                }
                // A user's head is their newest version in either table. A chain starting with a delta goes on
                // only from exactly that version, one starting with a snapshot from no higher; a version another
                // writer inserted meanwhile is a conflict, not a second state. A snapshot deletes the user's
                // older rows (its own chain starts at it), the legacy row included.
                let rows = try await connection.rows(
                    """
                    WITH chains AS (
                        SELECT * FROM unnest(\(users)::text[], \(expected)::bigint[], \(startsWithDelta)::bool[])
                            AS t(user_id, expected, delta)),
                    accepted AS (
                        SELECT c.user_id FROM chains c, LATERAL (SELECT greatest(
                            (SELECT max(x.version) FROM ck_session_changes x WHERE x.user_id = c.user_id),
                            (SELECT s.version FROM ck_sessions s WHERE s.user_id = c.user_id), 0) AS head) h
                        WHERE CASE WHEN c.delta THEN h.head = c.expected ELSE h.head <= c.expected END),
                    inserted AS (
                        INSERT INTO ck_session_changes (user_id, version, snapshot, body)
                        SELECT r.user_id, r.version, r.snapshot, r.body
                        FROM unnest(\(rowUsers)::text[], \(rowVersions)::bigint[], \(rowSnapshots)::bool[],
                            \(rowBodies)::text[])
                            AS r(user_id, version, snapshot, body)
                        JOIN accepted a ON a.user_id = r.user_id
                        ON CONFLICT (user_id, version) DO NOTHING
                        RETURNING user_id, version, snapshot),
                    older AS (
                        DELETE FROM ck_session_changes x USING inserted n
                        WHERE n.snapshot AND x.user_id = n.user_id AND x.version < n.version),
                    legacy AS (
                        DELETE FROM ck_sessions s USING inserted n
                        WHERE n.snapshot AND s.user_id = n.user_id AND s.version < n.version)
                    SELECT user_id, count(*) FROM inserted GROUP BY user_id
                    """,
                    logger: logger
                )
                var written: [UserIDKey: Int] = [:]
                for try await (user, count) in rows.decode((String, Int64).self) {
                    written[UserIDKey(user)] = Int(count)
                }
                for user in order where written[user] != chains[user]!.checkpoints.count { fenced.insert(user) }
                sessionRows = rowUsers.count
            }
            if !fenced.isEmpty {
                try await connection.execute("ROLLBACK", logger: logger)
                let names = fenced.sorted().map(\.userID).joined(separator: "', '")
                let error = AnalyticsSinkError(.superseded, "another instance holds a newer session of '\(names)'")
                state.withLock { $0.statistics.fencedSessions += fenced.count }
                remaining.removeAll { index in
                    guard group[index].sessions.contains(where: { fenced.contains(UserIDKey($0.userID)) }) else {
                        return false
                    }
                    outcomes[index] = error
                    return true
                }
                continue
            }
            if !removals.isEmpty {
                // An ended session is removed only if no newer version was stored meanwhile — then all of it: a
                // part would leave deltas without the snapshot they apply to.
                let users = removals.map { $0.userID }
                let versions = removals.map { $0.version }
                try await connection.execute(
                    """
                    WITH ended AS (
                        SELECT DISTINCT r.user_id
                        FROM unnest(\(users)::text[], \(versions)::bigint[]) AS r(user_id, version)
                        WHERE greatest(
                            (SELECT max(x.version) FROM ck_session_changes x WHERE x.user_id = r.user_id),
                            (SELECT s.version FROM ck_sessions s WHERE s.user_id = r.user_id), 0) <= r.version),
                    changes AS (DELETE FROM ck_session_changes x USING ended e WHERE x.user_id = e.user_id)
                    DELETE FROM ck_sessions s USING ended e WHERE s.user_id = e.user_id
                    """,
                    logger: logger
                )
            }
            try await connection.execute("COMMIT", logger: logger)
            let seconds = (ContinuousClock.now - started).seconds
            setAvailable(true)
            state.withLock { state in
                state.failFastUntil = nil
                state.statistics.commits += 1
                state.statistics.committedRows += payloads.count
                state.statistics.committedSessions += sessionRows + removals.count
                state.statistics.commitSeconds += seconds
                state.statistics.maximumCommitSeconds = max(state.statistics.maximumCommitSeconds, seconds)
            }
            break
        }
        resolve(group, outcomes: outcomes)
    }

    /// Reports the outcome of every entry of `group` (in ticket order) to the pipeline — runs of successes as
    /// one commit, runs of failures as one failure — and answers the store's own waiters.
    func resolve(_ group: [Entry], outcomes: [AnalyticsSinkError?]) {
        guard let last = group.last?.ticket else { return }
        let (commits, ready) = state.withLock {
            state -> (RecordStoreCommits?, [(CheckedContinuation<AnalyticsSinkError?, Never>, AnalyticsSinkError?)]) in
            for (entry, outcome) in zip(group, outcomes) {
                if let outcome { state.failures[entry.ticket] = outcome }
            }
            if outcomes.contains(where: { $0 != nil }) { state.statistics.failedCommits += 1 }
            state.resolvedTicket = max(state.resolvedTicket, last)
            if state.failures.count > 100_000 {
                let floor = state.resolvedTicket &- 50_000
                state.failures = state.failures.filter { $0.key > floor }
            }
            var ready: [(CheckedContinuation<AnalyticsSinkError?, Never>, AnalyticsSinkError?)] = []
            state.waiters.removeAll { waiter in
                guard waiter.0 <= state.resolvedTicket else { return false }
                ready.append((waiter.1, state.failures[waiter.0]))
                return true
            }
            return (state.commits, ready)
        }
        if let commits {
            var index = 0
            while index < group.count {
                var end = index
                while end + 1 < group.count && outcomes[end + 1] == outcomes[index] { end += 1 }
                let tickets = group[index].ticket...group[end].ticket
                if let error = outcomes[index] {
                    commits.failed(
                        tickets,
                        records: group[index...end].reduce(0) { $0 + $1.payloads.count },
                        error: DurabilityError(error)
                    )
                } else {
                    commits.committed(
                        through: tickets.upperBound,
                        records: group[index...end].reduce(0) { $0 + $1.payloads.count }
                    )
                }
                index = end + 1
            }
        }
        for (waiter, outcome) in ready { waiter.resume(returning: outcome) }
    }
}
