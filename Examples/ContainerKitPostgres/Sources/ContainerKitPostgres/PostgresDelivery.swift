import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Delivers the records of a ``PostgresRecordStore`` from any number of instances: the rows are split into
/// partitions, and one instance at a time **leases** a partition with a session-level advisory lock on its
/// own connection, so the lease dies with the connection (a killed instance's partitions are free again as
/// soon as PostgreSQL sees its socket close).
///
/// ```swift
/// let delivery = PostgresDelivery(
///     configuration: .init(endpoint: endpoint, requestsPerSecond: 200),  // Braze's limit for the key
///     destination: BrazeUsersTrackDestination(endpoint: url, apiKey: key))
/// // in the service's task group:  try await delivery.run()
/// ```
///
/// ## Leases
/// Every ``Configuration/leaseInterval`` an instance counts the delivering instances (each holds a shared
/// advisory lock on its lease connection) and aims at `ceil(partitions / instances)` leases: it takes free
/// partitions (`pg_try_advisory_lock`) up to that share and gives back what is above it once the partition's
/// batch in flight is acknowledged. A new instance therefore gets its share within a couple of intervals, and a
/// dead instance's partitions are taken over within one.
///
/// ## Delivery and acknowledgement
/// A leased partition is read in `(xid, seq)` order, only below the oldest transaction still running
/// (`pg_snapshot_xmin`): a row committed late can never land behind the cursor. Each batch is sent with the
/// destination's retry policy until every record is accepted or rejected, then acknowledged by moving the
/// partition's cursor row — on the lease connection, so a lost lease can acknowledge nothing. A crash
/// re-sends at most the batches in flight: one per leased partition.
///
/// ## Shared rate limit
/// ``Configuration/requestsPerSecond`` is the limit for the whole cluster (Braze's limit per API key): an
/// instance sends at most `limit × leased partitions / partitions` requests a second, so the shares add up to
/// the limit however many instances run.
public final class PostgresDelivery: Sendable {
    /// Tunables of a delivery.
    public struct Configuration: Sendable {
        /// The server.
        public var endpoint: PostgresEndpoint
        /// This instance's name in logs and in `pg_stat_activity`'s `application_name`.
        public var instanceName: String
        /// Records per request; `nil` uses the destination's preferred batch size.
        public var batchSize: Int?
        /// How often an idle leased partition is read again (100 ms).
        public var pollInterval: Duration = .milliseconds(100)
        /// How often leases are balanced (1 s): the longest a dead instance's partitions stay undelivered,
        /// beyond the time PostgreSQL takes to see its connection close.
        public var leaseInterval: Duration = .seconds(1)
        /// How long to wait after losing the lease connection before connecting again (1 s).
        public var reconnectDelay: Duration = .seconds(1)
        /// Requests per second for the whole cluster (the destination's limit per API key); `nil`: none.
        public var requestsPerSecond: Double?
        /// The backoff of failed deliveries (0.1 s doubling to 30 s, jittered; attempts unlimited).
        public var retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(100),
            maximumDelay: .seconds(30)
        )
        /// The first key of the advisory locks.
        public var lockNamespace = PostgresSchema.defaultLockNamespace
        /// Partitions to create if this instance creates the tables (16).
        public var partitions = 16
        /// Called when the set of leased partitions changed, with the partitions now held.
        public var onLeasesChanged: (@Sendable ([Int]) -> Void)?
        /// Called after each acknowledged batch with its records (for tests and audit logs).
        public var onAcknowledged: (@Sendable (_ partition: Int, _ records: [AnalyticsRecord]) -> Void)?
        /// Where the delivery logs.
        public var logger = Logger(label: "containerkit.postgres.delivery")

