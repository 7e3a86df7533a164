public import ContainerKit

/// The ``SessionPersistence`` contract as checks that any engine can run: the durable queue's segment log,
/// PostgreSQL, an engine of your own. Each check drives a real ``SessionStore`` (or the persistence directly)
/// and throws a ``Failure`` that says what the engine did wrong.
///
/// ```swift
/// @Test func myEngineKeepsTheContract() async throws {
///     let directory = makeTemporaryDirectory()
///     try await SessionPersistenceConformance(
///         make: { MyPersistence(directory: directory) },
///         reopen: { MyPersistence(directory: directory) }  // the same storage, as after a restart
///     ).checkAll()
/// }
/// ```
public struct SessionPersistenceConformance: Sendable {
    /// A broken promise of the contract.
    public struct Failure: Error, CustomStringConvertible {
        /// What the engine did, and what the contract promises.
        public let description: String
    }

    private let make: @Sendable () async throws -> any SessionPersistence
    private let reopen: @Sendable () async throws -> any SessionPersistence
    private let prefix: String

    /// Checks over the storage that `make` opens; `reopen` opens the same storage again, as a restart
    /// (or another instance) would. The checks use user IDs that start with `userPrefix`, so that several
    /// runs may share one storage.
    public init(
        userPrefix: String = "conformance-",
        make: @escaping @Sendable () async throws -> any SessionPersistence,
        reopen: @escaping @Sendable () async throws -> any SessionPersistence
    ) {
        self.make = make
        self.reopen = reopen
        self.prefix = userPrefix
    }

    /// Every check, in turn.
    public func checkAll() async throws {
        try await versionsFenceStaleOwners()
        try await aReturningUsersNewSessionIsSavedAndSurvivesARestart()
        try await userIDsAreComparedAsBytes()
    }

    /// A save is kept only above the stored version; a removal only at or above it; a load returns the
    /// newest kept version, also after a restart.
    public func versionsFenceStaleOwners() async throws {
        let persistence = try await make()
        let user = prefix + "fence"
        func stored(_ version: Int64, _ mark: Int) -> StoredSession {
            StoredSession(
                snapshot: SessionSnapshot(sessionID: user, model: ["mark": .int(Int64(mark))]),
                version: version
            )
        }
        try await expectSave(persistence, .save(stored(1, 1)), superseded: false)
        try await expectSave(persistence, .save(stored(1, 2)), superseded: true, "an equal version")
        try await expectSave(persistence, .save(stored(3, 3)), superseded: false)
        try await expectSave(persistence, .save(stored(2, 4)), superseded: true, "a lower version")
        // A removal below the stored version changes nothing (whether it is reported superseded is the engine's
        // choice: the session was not ended).
        _ = try await persistence.save([.remove(userID: user, version: 2)])
        for reader in [persistence, try await reopen()] {
            let loaded = try await reader.load(userID: user)
            // The state and its version (a store may add its own change identity, `checkpointID`).
            guard loaded?.snapshot == stored(3, 3).snapshot, loaded?.version == 3 else {
                throw Failure(description: "loaded \(String(describing: loaded)) instead of version 3 of '\(user)'")
            }
        }
        try await expectSave(persistence, .remove(userID: user, version: 3), superseded: false)
        for reader in [persistence, try await reopen()] {
            if let loaded = try await reader.load(userID: user) {
                throw Failure(description: "a removed session still loads: version \(loaded.version) of '\(user)'")
            }
        }
    }

    /// A user whose session ended (idle) and whose removal was saved comes back: the store's new session is
    /// saved, again and again, not refused as superseded, and is what a restarted store loads.
    public func aReturningUsersNewSessionIsSavedAndSurvivesARestart() async throws {
        let user = prefix + "returning"
        let clock = ManualClock()
        let store = SessionStore(
            tagManager: TagManager(logger: InMemoryLogger()),
            configuration: .init(idleTimeout: .seconds(60), persistence: try await make()),
            clock: clock
        )
        let first = try await store.loadSession(for: user)
        await first.push(["visit": 1])
        store.didChange(first)
        try await store.saveChanges()
        clock.advance(by: .seconds(61))
        guard store.evictIdle() == 1 else { throw Failure(description: "the idle session of '\(user)' stayed") }
        try await store.saveChanges()  // the removal

        let second = try await store.loadSession(for: user)
        guard second.get("visit").isUndefined else {
            throw Failure(description: "the ended session of '\(user)' came back: \(second.get("visit"))")
        }
        for (visit, page) in [(2, "home"), (3, "cart")] {
            await second.push(["visit": .int(Int64(visit)), "page": .string(page)])
            store.didChange(second)
            try await store.saveChanges()
            guard store.existingSession(for: user) === second else {
                throw Failure(description: "the returning user's save \(visit - 1) was refused as superseded")
            }
        }
        let restarted = SessionStore(
            tagManager: TagManager(logger: InMemoryLogger()),
            configuration: .init(idleTimeout: .seconds(60), persistence: try await reopen())
        )
        let loaded = try await restarted.loadSession(for: user)
        guard loaded.get("visit") == .int(3), loaded.get("page") == .string("cart") else {
            throw Failure(
                description: "after a restart '\(user)' has visit \(loaded.get("visit")), page \(loaded.get("page"))"
            )
        }
    }

    /// `"caf\u{E9}"` and `"cafe\u{301}"` are two users, each with their own session.
    public func userIDsAreComparedAsBytes() async throws {
        let persistence = try await make()
        let composed = prefix + "caf\u{E9}"
        let decomposed = prefix + "cafe\u{301}"
        for (user, mark) in [(composed, 1), (decomposed, 2)] {
            let snapshot = SessionSnapshot(sessionID: user, model: ["mark": .int(Int64(mark))])
            try await expectSave(persistence, .save(StoredSession(snapshot: snapshot, version: 1)), superseded: false)
        }
        for reader in [persistence, try await reopen()] {
            for (user, mark) in [(composed, 1), (decomposed, 2)] {
                let loaded = try await reader.load(userID: user)
                guard loaded?.snapshot.model["mark"] == .int(Int64(mark)),
                    loaded?.userID.utf8.elementsEqual(user.utf8) == true
                else {
                    throw Failure(
                        description: "canonically equivalent user IDs share a session: \(String(describing: loaded))"
                    )
                }
            }
        }
    }

    private func expectSave(
        _ persistence: any SessionPersistence,
        _ change: SessionChange,
        superseded: Bool,
        _ what: String = ""
    ) async throws {
        let result = try await persistence.save([change])
        let refused = result.superseded.contains { $0.utf8.elementsEqual(change.userID.utf8) }
        guard refused == superseded else {
            throw Failure(
                description: "\(change) was \(refused ? "refused" : "kept")\(what.isEmpty ? "" : " (\(what))"), "
                    + "expected it \(superseded ? "refused" : "kept")"
            )
        }
    }
}
