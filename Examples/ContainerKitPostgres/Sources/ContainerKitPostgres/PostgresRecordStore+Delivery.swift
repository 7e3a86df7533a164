import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO
import Synchronization

extension PostgresRecordStore {
    // MARK: Reading and acknowledging (called by the pipeline's delivery loop)

    /// Up to `limit` committed rows of the leased partitions, after what was read of each (`nil`: after what
    /// each has acknowledged); an empty batch when none is leased or nothing is committed after the cursors.
    /// Before this instance's first lease check it waits for that check (within the call deadline): it holds no
    /// partition then because it has not looked yet, and a flush must not end on that.
    /// - Throws: `.unavailable` when the lease connection is down (the pipeline retries after a backoff).
    public func read(after position: Position?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<Position> {
        if !leasesChecked.load(ordering: .acquiring) { await waitForFirstLeaseCheck() }
        let plan = state.withLock { state -> (PostgresConnection?, [(Int, Cursor)], UInt64) in
            if position == nil {
                // The pipeline starts over: everything not acknowledged is read again.
                state.batches = [:]
                for key in state.leases.keys {
                    state.leases[key]!.read = state.leases[key]!.acknowledged
                    state.leases[key]!.inFlight = 0
                }
            }
            // A partition with a batch in flight waits for its acknowledgement: a user's records go out in order.
            let readable = state.leases.filter { !$0.value.releasing && $0.value.inFlight <= 0 }.keys.sorted()
            state.waitingForAcknowledgement = readable.count < state.leases.count
            guard let connection = state.leaseConnection, !readable.isEmpty else {
                state.idle = true
                return (state.leaseConnection, [], state.epoch)
            }
            // Partitions take turns at coming first, so a busy one cannot starve the others.
            state.readOffset = (state.readOffset + 1) % readable.count
            let turned = Array(readable[state.readOffset...] + readable[..<state.readOffset])
            // Reserved before the SELECT is sent: a partition being read counts as in flight, so a rebalance
            // cannot give it back (and its next holder read the same rows) while this read runs.
            for partition in turned { state.leases[partition]!.inFlight += 1 }
            return (connection, turned.map { ($0, state.leases[$0]!.read) }, state.epoch)
        }
        let (connection, cursors, epoch) = plan
        // Nothing leased (or the lease connection is down, and its leases with it): the lease loop says when
        // there is something to read.
        guard let connection, !cursors.isEmpty else { return .empty }
        let parts = cursors.map { Int32($0.0) }
        let xids = cursors.map { $0.1.xid }
        let seqs = cursors.map { $0.1.seq }
        let rowLimit = Int32(max(1, limit))
        var rows: [(Int32, Int64, Int64, String)] = []
        let logger = configuration.logger
        let statement = PostgresStatements.ReadRecords(partitions: parts, xids: xids, seqs: seqs, limit: rowLimit)
        // Rows committed behind a transaction still running (a commit of another instance, an ANALYZE) cannot be
        // delivered yet: when a read finds none deliverable but some committed, it reads again shortly instead of
        // reporting nothing, so that a flush or a drain waits for them rather than ending with committed records
        // unread. Bounded by the call deadline; the pauses start at a quarter of the poll interval.
        let patience = ContinuousClock.now + configuration.callTimeout
        var pause = configuration.pollInterval / 4
        let behind = PostgresStatements.RowsAfterCursors(read: statement)
        while true {
            var waiting = false
            do {
                rows = try await call(on: connection) { connection in
                    try await connection.all(statement, logger: logger)
                }
                if rows.isEmpty, ContinuousClock.now + pause < patience, state.withLock({ $0.phase == .running }) {
                    let committed = try await call(on: connection) { connection in
                        try await connection.all(behind, logger: logger)
                    }
                    waiting = committed.first == true
                }
            } catch {
                unreserve(cursors.map(\.0), epoch: epoch)
                throw AnalyticsSinkError(
                    .unavailable,
                    "cannot read the records of partitions \(parts): \(deliveryFailure(error, operation: "the read"))"
                )
            }
            guard waiting else { break }
            configuration.onRowsBehindHorizon?()
            try? await Task.sleep(for: pause)
            pause = min(pause * 2, configuration.pollInterval)
        }
        guard !rows.isEmpty else {
            unreserve(cursors.map(\.0), epoch: epoch, idle: true)
            await releaseIdleLeasesIfConnected()
            return .empty
        }
        var records: [AnalyticsRecord] = []
        records.reserveCapacity(rows.count)
        var problems: [String] = []
        var ends: [Int: Cursor] = [:]
        var counts: [Int: Int] = [:]
        for (part, xid, seq, payload) in rows {
            ends[Int(part)] = Cursor(xid: xid, seq: seq)
            counts[Int(part), default: 0] += 1
            do {
                records.append(try AnalyticsRecord(jsonLine: payload))
            } catch {
                problems.append("skipped record row \(seq) of partition \(part): \(error)")
            }
        }
        let number = state.withLock { state -> UInt64 in
            state.idle = false
            state.nextBatch += 1
            state.batches[state.nextBatch] = Batch(epoch: epoch, ends: ends, rows: counts)
            // The partitions that returned rows stay reserved (in flight) until the batch is acknowledged.
            for (part, _) in cursors where state.leases[part]?.epoch == epoch {
                if let end = ends[part] {
                    state.leases[part]!.read = end
                } else {
                    state.leases[part]!.inFlight -= 1
                }
            }
            return state.nextBatch
        }
        if ends.count < cursors.count { await releaseIdleLeasesIfConnected() }
        return StoredBatch(
            records: records,
            end: Position(batch: number),
            skipped: problems.count,
            problems: problems
        )
    }

    /// Moves the cursors of the partitions in the batches up to `position` — only those still leased on the
    /// connection that read them — on the lease connection, and gives back leases being released once
    /// nothing of them is in flight.
    public func acknowledge(through position: Position) async throws(AnalyticsSinkError) {
        let plan = state.withLock { state -> (PostgresConnection?, [Int: Cursor], [Int: Int], [(Int, UInt64)]) in
            var ends: [Int: Cursor] = [:]
            var rows: [Int: Int] = [:]
            var settled: [(Int, UInt64)] = []
            for number in state.batches.keys.sorted() where number <= position.batch {
                let batch = state.batches.removeValue(forKey: number)!
                for (part, end) in batch.ends {
                    guard let lease = state.leases[part], lease.epoch == batch.epoch else { continue }
                    settled.append((part, batch.epoch))
                    ends[part] = max(ends[part] ?? end, end)
                    rows[part, default: 0] += batch.rows[part] ?? 0
                }
            }
            return (state.leaseConnection, ends, rows, settled)
        }
        let (connection, ends, rows, settled) = plan
        // The batches stay in flight until their cursors are written (or the write failed): a partition given
        // back earlier would be read by its next holder from the cursor before them.
        defer { unreserve(settled) }
        guard !ends.isEmpty else { return }
        guard let connection else {
            throw AnalyticsSinkError(.unavailable, "the lease connection is lost; the partitions' next holder re-sends")
        }
        let parts = ends.keys.sorted()
        let xids = parts.map { ends[$0]!.xid }
        let seqs = parts.map { ends[$0]!.seq }
        let counts = parts.map { Int64(rows[$0] ?? 0) }
        let logger = configuration.logger
        // A cursor only moves forward.
        let statement = PostgresStatements.Acknowledge(
            partitions: parts.map { Int32($0) },
            xids: xids,
            seqs: seqs,
            counts: counts
        )
        do {
            _ = try await call(on: connection) { connection in try await connection.execute(statement, logger: logger) }
        } catch {
            throw AnalyticsSinkError(
                .unavailable,
                "cannot acknowledge partitions \(parts): \(deliveryFailure(error, operation: "the acknowledgement"))"
            )
        }
        let commits = state.withLock { state -> RecordStoreCommits? in
            for part in parts where state.leases[part] != nil {
                state.leases[part]!.acknowledged = max(state.leases[part]!.acknowledged, ends[part]!)
            }
            state.statistics.acknowledgedBatches += 1
            state.statistics.acknowledgedRows += counts.reduce(0) { $0 + Int($1) }
            defer { state.waitingForAcknowledgement = false }
            return state.waitingForAcknowledgement ? state.commits : nil
        }
        await releaseIdleLeases(on: connection)
        // A read passed over these partitions while they were in flight: read them now.
        commits?.recordsAvailable()
    }

    /// Counts a batch (or a read) of each of `partitions` out of flight, for the leases still of `epoch`.
    private func unreserve(_ partitions: [Int], epoch: UInt64, idle: Bool = false) {
        unreserve(partitions.map { ($0, epoch) }, idle: idle)
    }

    /// Counts one batch (or read) of each partition out of flight, for the leases still of its epoch.
    private func unreserve(_ reservations: [(Int, UInt64)], idle: Bool = false) {
        state.withLock { state in
            for (part, epoch) in reservations where state.leases[part]?.epoch == epoch {
                state.leases[part]!.inFlight -= 1
            }
            if idle { state.idle = true }
        }
    }

    /// Gives back the leases being released that a finished read left with nothing in flight.
    private func releaseIdleLeasesIfConnected() async {
        guard let connection = state.withLock({ $0.leaseConnection }) else { return }
        await releaseIdleLeases(on: connection)
    }

    /// Unlocks the partitions marked for release that have nothing in flight.
    private func releaseIdleLeases(on connection: PostgresConnection) async {
        let free = state.withLock { state in
            state.leases.filter { $0.value.releasing && $0.value.inFlight <= 0 }.keys.sorted()
        }
        guard !free.isEmpty else { return }
        let logger = configuration.logger
        for partition in free {
            let statement = PostgresStatements.ReleaseLease(
                namespace: configuration.lockNamespace,
                key: Int32(partition + 1)
            )
            do {
                _ = try await call(on: connection) { connection in try await connection.all(statement, logger: logger) }
            } catch {
                return
            }
            state.withLock { _ = $0.leases.removeValue(forKey: partition) }
        }
        configuration.onLeasesChanged?(leasedPartitions)
    }

    /// Returns once this instance checked its leases for the first time (or it does not deliver, or stopped), or
    /// after the call deadline: a read before then would find nothing leased yet. A read may also come before
    /// ``run(reporting:)`` marked the store running (the pipeline starts both at once): it waits too.
    private func waitForFirstLeaseCheck() async {
        guard configuration.delivers else { return }
        let patience = ContinuousClock.now + configuration.callTimeout
        while !leasesChecked.load(ordering: .acquiring), state.withLock({ $0.phase != .stopped }),
            ContinuousClock.now < patience
        {
            // The check is a few round trips after the lease connection joins: a short pause, at start only.
            do { try await Task.sleep(for: configuration.pollInterval / 4) } catch { return }
        }
    }

    // MARK: Leases

    /// Keeps a lease connection: joins the delivering instances, balances leases every lease interval, and
    /// tells an idle pipeline to read again every poll interval; reconnects when the connection is lost (its
    /// leases are gone then, and taken again if still free).
    func leaseLoop() async {
        let logger = configuration.logger
        var lastFailure: String?
        while state.withLock({ $0.phase == .running }) {
            do {
                let connection = try await configuration.endpoint.connect(
                    logger: logger,
                    parameters: configuration.connectionParameters(
                        applicationName: "containerkit-lease \(configuration.instanceName)"
                    )
                )
                do {
                    try await lease(on: connection)
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                if state.withLock({ $0.phase != .running }) { break }
                // A connection that had joined worked: its loss is news, whatever failed before it.
                if state.withLock({ $0.leaseConnection != nil }) { lastFailure = nil }
                logLeaseFailure(error, repeated: &lastFailure)
            }
            dropLeases()
            try? await Task.sleep(for: configuration.reconnectDelay)
        }
        dropLeases()
    }

    /// Logs why the lease connection failed, by what it is: a privilege the role lacks is an error naming what to
    /// grant (not a lost connection); the same failure again, at debug level.
    private func logLeaseFailure(_ error: any Error, repeated lastFailure: inout String?) {
        let failure = PostgresStoreError.classify(
            error,
            operation: "delivery",
            role: configuration.endpoint.user,
            timeout: configuration.callTimeout
        )
        let metadata: Logger.Metadata = [
            "code": "\(failure.code)", "error": "\(failure.message)",
            "server": "\(PostgresStoreError.serverSummary(error))",
        ]
        defer { lastFailure = failure.description }
        if lastFailure == failure.description {
            configuration.logger.debug("postgres delivery cannot lease partitions", metadata: metadata)
        } else if failure.code == .permissionDenied {
            configuration.logger.error(
                "postgres refuses the delivery's lease connection a privilege",
                metadata: metadata
            )
        } else {
            configuration.logger.warning("postgres delivery lost its lease connection", metadata: metadata)
        }
    }

    private func dropLeases() {
        let changed = state.withLock { state -> Bool in
            defer {
                state.leases = [:]
                state.leaseConnection = nil
                state.epoch += 1
            }
            return !state.leases.isEmpty
        }
        if changed { configuration.onLeasesChanged?([]) }
    }

    /// One lease connection's life, until the store stops or a statement fails (the connection is gone).
    ///
    /// The lease connection is not one of the pool's: a lease is a session-level advisory lock, which lives as
    /// long as the connection that took it. A pooled connection goes back to the pool after each call (and
    /// its locks with it, to whatever call takes it next), and the pool may close it when idle; on a connection
    /// of its own, a lease ends exactly when this instance can no longer deliver (its process or connection
    /// died), which is what lets another instance take it over.
    private func lease(on connection: PostgresConnection) async throws {
        let logger = configuration.logger
        try await call(on: connection) { connection in try await self.ensureSchema(on: connection) }
        let partitions = state.withLock { $0.partitions }
        let join = PostgresStatements.JoinMembers(
            namespace: configuration.lockNamespace,
            key: PostgresSchema.memberLockKey
        )
        _ = try await call(on: connection) { connection in try await connection.all(join, logger: logger) }
        state.withLock { state in
            state.epoch += 1
            state.leaseConnection = connection
        }
        var lastBalance: ContinuousClock.Instant?
        while state.withLock({ $0.phase == .running }) {
            if connection.isClosed { throw PostgresStoreError(.unavailable, "the lease connection closed") }
            if lastBalance.map({ ContinuousClock.now - $0 >= configuration.leaseInterval }) ?? true {
                lastBalance = ContinuousClock.now
                if try await balance(on: connection, partitions: partitions) {
                    state.withLock { $0.idle = true }
                }
                leasesChecked.store(true, ordering: .releasing)
            }
            let (idle, commits) = state.withLock { ($0.idle && !$0.leases.isEmpty, $0.commits) }
            if idle { commits?.recordsAvailable() }
            try? await Task.sleep(for: configuration.pollInterval)
        }
    }

    /// Counts the delivering instances, takes free partitions up to this instance's share and marks those above
    /// it for release. Returns whether a partition was taken.
    private func balance(on connection: PostgresConnection, partitions: Int) async throws -> Bool {
        let logger = configuration.logger
        let namespace = configuration.lockNamespace
        let offset = Int(PostgresPartitioning.partition(ofKey: configuration.instanceName, count: partitions))
        var taken: Set<Int> = []
        var members = 0
        let locks = PostgresStatements.LeaseLocks(namespace: Int64(namespace), partitions: Int64(partitions))
        for (key, mode) in try await call(
            on: connection,
            { connection in try await connection.all(locks, logger: logger) }
        ) {
            if key == Int64(PostgresSchema.memberLockKey) && mode == "ShareLock" {
                members += 1
            } else if key > 0 {
                taken.insert(Int(key) - 1)
            }
        }
        let instances = max(1, members)
        let target = (partitions + instances - 1) / instances
        let (held, epoch) = state.withLock { state -> ([Int: Lease], UInt64) in
            state.statistics.instances = instances
            return (state.leases, state.epoch)
        }
        var changed = false
        if held.count < target {
            var wanted = target - held.count
            for step in 0..<partitions where wanted > 0 {
                let partition = (offset + step) % partitions
                if held[partition] != nil || taken.contains(partition) { continue }
                let tryLease = PostgresStatements.TryLease(namespace: namespace, key: Int32(partition + 1))
                let locked = try await call(on: connection) { connection in
                    try await connection.all(tryLease, logger: logger)
                }
                guard locked.first == true else { continue }
                // The cursor is read after the lock is held: it is the latest the previous holder acknowledged.
                let read = PostgresStatements.ReadCursor(partition: Int32(partition))
                let found = try await call(on: connection) { connection in
                    try await connection.all(read, logger: logger)
                }
                let cursor = found.first.map { Cursor(xid: $0.0, seq: $0.1) } ?? Cursor(xid: 0, seq: 0)
                state.withLock { state in
                    state.leases[partition] = Lease(epoch: epoch, read: cursor, acknowledged: cursor)
                    state.statistics.leasesTaken += 1
                }
                wanted -= 1
                changed = true
                logger.debug("leased a partition", metadata: ["partition": "\(partition)", "cursor": "\(cursor)"])
            }
        } else if held.count > target {
            // Those already being released (a batch of theirs still in flight) count toward the excess.
            let releasing = held.values.filter(\.releasing).count
            let extra = held.filter { !$0.value.releasing }.keys.sorted(by: >)
                .prefix(max(0, held.count - target - releasing))
            state.withLock { state in
                for partition in extra { state.leases[partition]?.releasing = true }
            }
            await releaseIdleLeases(on: connection)
        }
        if changed { configuration.onLeasesChanged?(leasedPartitions) }
        return changed
    }

    /// `error` of a delivery read or acknowledgement, for the message: the lease connection is delivery's own,
    /// so its failures leave the store's availability alone (the pipeline retries; leases are taken again on a
    /// new connection).
    private func deliveryFailure(_ error: any Error, operation: String) -> String {
        let failure = PostgresStoreError.classify(
            error,
            operation: operation,
            role: configuration.endpoint.user,
            timeout: configuration.callTimeout
        )
        configuration.logger.debug(
            "postgres delivery call failed",
            metadata: ["error": "\(failure)", "server": "\(PostgresStoreError.serverSummary(error))"]
        )
        return failure.description
    }
}
