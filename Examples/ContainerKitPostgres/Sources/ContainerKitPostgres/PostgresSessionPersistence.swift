import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO

/// The sessions of a ``PostgresRecordStore`` as a ``SessionPersistence``: a ``SessionStore`` configured with
/// it loads a session it does not hold from PostgreSQL (`ck_sessions`), and its own saves (idle sessions
/// removed, changes not written with records) join the store's group commit.
///
/// The snapshot a push produced is written **with the push's records**, in their transaction: the host takes
/// it with ``SessionStore/checkpoint(_:)`` and appends it in ``EncodedRecords/sessions`` (see
/// ``PostgresRecordStore``). Both paths fence the same way: a version replaces the stored row only if that
/// row holds the version just below it (or there is none).
///
/// Saves are committed by the store's writer, which runs in the pipeline's ``DeliveryPipeline/run()``: a save
/// waits until it runs. Loads work at any time.
public struct PostgresSessionPersistence: SessionPersistence {
    /// The store whose tables and writer are used.
    public let store: PostgresRecordStore

    /// Creates the persistence of `store` (also ``PostgresRecordStore/sessions``).
    public init(store: PostgresRecordStore) { self.store = store }

    /// The newest committed session of `userID`, or `nil` for a user PostgreSQL has never seen.
    /// - Throws: ``ContainerError`` `io_error` when the server cannot be reached or the row does not parse.
    public func load(userID: String) async throws(ContainerError) -> StoredSession? {
        let loaded: (Int64, String)?
        do {
            loaded = try await store.withShortConnection { connection in
                let rows = try await connection.rows(
                    "SELECT version, snapshot FROM ck_sessions WHERE user_id = \(userID)",
                    logger: store.configuration.logger
                )
                var found: (Int64, String)?
                for try await row in rows.decode((Int64, String).self) { found = row }
                return found
            }
        } catch {
            throw ContainerError(
                .io,
                "cannot load the session of '\(userID)' from postgresql: \(PostgresStoreError.describe(error))"
            )
        }
        guard let (version, text) = loaded else { return nil }
        do {
            return StoredSession(snapshot: try SessionSnapshot(jsonText: text), version: version)
        } catch {
            throw ContainerError(.io, "the stored session of '\(userID)' (version \(version)) does not parse: \(error)")
        }
    }

    /// Writes `changes` through the store's group commit, one append per change, so that a fenced session
    /// refuses only itself.
    /// - Returns: the users whose change was refused because another instance stored a newer version.
    /// - Throws: ``ContainerError`` `io_error` when a commit failed (the changes are kept by the caller).
    public func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult {
        var tickets: [(String, UInt64)] = []
        do {
            for change in changes {
                let entry: PostgresRecordStore.Entry
                switch change {
                case .save(let stored):
                    entry = .init(ticket: 0, partitions: [], payloads: [], sessions: [stored], removals: [])
                case .remove(let userID, let version):
                    entry = .init(ticket: 0, partitions: [], payloads: [], sessions: [], removals: [(userID, version)])
                }
                tickets.append((change.userID, try store.enqueue(entry)))
            }
        } catch {
            throw ContainerError(.io, "cannot save sessions into postgresql: \(error.message)")
        }
        var superseded: [String] = []
        var failure: AnalyticsSinkError?
        for (userID, ticket) in tickets {
            guard let error = await store.outcome(of: ticket) else { continue }
            if error.code == .superseded { superseded.append(userID) } else { failure = failure ?? error }
        }
        if let failure { throw ContainerError(.io, "cannot save sessions into postgresql: \(failure.message)") }
        return SessionSaveResult(superseded: superseded)
    }
}
