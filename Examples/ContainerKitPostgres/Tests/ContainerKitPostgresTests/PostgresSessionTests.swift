import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import ContainerKitTesting
import Testing

@Suite(.timeLimit(.minutes(2)))
struct PostgresSessionTests {
    @Test func aSessionIsLoadedOnAMissFromWhatAnotherInstanceCommitted() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        let snapshot = SessionSnapshot(
            sessionID: "u",
            model: ["plan": "gold"],
            firedOncePerLoad: ["welcome"],
            eventNumber: 7
        )
        try await withRunning([first.run, second.run]) {
            #expect(try await first.store.sessions.load(userID: "u") == nil)
            try await first.commit([makeRecord(user: "u")], sessions: [StoredSession(snapshot: snapshot, version: 1)])
            #expect(try await second.store.sessions.load(userID: "u") == StoredSession(snapshot: snapshot, version: 1))
        }
    }

    /// The same contract checks as the file log and the memory engine: fencing, a returning user whose
    /// ended session was removed, byte-compared user IDs; "reopened" is a second instance on the database.
    @Test func theSessionPersistenceContractHolds() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        try await withRunning([first.run, second.run]) {
            try await SessionPersistenceConformance(
                make: { first.store.sessions },
                reopen: { second.store.sessions }
            ).checkAll()
        }
    }

    @Test func aStaleOwnersWriteIsRefusedAndNothingOfItIsCommitted() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let stale = Instance(endpoint, name: "stale") { $0.delivers = false }
        let owner = Instance(endpoint, name: "owner") { $0.delivers = false }
        try await withRunning([stale.run, owner.run]) {
            try await stale.commit([makeRecord(user: "u", event: "one")], sessions: [stored("u", event: 1, version: 1)])
            // The user moved: the new owner loads version 1 and writes version 2.
            let loaded = try #require(try await owner.store.sessions.load(userID: "u"))
            #expect(loaded.version == 1)
            try await owner.commit([makeRecord(user: "u", event: "two")], sessions: [stored("u", event: 2, version: 2)])
            // The old owner still believes version 1 is the latest: its version 2 is refused, and its records with
            // it, while another append of the same group commits.
            let refused = try stale.pipeline.append(
                EncodedRecords([makeRecord(user: "u", event: "stale")], sessions: [stored("u", event: 2, version: 2)])
            )
            let other = try stale.pipeline.append(EncodedRecords([makeRecord(user: "v", event: "other")]))
            let error = await #expect(throws: DurabilityError.self) {
                try await stale.pipeline.waitUntilDurable(ticket: refused.ticket)
            }
            #expect(error?.code == .superseded)
            try await stale.pipeline.waitUntilDurable(ticket: other.ticket)
            // A user it never loaded cannot be overwritten either (a first version where a row exists).
            try await owner.commit([], sessions: [stored("w", version: 1)])
            let blind = await #expect(throws: DurabilityError.self) {
                try await stale.commit([], sessions: [stored("w", event: 5, version: 1)])
            }
            #expect(blind?.code == .superseded)
            // After loading again, the old owner continues from the newest state.
            let reloaded = try await stale.store.sessions.load(userID: "u")
            #expect(reloaded?.snapshot.eventNumber == 2)
            try await stale.commit(
                [makeRecord(user: "u", event: "three")],
                sessions: [stored("u", event: 3, version: reloaded!.version + 1)]
            )
            #expect(stale.store.statistics.fencedSessions == 2)
        }
        let events = try await query(endpoint, "SELECT payload FROM ck_records ORDER BY xid, seq", as: String.self)
        #expect(events.count == 4)
        #expect(!events.contains { $0.contains("\"stale\"") })
        #expect(try await query(endpoint, "SELECT version FROM ck_sessions WHERE user_id = 'u'", as: Int64.self) == [3])
    }

    @Test func theSessionStoresOwnSavesAreFencedAndReportSupersededUsers() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let instance = Instance(endpoint) { $0.delivers = false }
        let persistence = instance.store.sessions
        try await withRunning([instance.run]) {
            var result = try await persistence.save([.save(stored("a", version: 1)), .save(stored("b", version: 1))])
            #expect(result.superseded.isEmpty)
            // b's version 1 is stored: another version 1 is refused; a's 2 is kept.
            result = try await persistence.save([
                .save(stored("a", event: 2, version: 2)), .save(stored("b", event: 9, version: 1)),
            ])
            #expect(result.superseded == ["b"])
            // A version that skips one (the store counted a failed write's version as used) is kept, as the
            // SessionPersistence contract says: a retry is never refused for its first attempt.
            result = try await persistence.save([.save(stored("b", event: 9, version: 3))])
            #expect(result.superseded.isEmpty)
            #expect(try await persistence.load(userID: "a")?.version == 2)
            #expect(try await persistence.load(userID: "b")?.version == 3)
            // A removal deletes only the version it names or an older one.
            _ = try await persistence.save([.remove(userID: "a", version: 1), .remove(userID: "b", version: 3)])
            #expect(try await persistence.load(userID: "a")?.version == 2)
            #expect(try await persistence.load(userID: "b") == nil)
        }
    }

    /// Issue 38: the group commit folded the session writes of a group by `String`, whose `==` is Unicode canonical
    /// equivalence, so one of two such users' snapshots went into the other's row.
    @Test func canonicallyEquivalentUsersInOneGroupCommitAreTwoRows() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let instance = Instance(endpoint) { $0.delivers = false }
        let composed = "caf\u{E9}"
        let decomposed = "cafe\u{301}"
        try await withRunning([instance.run]) {
            try await instance.commit(
                [makeRecord(user: composed), makeRecord(user: decomposed)],
                sessions: [stored(composed, event: 1, version: 1), stored(decomposed, event: 7, version: 1)]
            )
            #expect(try await instance.store.sessions.load(userID: composed)?.snapshot.eventNumber == 1)
            #expect(try await instance.store.sessions.load(userID: decomposed)?.snapshot.eventNumber == 7)
            // Each continues from its own version.
            try await instance.commit([], sessions: [stored(decomposed, event: 8, version: 2)])
            #expect(try await instance.store.sessions.load(userID: composed)?.version == 1)
        }
        let rows = try await query(
            endpoint,
            "SELECT encode(convert_to(user_id, 'UTF8'), 'hex') FROM ck_sessions",
            as: String.self
        )
        #expect(Set(rows) == ["636166c3a9", "63616665cc81"])
    }

    @Test func aSessionStoreOverThePersistenceLoadsOnAMissAndCheckpointsWithRecords() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        let manager = TagManager()
        let sessionsA = SessionStore(tagManager: manager, configuration: checkpointing(first.store.sessions))
        let sessionsB = SessionStore(tagManager: manager, configuration: checkpointing(second.store.sessions))
        try await withRunning([first.run, second.run]) {
            let a = try await sessionsA.loadSession(for: "u")
            _ = await a.push(["plan": "gold"])
            try await first.commit([makeRecord(user: "u")], sessions: [try #require(sessionsA.checkpoint(a))])
            // The user's next request lands on the other instance: it continues the session.
            let b = try await sessionsB.loadSession(for: "u")
            #expect(b.get("plan") == "gold")
            try await second.commit([], sessions: [try #require(sessionsB.checkpoint(b))])
            // The first instance's copy is stale now: its write is refused; invalidated, it loads the newest.
            let refused = await #expect(throws: DurabilityError.self) {
                try await first.commit([], sessions: [try #require(sessionsA.checkpoint(a))])
            }
            #expect(refused?.code == .superseded)
            sessionsA.invalidate("u")
            #expect(sessionsA.existingSession(for: "u") == nil)
            let again = try await sessionsA.loadSession(for: "u")
            try await first.commit([], sessions: [try #require(sessionsA.checkpoint(again))])
        }
        #expect(try await query(endpoint, "SELECT version FROM ck_sessions WHERE user_id = 'u'", as: Int64.self) == [3])
    }

    @Test func sessionsEvictedUnderTheCapContinueFromPostgresWithNothingKeptPerUser() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let instance = Instance(endpoint) { $0.delivers = false }
        let sessions = SessionStore(
            tagManager: TagManager(),
            configuration: checkpointing(instance.store.sessions, maximumSessions: 4)
        )
        let users = (0..<20).map { "user-\($0)" }
        try await withRunning([instance.run]) {
            for round in 1...2 {
                for user in users {
                    let session = try await sessions.loadSession(for: user)
                    _ = await session.push(event: "e\(round)")
                    try await instance.commit(
                        [makeRecord(user: user)],
                        sessions: [try #require(sessions.checkpoint(session))]
                    )
                }
                #expect(sessions.count <= 4)
            }
        }
        // Every user was evicted between its two requests and loaded again: versions continue, nothing fenced.
        let versions = try await query(endpoint, "SELECT DISTINCT version FROM ck_sessions", as: Int64.self)
        #expect(versions == [2])
        #expect(instance.store.statistics.fencedSessions == 0)
        #expect(sessions.statistics.loaded == 20)
    }
}

/// A session store configuration whose host commits each session's change with its records.
private func checkpointing(
    _ persistence: PostgresSessionPersistence,
    maximumSessions: Int = 100_000
) -> SessionStore.Configuration {
    var configuration = SessionStore.Configuration(maximumSessions: maximumSessions, persistence: persistence)
    configuration.checkpointsWithRecords = true
    return configuration
}

/// The record-store seam's contract, the same checks the memory store and the segment log pass.
@Suite(.timeLimit(.minutes(2)))
struct PostgresRecordStoreConformanceTests {
    @Test func thePostgresRecordStoreKeepsTheContract() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        try await RecordStoreConformance(make: { Instance(endpoint, name: "conformance").store }).checkAll()
    }
}
