import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO
import Synchronization

extension PostgresRecordStore {
    /// Waits for pending entries; returns up to ``Configuration/maximumRowsPerCommit`` rows' worth, or `nil`
    /// once stopped (what is pending then fails with `.closed`).
    private func nextGroup() async -> [Entry]? {
        while true {
            let taken: [Entry]?? = state.withLock { state in
                if state.phase == .stopped { return .some(nil) }
                if state.pending.isEmpty { return .none }
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
                    if !state.pending.isEmpty || state.phase == .stopped { return true }
                    state.writerWakeup = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }

    func writerLoop() async {
        while let group = await nextGroup() {
            if let failure = failingFast {
                let error = AnalyticsSinkError(
                    failure.sinkCode,
                    "\(failure.description); nothing of the commit was stored (commits fail at once until "
                        + "postgresql answers again)"
                )
                resolve(group, outcomes: group.map { _ in error })
                continue
            }
            do throws(PostgresStoreError) {
                try await commit(group)
            } catch {
                let stopped = state.withLock { $0.phase != .running }
                let failure =
                    stopped
                    ? AnalyticsSinkError(.closed, "the store stopped during the commit")
                    : AnalyticsSinkError(error.sinkCode, "\(error.description); nothing of the commit was acknowledged")
                resolve(group, outcomes: group.map { _ in failure })
            }
            await gather()
        }
    }

    /// After a commit during which appends arrived (others are coming), waits up to
    /// ``Configuration/commitDelay`` for more — until ``Configuration/gatherTarget`` appends wait, or a tick
    /// passes with none new. Returns at once when nothing arrived: a lone request waits for nothing.
    ///
    /// The tick is a quarter of the delay (``Configuration/gatherTick``, at most 10 ms): with the default 20 ms,
    /// 5 ms without an append ends the wait, so the short gaps between the bursts in which a busy machine
    /// schedules requests do not (with a 1 ms tick, even a 10 ms delay gathered about 30 a commit under the load
    /// where this gathers about 40: Docs/Scaling.md).
    private func gather() async {
        let delay = configuration.commitDelay
        guard delay > .zero else { return }
        var waiting = state.withLock { $0.phase == .running ? $0.pending.count : 0 }
        guard waiting > 0 else { return }
        let tick = configuration.gatherTick
        let deadline = ContinuousClock.now + delay
        while waiting < configuration.gatherTarget {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return }
            try? await Task.sleep(for: min(tick, left))
            let now = state.withLock { $0.phase == .running ? $0.pending.count : -1 }
            // Stopped, or a tick without a new arrival: commit what is there.
            guard now > waiting else { return }
            waiting = now
        }
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
        /// The change the first checkpoint continues (``SessionCheckpoint/parent``; `nil`: fenced by version
        /// alone).
        var parent: UInt64?
        /// The identity of the chain's newest checkpoint.
        var lastID: UInt64
        /// What is inserted: the chain from its last snapshot on (a snapshot supersedes the rows before it).
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
            parent = first.parent
            lastID = first.id
            checkpoints = [first]
        }

        /// Adds `next` if it continues the chain — a delta of the next version from the chain's newest, or a
        /// snapshot above it that expects no more than it — and says whether it did.
        mutating func append(_ next: SessionCheckpoint) -> Bool {
            // A checkpoint that names the change it continues must continue the chain's newest.
            if let parent = next.parent, parent != lastID { return false }
            if next.isDelta {
                guard next.expected == version, next.version == version + 1 else { return false }
                checkpoints.append(next)
            } else {
                guard next.expected >= version, next.version > next.expected else { return false }
                checkpoints = [next]
            }
            version = next.version
            lastID = next.id
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

    /// Commits `group` in one call of `ck_commit_group` (one transaction); when session writes are fenced
    /// (nothing was written), commits the entries that did not carry those users in another. Reports every
    /// entry's outcome, in ticket order.
    /// - Throws: the call's failure (then nothing is reported: the caller fails the whole group).
    private func commit(_ group: [Entry]) async throws(PostgresStoreError) {
        let logger = configuration.logger
        let namespace = configuration.lockNamespace
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
            var statement = PostgresStatements.CommitGroup(
                lockKeys: [],
                partitions: [],
                payloads: [],
                chainUsers: [],
                chainExpected: [],
                chainDeltas: [],
                rowUsers: [],
                rowVersions: [],
                rowSnapshots: [],
                rowBodies: [],
                removalUsers: [],
                removalVersions: []
            )
            var keys: Set<Int64> = []
            for index in remaining {
                statement.partitions.append(contentsOf: group[index].partitions)
                statement.payloads.append(contentsOf: group[index].payloads)
                for removal in group[index].removals {
                    statement.removalUsers.append(removal.userID)
                    statement.removalVersions.append(removal.version)
                    keys.insert(Self.sessionLockKey(removal.userID, namespace: namespace))
                }
            }
            for user in order {
                let chain = chains[user]!
                keys.insert(Self.sessionLockKey(user.userID, namespace: namespace))
                statement.chainUsers.append(user.userID)
                statement.chainExpected.append(chain.expected)
                statement.chainDeltas.append(chain.startsWithDelta)
                statement.chainParents.append(Int64(bitPattern: chain.parent ?? 0))
                statement.chainChecks.append(chain.parent != nil)
                for checkpoint in chain.checkpoints {
                    statement.rowUsers.append(checkpoint.userID)
                    statement.rowVersions.append(checkpoint.version)
                    statement.rowSnapshots.append(!checkpoint.isDelta)
                    statement.rowBodies.append(checkpoint.jsonText)
                    statement.rowIDs.append(Int64(bitPattern: checkpoint.id))
                }
            }
            // The group's users, locked in one order (no deadlock between two writers).
            statement.lockKeys = keys.sorted()
            state.withLock { $0.statistics.roundTrips += 2 }
            let sent = statement
            let answer = try await call("the commit") { connection in
                let fenced = try await connection.all(sent, logger: logger)
                // The call runs in an implicit transaction that PostgreSQL commits when it reaches the call's Sync
                // (answered by ReadyForQuery), after the CommandComplete that ends the rows postgres-nio hands
                // back. The answer to the next statement on this connection comes after that commit: only then is
                // the group durable (a crash in between took back pushes already answered 200).
                _ = try await connection.all(PostgresStatements.AfterCommit(), logger: logger)
                return fenced
            }
            let fenced = Set((answer.first ?? []).map(UserIDKey.init))
            if !fenced.isEmpty {
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
            let seconds = (ContinuousClock.now - started).seconds
            setAvailable(true)
            state.withLock { state in
                state.statistics.commits += 1
                state.statistics.committedRows += sent.payloads.count
                state.statistics.committedSessions += sent.rowUsers.count + sent.removalUsers.count
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
