import ContainerKit
import ContainerKitDelivery
import Logging
import PostgresNIO
import Synchronization

extension PostgresRecordStore {
    /// Runs `body` on a connection of the pool within ``Configuration/callTimeout`` (waiting for a connection
    /// included), creating the schema first if this store has not yet.
    ///
    /// A connection whose call failed is closed (the pool opens another): postgres-nio keeps a prepared
    /// statement whose preparation failed (a table locked past `lock_timeout`, a privilege missing) failed on
    /// its connection for good.
    /// - Parameter operation: what the call does, for messages ("the commit").
    /// - Throws: the failure, classified (``PostgresStoreError/classify(_:operation:role:timeout:)``), logged,
    ///   and — when it says the server cannot be used now — the store marked unavailable.
    func call<T: Sendable>(
        _ operation: String,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws(PostgresStoreError) -> T {
        let slot = ConnectionSlot()
        let client = self.client
        do {
            return try await withDeadline(configuration.callTimeout, expire: { slot.expire() }) {
                try await client.withConnection { connection in
                    slot.hold(connection)
                    defer { slot.release() }
                    do {
                        try await self.ensureSchema(on: connection)
                        return try await body(connection)
                    } catch {
                        // Closed before it goes back: the pool hears of the close first, and never hands the
                        // connection out again (a statement written to a closed connection may never be answered).
                        try? await connection.close()
                        throw error
                    }
                }
            }
        } catch is CallTimedOut where !slot.held {
            // The pool found no connection in time: its attempts to connect fail (it retries by itself).
            throw failure(
                PostgresStoreError(
                    .unavailable,
                    "\(operation) got no connection to postgresql within \(configuration.callTimeout.secondsText)"
                ),
                operation: operation
            )
        } catch {
            throw failure(error, operation: operation)
        }
    }

    /// Runs `body` on `connection` (the lease connection) within ``Configuration/callTimeout``; past it the
    /// connection is closed (with it the leases, which the lease loop takes again on a new one).
    func call<T: Sendable>(
        on connection: PostgresConnection,
        _ body: @escaping @Sendable (PostgresConnection) async throws -> T
    ) async throws -> T {
        // A statement sent on a connection that has just closed can wait for an answer forever: not sent at all.
        if connection.isClosed { throw PostgresStoreError(.unavailable, "the lease connection closed") }
        return try await withDeadline(configuration.callTimeout, expire: { connection.closeNow() }) {
            try await body(connection)
        }
    }

    /// `error` classified; counted and logged (the server's message and SQLSTATE in the log only; the same
    /// failure again at debug level); when it says the server cannot be used now, the store is marked
    /// unavailable and new groups and loads fail with it at once until a call succeeds.
    func failure(_ error: any Error, operation: String) -> PostgresStoreError {
        let failure = PostgresStoreError.classify(
            error,
            operation: operation,
            role: configuration.endpoint.user,
            timeout: configuration.callTimeout
        )
        let missingSchema = PostgresStoreError.isMissingSchema(error)
        let (repeated, running) = state.withLock { state -> (Bool, Bool) in
            if failure.code == .timeout { state.statistics.timedOutCalls += 1 }
            // A table or function dropped behind the store's back: created again at the next call.
            if missingSchema {
                state.schemaReady = false
                state.schemaStale = true
            }
            let repeated = state.lastLoggedFailure == failure.description
            state.lastLoggedFailure = failure.description
            let running = state.phase == .running
            if failure.makesUnavailable && running { state.failingFast = failure }
            return (repeated, running)
        }
        let metadata: Logger.Metadata = [
            "code": "\(failure.code)", "error": "\(failure.message)",
            "server": "\(PostgresStoreError.serverSummary(error))",
        ]
        if !running || repeated {
            configuration.logger.debug("postgres call failed", metadata: metadata)
        } else if failure.code == .permissionDenied {
            configuration.logger.error("postgres refuses the store's role a privilege", metadata: metadata)
        } else {
            configuration.logger.warning("postgres call failed", metadata: metadata)
        }
        if failure.makesUnavailable && running { setAvailable(false) }
        return failure
    }

    /// The failure new groups and loads fail with at once, while the server cannot be used (see
    /// ``failure(_:operation:)``).
    var failingFast: PostgresStoreError? { state.withLock { $0.failingFast } }
}
