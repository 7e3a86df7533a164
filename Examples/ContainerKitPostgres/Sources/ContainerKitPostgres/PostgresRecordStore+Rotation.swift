import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO
import Synchronization

extension PostgresRecordStore {
    /// Every ``Configuration/healthInterval``: the health check (`ck_probe()`, which takes the locks a commit
    /// takes, so it passes only when commits could run: a table locked by someone else keeps the store
    /// unavailable); every ``Configuration/rotationInterval``, while available, a rotation.
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
