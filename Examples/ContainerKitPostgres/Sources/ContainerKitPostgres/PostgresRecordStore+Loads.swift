import ContainerKit
import PostgresNIO
import Synchronization

/// One stored session row of a user: a snapshot, or a delta on the version before.
struct SessionRow: Sendable {
    var version: Int64
    var snapshot: Bool
    var body: String
    /// The change's identity (``SessionCheckpoint/id``; 0 for rows written before lineage).
    var id: UInt64 = 0
}

/// A caller of ``PostgresRecordStore/sessionRows(of:)`` waiting for the next load query.
struct LoadRequest {
    var userID: String
    var continuation: CheckedContinuation<Result<[SessionRow], PostgresStoreError>, Never>
}

extension PostgresRecordStore {
    /// `userID`'s stored session rows — the newest snapshot and the rows after it — in version
    /// order, a snapshot before a delta of its version. Read by the next load query, together with every other
    /// user asked for meanwhile (up to ``Configuration/maximumUsersPerLoad`` a query).
    /// - Throws: the call's failure; at once while the store is unavailable or after it stopped.
    func sessionRows(of userID: String) async throws(PostgresStoreError) -> [SessionRow] {
        if let failure = failingFast { throw failure }
        let result = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<[SessionRow], PostgresStoreError>, Never>) in
            let (refused, wakeup) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                if state.phase == .stopped { return (true, nil) }
                state.loads.append(LoadRequest(userID: userID, continuation: continuation))
                defer { state.loaderWakeup = nil }
                return (false, state.loaderWakeup)
            }
            if refused {
                continuation.resume(returning: .failure(PostgresStoreError(.unavailable, "the store stopped")))
            }
            wakeup?.resume()
        }
        return try result.get()
    }

    /// Answers the waiting loads, a query at a time, until the store stops.
    func loaderLoop() async {
        let logger = configuration.logger
        while let batch = await nextLoads() {
            var users: [String] = []
            var seen: Set<UserIDKey> = []
            for request in batch where seen.insert(UserIDKey(request.userID)).inserted { users.append(request.userID) }
            let result: Result<[UserIDKey: [SessionRow]], PostgresStoreError>
            if let failure = failingFast {
                result = .failure(failure)
            } else {
                do {
                    let query = PostgresStatements.LoadSessions(users: users)
                    let rows = try await call("the session load") { connection in
                        try await connection.all(query, logger: logger)
                    }
                    var byUser: [UserIDKey: [SessionRow]] = [:]
                    for (user, version, snapshot, body, id) in rows {
                        byUser[UserIDKey(user), default: []].append(
                            SessionRow(version: version, snapshot: snapshot, body: body, id: UInt64(bitPattern: id))
                        )
                    }
                    state.withLock { state in
                        state.statistics.loadQueries += 1
                        state.statistics.loadedUsers += users.count
                    }
                    result = .success(byUser)
                } catch {
                    result = .failure(error)
                }
            }
            for request in batch {
                request.continuation.resume(
                    returning: result.map { rows in
                        (rows[UserIDKey(request.userID)] ?? []).sorted {
                            $0.version != $1.version ? $0.version < $1.version : $0.snapshot && !$1.snapshot
                        }
                    }
                )
            }
        }
    }

    /// Waits for loads; returns up to ``Configuration/maximumUsersPerLoad`` of them, or `nil` once stopped.
    private func nextLoads() async -> [LoadRequest]? {
        while true {
            let taken: [LoadRequest]?? = state.withLock { state in
                if state.phase == .stopped { return .some(nil) }
                if state.loads.isEmpty { return .none }
                let count = min(state.loads.count, max(1, configuration.maximumUsersPerLoad))
                defer { state.loads.removeFirst(count) }
                return .some(Array(state.loads.prefix(count)))
            }
            if case .some(let batch) = taken { return batch }
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    if !state.loads.isEmpty || state.phase == .stopped { return true }
                    state.loaderWakeup = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        }
    }
}
