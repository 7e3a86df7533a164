import ContainerKit
import ContainerKitDelivery
import Foundation
import Logging
import PostgresNIO

/// The sessions of a ``PostgresRecordStore`` as a ``SessionPersistence``: a ``SessionStore`` configured with
/// it loads a session it does not hold from PostgreSQL, and its own saves (sessions evicted for capacity
/// written behind, idle sessions removed) join the store's group commit.
///
/// A user's session is stored in `ck_session_changes` as its last snapshot and the deltas committed after
/// it (see ``PostgresRecordStore``): with a committer that keeps sessions (`RecordCommitter(pipeline,
/// keepsSessions: true)`), each push's checkpoint is written **with the push's records**, in their
/// transaction. A load folds the newest snapshot and the deltas after it (``SessionFold``); the `ck_sessions`
/// rows versions before deltas wrote become snapshot rows when the schema is brought up to date. Saves are whole snapshots,
/// fenced as the contract says: kept only if the stored head is below their version.
///
/// A stored row that cannot be applied (a delta that does not parse or does not follow the one before) is
/// logged, counted (``PostgresRecordStore/Statistics/unappliedSessionDeltas``), and the session continues
/// from what applied, at the newest stored version: its next commit is a snapshot that replaces the
/// unreadable rows. When not even a snapshot is readable, ``load(userID:)`` returns `nil` and
/// ``endedVersion(userID:)`` the newest stored version, so the user's new session is kept above it.
///
/// Loads are gathered: while one load query runs, the users asked for meanwhile join the next, read in one
/// query (``PostgresRecordStore/Configuration/maximumUsersPerLoad`` at most). Saves are committed by the store's
/// writer. Both run in the store's ``PostgresRecordStore/run(reporting:)`` (the pipeline's
/// ``DeliveryPipeline/run()``): a load or save waits until it runs.
public struct PostgresSessionPersistence: SessionPersistence {
    /// The store whose tables and writer are used.
    public let store: PostgresRecordStore

    /// The most users whose unreadable head is kept for ``endedVersion(userID:)`` (beyond, the list starts
    /// over: such a user's new session is fenced once, and the retry loads again).
    static let maximumUnreadableHeads = 4096

    /// Creates the persistence of `store` (also ``PostgresRecordStore/sessions``).
    public init(store: PostgresRecordStore) { self.store = store }

    /// The newest committed session of `userID` — its newest snapshot with the deltas after it applied (before
    /// the first snapshot, the empty state with the deltas from version 1 applied: ``SessionFold``) — or `nil`
    /// for a user PostgreSQL has never seen (or whose rows cannot be read from their start).
    /// - Throws: ``ContainerError`` `io_error` when the server cannot be reached or answer within the call
    ///   deadline, or refuses the store's role (the message says which; it holds no URL, SQL or server detail).
    public func load(userID: String) async throws(ContainerError) -> StoredSession? {
        let rows: [SessionRow]
        do {
            rows = try await store.sessionRows(of: userID)
        } catch {
            throw ContainerError(.io, "cannot load the session of '\(userID)' from postgresql: \(error.description)")
        }
        var fold = SessionFold()
        var seen = Set<Int64>()
        for row in rows {
            // A version read twice (a moved legacy row and a delta of its version, which no writer makes) is read
            // once: the snapshot, which comes first.
            guard seen.insert(row.version).inserted else { continue }
            if row.snapshot {
                do {
                    fold.apply(snapshot: try SessionSnapshot(jsonText: row.body), version: row.version, id: row.id)
                } catch {
                    fold.skip(
                        version: row.version,
                        id: row.id,
                        problem: "the snapshot of version \(row.version) does not parse: \(error.message)"
                    )
                }
            } else {
                fold.apply(deltaText: row.body, version: row.version, id: row.id)
            }
        }
        let loaded = fold.stored
        let head = rows.last?.version ?? 0
        let user = UserIDKey(userID)
        store.state.withLock { state in
            if fold.unapplied > 0 { state.statistics.unappliedSessionDeltas += fold.unapplied }
            if loaded == nil && head > 0 {
                if state.unreadableHeads.count >= Self.maximumUnreadableHeads { state.unreadableHeads = [:] }
                state.unreadableHeads[user] = head
            } else if !state.unreadableHeads.isEmpty {
                state.unreadableHeads[user] = nil
            }
        }
        if fold.unapplied > 0 {
            store.configuration.logger.warning(
                "stored session rows could not be applied; the session continues from what applied",
                metadata: [
                    "user_id": "\(userID)",
                    "unapplied": "\(fold.unapplied)",
                    "version": "\(head)",
                    "problem": "\(fold.problem ?? "")",
                ]
            )
        }
        return loaded
    }

    /// The newest stored version of a user whose rows ``load(userID:)`` found but could not make a session of
    /// (no readable snapshot): the new session continues above it, so its first snapshot replaces those rows.
    /// 0 otherwise (a removed session leaves no rows).
    public func endedVersion(userID: String) async throws(ContainerError) -> Int64 {
        let user = UserIDKey(userID)
        return store.state.withLock { $0.unreadableHeads[user] ?? 0 }
    }

    /// Writes `changes` through the store's group commit, one append per change, so that a fenced session
    /// refuses only itself: a save as a whole snapshot (kept if the stored head is below its version), a
    /// removal of all the user's rows if none is newer than its version.
    /// - Returns: the users whose change was refused because another instance stored a newer version.
    /// - Throws: ``ContainerError`` `io_error` when a commit failed (the changes are kept by the caller).
    public func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult {
        var tickets: [(String, UInt64)] = []
        do {
            for change in changes {
                let entry: PostgresRecordStore.Entry
                switch change {
                case .save(let stored):
                    entry = .init(
                        ticket: 0,
                        partitions: [],
                        payloads: [],
                        sessions: [SessionCheckpoint(stored)],
                        removals: []
                    )
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
