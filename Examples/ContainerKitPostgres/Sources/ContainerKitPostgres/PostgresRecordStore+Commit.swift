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

    /// One user's session writes of a group, folded: the first write's expected version, the last snapshot.
    private struct SessionWrite {
        var expected: Int64
        var version: Int64
        var snapshot: String
    }

    /// Commits `group` in one transaction; when session writes are fenced, rolls back, and commits the entries
    /// that did not carry those users again. Reports every entry's outcome, in ticket order.
    private func commit(_ group: [Entry], on connection: PostgresConnection) async throws {
        let logger = configuration.logger
        var outcomes = [AnalyticsSinkError?](repeating: nil, count: group.count)
        var remaining = Array(group.indices)
        while !remaining.isEmpty {
            let started = ContinuousClock.now
            var partitions: [Int32] = []
            var payloads: [String] = []
            // Keyed by the user id's bytes: two canonically equivalent ids are two users, two rows.
            var sessions: [UserIDKey: SessionWrite] = [:]
            var order: [UserIDKey] = []
            var removals: [(userID: String, version: Int64)] = []
            for index in remaining {
                let entry = group[index]
                partitions.append(contentsOf: entry.partitions)
                payloads.append(contentsOf: entry.payloads)
                removals += entry.removals
                for stored in entry.sessions {
                    let user = UserIDKey(stored.userID)
                    if var existing = sessions[user] {
                        existing.version = stored.version
                        existing.snapshot = stored.snapshot.jsonText
                        sessions[user] = existing
                    } else {
                        sessions[user] = SessionWrite(
                            expected: stored.version - 1,
                            version: stored.version,
                            snapshot: stored.snapshot.jsonText
                        )
                        order.append(user)
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
            var fenced: Set<UserIDKey> = []
            if !order.isEmpty {
                let users = order.map(\.userID)
                let expected = order.map { sessions[$0]!.expected }
                let versions = order.map { sessions[$0]!.version }
                let snapshots = order.map { sessions[$0]!.snapshot }
                // A row is replaced only from a version no higher than the one this group's first write
                // continued (a folded group carries it as `expected`): two owners of one version cannot both
                // write, and a version skipped by a failed write is no obstacle (SessionPersistence's
                // contract). A user without a row is inserted (a concurrent insert of the same user by another
                // instance wins, and this one is fenced).
                let rows = try await connection.rows(
                    """
                    WITH input AS (
                        SELECT * FROM unnest(\(users)::text[], \(expected)::bigint[], \(versions)::bigint[], \(snapshots)::text[])
                            AS t(user_id, expected, version, snapshot)),
                    updated AS (
                        UPDATE ck_sessions s SET version = i.version, snapshot = i.snapshot
                        FROM input i WHERE s.user_id = i.user_id AND s.version <= i.expected
                        RETURNING s.user_id),
                    inserted AS (
                        INSERT INTO ck_sessions (user_id, version, snapshot)
                        SELECT i.user_id, i.version, i.snapshot FROM input i
                        WHERE NOT EXISTS (SELECT 1 FROM ck_sessions s WHERE s.user_id = i.user_id)
                        ON CONFLICT (user_id) DO NOTHING RETURNING user_id)
                    SELECT user_id FROM updated UNION ALL SELECT user_id FROM inserted
                    """,
                    logger: logger
                )
                var written: Set<UserIDKey> = []
                for try await user in rows.decode(String.self) { written.insert(UserIDKey(user)) }
                fenced = Set(order).subtracting(written)
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
                // An ended session is removed only if no newer version was stored meanwhile.
                let users = removals.map { $0.userID }
                let versions = removals.map { $0.version }
                try await connection.execute(
                    """
                    DELETE FROM ck_sessions s USING unnest(\(users)::text[], \(versions)::bigint[]) AS r(user_id, version)
                    WHERE s.user_id = r.user_id AND s.version <= r.version
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
                state.statistics.committedSessions += order.count + removals.count
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
