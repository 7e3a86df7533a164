import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO
import Synchronization

extension PostgresRecordStore {
    /// Every ``Configuration/healthInterval``: the health check (`ck_probe()`, which takes the locks a commit
    /// takes, so it passes only when commits could run: a table locked by someone else keeps the store
    /// unavailable); then, while available, a compaction of the session rows (``compactSessions()``), and every
    /// ``Configuration/rotationInterval`` a rotation.
    func maintenanceLoop() async {
        let logger = configuration.logger
        var lastRotation = ContinuousClock.now
        while state.withLock({ $0.phase == .running }) {
            do throws(PostgresStoreError) {
                _ = try await call("the health check") { connection in
                    try await connection.all(PostgresStatements.Probe(), logger: logger)
                }
                setAvailable(true)
            } catch {
                // Logged and marked unavailable by the call.
            }
            if state.withLock({ $0.available }) {
                do {
                    try await compactSessions()
                } catch {
                    // The next health interval tries again; the call logged why.
                }
            }
            if state.withLock({ $0.available }), ContinuousClock.now - lastRotation >= configuration.rotationInterval {
                lastRotation = ContinuousClock.now
                do {
                    try await rotate()
                } catch {
                    // The next interval tries again; the call logged why.
                }
            }
            try? await Task.sleep(for: configuration.healthInterval)
        }
    }

    /// Deletes the session rows that snapshots written since the last compaction supersede (a snapshot starts its
    /// user's chain: loads and commits read nothing older), in calls of `ck_compact_sessions` of at most
    /// ``compactionBatch`` snapshots' transactions each, until none is left or ``maximumCompactionCalls`` calls
    /// ran. One instance at a time (an advisory transaction lock: a call waits for another instance's pass, then
    /// finds little left), and a call covers every commit that ended before it started. A commit only inserts;
    /// these deletes in bulk cost about a fifth of what each snapshot's commit paid to delete its user's older rows
    /// itself (`Docs/Scaling.md`).
    /// - Returns: the rows deleted.
    /// - Throws: ``PostgresStoreError`` when a call fails (within ``Configuration/callTimeout``).
    @discardableResult
    public func compactSessions() async throws -> Int {
        let logger = configuration.logger
        let statement = PostgresStatements.CompactSessions(
            namespace: configuration.lockNamespace,
            batch: Int32(Self.compactionBatch)
        )
        var deleted = 0
        for _ in 0..<Self.maximumCompactionCalls {
            let answer = try await call("the session compaction") { connection in
                try await connection.all(statement, logger: logger)
            }
            let (rows, more) = answer.first ?? (0, false)
            deleted += Int(rows)
            state.withLock { $0.statistics.compactedSessionRows += Int(rows) }
            if !more { break }
        }
        return deleted
    }

    /// The snapshots (their transactions, each whole) one compaction call reads at most: a call deletes about 15
    /// rows per snapshot, so it stays far below the call's deadline.
    static let compactionBatch = 2_000
    /// The calls one compaction makes at most before the next health interval.
    static let maximumCompactionCalls = 8

    /// Starts a new generation when the current one holds rows, and drops older generations whose rows are
    /// all acknowledged, in one call of `ck_rotate` (one transaction). One instance at a time (an advisory
    /// transaction lock); a lock wait longer than a second (another instance is rotating) gives up until the
    /// next interval.
    /// - Throws: ``PostgresStoreError`` when the call fails (within ``Configuration/callTimeout``).
    public func rotate() async throws {
        let logger = configuration.logger
        let statement = PostgresStatements.Rotate(namespace: configuration.lockNamespace)
        let answer = try await call("the rotation") { connection in try await connection.all(statement, logger: logger)
        }
        let (rotated, dropped) = answer.first ?? (false, 0)
        state.withLock { state in
            if rotated { state.statistics.rotations += 1 }
            state.statistics.droppedGenerations += Int(dropped)
        }
    }
}
