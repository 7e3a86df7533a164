import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO
import Synchronization

extension PostgresRecordStore {
    func maintenanceLoop() async {
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
            } catch {
                setAvailable(false)
                logger.debug(
                    "postgres health check failed",
                    metadata: ["error": "\(PostgresStoreError.describe(error))"]
                )
            }
            if state.withLock({ $0.available }), ContinuousClock.now - lastRotation >= configuration.rotationInterval {
                lastRotation = ContinuousClock.now
                do {
                    try await rotate()
                } catch {
                    // The next interval tries again; the store stays available.
                    logger.warning(
                        "postgres rotation failed",
                        metadata: ["error": "\(PostgresStoreError.describe(error))"]
                    )
                }
            }
            try? await Task.sleep(for: configuration.healthInterval)
        }
    }

    /// Starts a new generation when the current one holds rows, and drops older generations whose rows are
    /// all acknowledged. One instance at a time (an advisory transaction lock); a lock wait longer than a
    /// second (another instance is rotating) gives up until the next interval.
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
                // Waits (at most the lock timeout) while another instance rotates or creates the tables.
                do {
                    try await connection.execute(
                        "SELECT pg_advisory_xact_lock(\(namespace), \(PostgresSchema.maintenanceLockKey))",
                        logger: logger
                    )
                } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
                    try await connection.execute("ROLLBACK", logger: logger)
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