        /// Creates a configuration with the defaults.
        public init(endpoint: PostgresEndpoint, instanceName: String = "containerkit", requestsPerSecond: Double? = nil)
        {
            self.endpoint = endpoint
            self.instanceName = instanceName
            self.requestsPerSecond = requestsPerSecond
        }
    }

    /// Counters since the delivery was created, and the leases held now.
    public struct Statistics: Sendable, Hashable {
        /// Partitions this instance leases now.
        public var leasesHeld = 0
        /// Delivering instances seen at the last lease check (this one included).
        public var instances = 0
        /// Leases taken (including after a reconnect).
        public var leasesTaken = 0
        /// Records the destination accepted.
        public var deliveredRecords = 0
        /// Records the destination refused for good (dropped with its message).
        public var rejectedRecords = 0
        /// Batches acknowledged (cursor moved).
        public var acknowledgedBatches = 0
        /// Delivery attempts that left records to retry.
        public var failedAttempts = 0
        /// Rows that did not parse as records (skipped, logged).
        public var skippedRows = 0
    }

    private enum Lease: Equatable {
        case held(xid: Int64, seq: Int64)
        case releasing(xid: Int64, seq: Int64)
    }

    private struct State {
        var running = false
        var leases: [Int: Lease] = [:]
        var statistics = Statistics()
        var partitions = 0
        var tokens = 0.0
        var refilled = ContinuousClock.now
    }

    /// The configuration the delivery was created with.
    public let configuration: Configuration
    /// Where the records go.
    public let destination: any AnalyticsDestination
    private let state = Mutex(State())

    /// Creates a delivery; connects nothing until ``run()``.
    public init(configuration: Configuration, destination: any AnalyticsDestination) {
        self.configuration = configuration
        self.destination = destination
    }

    /// Counters, and the leases held now.
    public var statistics: Statistics {
        state.withLock { state in
            var statistics = state.statistics
            statistics.leasesHeld = state.leases.count
            return statistics
        }
    }

    /// The partitions leased now, ascending.
    public var leasedPartitions: [Int] { state.withLock { $0.leases.keys.sorted() } }

    /// Leases partitions and delivers them until the task is cancelled; reconnects by itself when the lease
    /// connection is lost (its leases are then gone, and taken again if still free).
    public func run() async throws {
        let logger = configuration.logger
        while !Task.isCancelled {
            do {
                let connection = try await configuration.endpoint.connect(
                    logger: logger,
                    applicationName: "containerkit-lease \(configuration.instanceName)"
                )
                do {
                    try await deliver(on: connection)
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch is CancellationError {
                break
            } catch {
                if Task.isCancelled { break }
                logger.warning("postgres delivery lost its lease connection: \(PostgresStoreError.describe(error))")
            }
            dropLeases()
            try? await Task.sleep(for: configuration.reconnectDelay)
        }
        dropLeases()
    }

    private func dropLeases() {
        let changed = state.withLock { state -> Bool in
            defer { state.leases = [:] }
            return !state.leases.isEmpty
        }
        if changed { configuration.onLeasesChanged?([]) }
    }

    /// One lease connection's life: joins the members, then balances leases and delivers the leased partitions
    /// until cancelled or until a statement fails (the connection is gone).
    private func deliver(on connection: PostgresConnection) async throws {
        let logger = configuration.logger
        logger.debug("lease connection open")
        let count = try await PostgresSchema.ensure(
            on: connection,
            partitions: configuration.partitions,
            lockNamespace: configuration.lockNamespace,
            logger: logger
        )
        state.withLock { $0.partitions = count }
        try await connection.execute(
            "SELECT pg_advisory_lock_shared(\(configuration.lockNamespace), \(PostgresSchema.memberLockKey))",
            logger: logger
        )
        logger.debug("member of the delivering instances")
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.balanceLeases(on: connection, partitions: count) }
            for partition in 0..<count {
                group.addTask { try await self.work(partition: partition, on: connection) }
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    private func balanceLeases(on connection: PostgresConnection, partitions: Int) async throws {
        let logger = configuration.logger
        let namespace = configuration.lockNamespace
        let offset = Int(PostgresPartitioning.partition(ofKey: configuration.instanceName, count: partitions))
        while true {
            try Task.checkCancellation()
            var instances = 1
            var taken: Set<Int> = []
            let rows = try await connection.rows(
                """
                SELECT objid::text::bigint, mode FROM pg_locks
                WHERE locktype = 'advisory' AND granted AND classid::text::bigint = \(Int64(namespace)) AND objsubid = 2
                  AND objid::text::bigint <= \(Int64(partitions))
                  AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
                """,
                logger: logger
            )
            var members = 0
            for try await (key, mode) in rows.decode((Int, String).self) {
                if key == Int(PostgresSchema.memberLockKey) && mode == "ShareLock" {
                    members += 1
                } else if key > 0 {
                    taken.insert(key - 1)
                }
            }
            instances = max(1, members)
            logger.debug("lease check: \(members) instances, taken \(taken.sorted())")
            let target = (partitions + instances - 1) / instances
            let held = state.withLock { state -> [Int: Lease] in
                state.statistics.instances = instances
                return state.leases
            }
            var changed = false
            if held.count < target {
                var wanted = target - held.count
                for step in 0..<partitions where wanted > 0 {
                    let partition = (offset + step) % partitions
                    if held[partition] != nil || taken.contains(partition) { continue }
                    var locked = false
                    for try await value in try await connection.rows(
                        "SELECT pg_try_advisory_lock(\(namespace), \(Int32(partition + 1)))",
                        logger: logger
                    ).decode(Bool.self) { locked = value }
                    guard locked else { continue }
                    // The cursor is read after the lock is held: it is the latest the previous holder acknowledged.
                    var cursor: (Int64, Int64) = (0, 0)
                    for try await row in try await connection.rows(
                        "SELECT xid, seq FROM ck_cursors WHERE part = \(Int32(partition))",
                        logger: logger
                    ).decode((Int64, Int64).self) { cursor = row }
                    state.withLock { state in
                        state.leases[partition] = .held(xid: cursor.0, seq: cursor.1)
                        state.statistics.leasesTaken += 1
                    }
                    wanted -= 1
                    changed = true
                    logger.debug("leased partition \(partition) at \(cursor)")
                }
            } else if held.count > target {
                let extra = held.filter { if case .held = $0.value { return true } else { return false } }
                    .keys.sorted(by: >).prefix(held.count - target)
                state.withLock { state in
                    for partition in extra {
                        if case .held(let xid, let seq)? = state.leases[partition] {
                            state.leases[partition] = .releasing(xid: xid, seq: seq)
                        }
                    }
                }
            }
            if changed { configuration.onLeasesChanged?(leasedPartitions) }
            try await Task.sleep(for: configuration.leaseInterval)
        }
    }

    private func work(partition: Int, on connection: PostgresConnection) async throws {
        let logger = configuration.logger
        let batchSize = Int32(max(1, configuration.batchSize ?? destination.preferredBatchSize))
        while true {
            try Task.checkCancellation()
            guard let lease = state.withLock({ $0.leases[partition] }) else {
                try await Task.sleep(for: configuration.pollInterval)
                continue
            }
            let cursor: (xid: Int64, seq: Int64)
            switch lease {
            case .releasing:
                try await connection.execute(
                    "SELECT pg_advisory_unlock(\(configuration.lockNamespace), \(Int32(partition + 1)))",
                    logger: logger
                )
                state.withLock { _ = $0.leases.removeValue(forKey: partition) }
                configuration.onLeasesChanged?(leasedPartitions)
                continue
            case .held(let xid, let seq):
                cursor = (xid, seq)
            }
            var rows: [(Int64, Int64, String)] = []
            for try await row in try await connection.rows(
                """
                SELECT xid, seq, payload FROM ck_records
                WHERE part = \(Int32(partition)) AND (xid, seq) > (\(cursor.xid), \(cursor.seq))
                  AND xid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint
                ORDER BY xid, seq LIMIT \(batchSize)
                """,
                logger: logger
            ).decode((Int64, Int64, String).self) { rows.append(row) }
            logger.debug("read \(rows.count) rows of partition \(partition) after \(cursor)")
            guard let last = rows.last else {
                try await Task.sleep(for: configuration.pollInterval)
                continue
            }
            var records: [AnalyticsRecord] = []
            records.reserveCapacity(rows.count)
            var skipped = 0
            for (_, seq, payload) in rows {
                do {
                    records.append(try AnalyticsRecord(jsonLine: payload))
                } catch {
                    skipped += 1
                    logger.error("skipped record row \(seq) of partition \(partition): \(error)")
                }
            }
            try await send(records)
            try await connection.execute(
                """
                UPDATE ck_cursors SET xid = \(last.0), seq = \(last.1), acknowledged = acknowledged + \(Int64(rows.count))
                WHERE part = \(Int32(partition))
                """,
                logger: logger
            )
            state.withLock { state in
                switch state.leases[partition] {
                case .held?: state.leases[partition] = .held(xid: last.0, seq: last.1)
                case .releasing?: state.leases[partition] = .releasing(xid: last.0, seq: last.1)
                case nil: break
                }
                state.statistics.acknowledgedBatches += 1
                state.statistics.skippedRows += skipped
            }
            configuration.onAcknowledged?(partition, records)
        }
    }

    /// Sends `records` until every one is accepted or rejected (retryable ones again, with backoff).
    private func send(_ records: [AnalyticsRecord]) async throws {
        var remaining = records
        var attempt = 0
        while !remaining.isEmpty {
            try await takeRequestToken()
            let result = await destination.deliver(remaining)
            try Task.checkCancellation()
            state.withLock { state in
                state.statistics.deliveredRecords += result.accepted.count
                state.statistics.rejectedRecords += result.rejectedCount
                if !result.retryable.isEmpty { state.statistics.failedAttempts += 1 }
            }
            for rejection in result.rejected {
                configuration.logger.error(
                    "the destination refused \(rejection.records.count) records: \(rejection.error)"
                )
            }
            remaining = result.retryable
            guard !remaining.isEmpty else { return }
            attempt += 1
            try await Task.sleep(
                for: configuration.retry.delay(
                    afterAttempt: attempt,
                    error: result.retryError,
                    random: Double.random(in: 0..<1)
                )
            )
        }
    }

    /// Waits for this instance's share of the cluster-wide request rate: `limit × leased / partitions`.
    private func takeRequestToken() async throws {
        guard let limit = configuration.requestsPerSecond, limit > 0 else { return }
        let wait = state.withLock { state -> Duration in
            let share = max(limit * Double(state.leases.count) / Double(max(1, state.partitions)), limit / 1000)
            let now = ContinuousClock.now
            state.tokens = min(share, state.tokens + (now - state.refilled).seconds * share)
            state.refilled = now
            state.tokens -= 1
            return state.tokens >= 0 ? .zero : .seconds(-state.tokens / share)
        }
        if wait > .zero { try await Task.sleep(for: wait) }
    }
}
