import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import ContainerKitTesting
import PostgresNIO
import Synchronization
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
            let loaded = try await second.store.sessions.load(userID: "u")
            #expect(loaded?.snapshot == snapshot && loaded?.version == 1)
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

    /// The promises of a store that keeps sessions — the checks the segment log and the in-memory reference
    /// pass — over two instances sharing one database.
    @Test func theSessionCommitContractHolds() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        let turn = Mutex(0)
        try await withRunning([first.run, second.run]) {
            try await SessionCommitConformance {
                // Instances alternate, as users' requests land on either.
                let instance = turn.withLock { turn in
                    defer { turn += 1 }
                    return turn % 2 == 0 ? first : second
                }
                return .init(
                    committer: RecordCommitter(instance.pipeline, keepsSessions: true),
                    persistence: instance.store.sessions
                )
            }.checkAll()
        }
    }

    /// 5,000 users PostgreSQL has never seen, loaded at once (a cold start behind a load balancer): every load
    /// answers, in a few queries of many users each, on no more connections than the pool holds.
    @Test func aBurstOf5000NewUsersIsLoadedInFewQueriesOnThePoolsConnections() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let instance = Instance(endpoint, name: "burst") { configuration in
            configuration.delivers = false
            configuration.maximumConnections = 4
        }
        try await withRunning([instance.run]) {
            #expect(try await instance.store.sessions.load(userID: "warm-up") == nil)
            // Samples this instance's connections while the burst runs.
            let monitor = try await PostgresConnection.connect(
                configuration: try endpoint.connectionConfiguration,
                id: 88,
                logger: testLogger
            )
            let sampling = Task {
                var most = 0
                var backends = Set<Int32>()
                while !Task.isCancelled {
                    var count = 0
                    do {
                        let pids = try await monitor.query(
                            "SELECT pid FROM pg_stat_activity WHERE application_name = 'containerkit burst'",
                            logger: testLogger
                        )
                        for try await pid in pids.decode(Int32.self) {
                            count += 1
                            backends.insert(pid)
                        }
                    } catch {
                        // Cancelled in the middle of a sample (the burst is over): the samples before it count.
                        if Task.isCancelled { break }
                        throw error
                    }
                    most = max(most, count)
                    try? await Task.sleep(for: .milliseconds(2))
                }
                return (most, backends.count)
            }
            let persistence = instance.store.sessions
            // The monitor is closed whatever happens (a connection dropped unclosed traps in postgres-nio).
            let loads: Result<Int, any Error>
            do {
                loads = .success(
                    try await withThrowingTaskGroup(of: Bool.self) { group in
                        for user in 0..<5000 {
                            group.addTask { try await persistence.load(userID: "cold-\(user)") != nil }
                        }
                        return try await group.reduce(0) { $0 + ($1 ? 1 : 0) }
                    }
                )
            } catch {
                loads = .failure(error)
            }
            sampling.cancel()
            let sampled = await sampling.result
            try await monitor.close()
            let found = try loads.get()
            let (most, backends) = try sampled.get()
            #expect(found == 0)
            #expect(most <= 4, "connections open at once")
            #expect(backends <= 4, "connections opened during the burst")
            let statistics = instance.store.statistics
            #expect(statistics.loadedUsers == 5001)
            #expect(statistics.loadQueries < 100, "\(statistics.loadQueries) queries for 5,001 users")
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
                EncodedRecords(
                    [makeRecord(user: "u", event: "stale")],
                    sessions: [SessionCheckpoint(stored("u", event: 2, version: 2))]
                )
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
        try await compactSessions(endpoint)
        #expect(try await query(endpoint, versionsOfU, as: Int64.self) == [3])
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
            "SELECT encode(convert_to(user_id, 'UTF8'), 'hex') FROM ck_session_changes",
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
        try await compactSessions(endpoint)
        #expect(try await query(endpoint, versionsOfU, as: Int64.self) == [3])
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
        try await compactSessions(endpoint)
        let versions = try await query(endpoint, "SELECT DISTINCT version FROM ck_session_changes", as: Int64.self)
        #expect(versions == [2])
        #expect(instance.store.statistics.fencedSessions == 0)
        #expect(sessions.statistics.loaded == 20)
    }

    // MARK: Snapshot and deltas

    /// A store whose committer keeps sessions inserts a row per push — a delta, and every 16 commits the whole
    /// snapshot — and another instance folds the last snapshot and the deltas after it into the state the owner
    /// holds: nested keys, user properties and the Braze user attribute. The rows a snapshot supersedes are read by
    /// nothing, and a compaction (any instance's) deletes them.
    @Test func pushesCommitDeltaRowsAndAnotherInstanceLoadsTheOwnersState() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        let owner = committing(first)
        try await withRunning([first.run, second.run]) {
            for push in 1...40 {
                try await owner.push(
                    event: "played song",
                    parameters: songParameters(push),
                    for: "u",
                    prepare: { nameBrazeUser($0, known: push >= 25) }
                )
                if push == 20 {
                    // The snapshot of version 17 and three deltas after it.
                    let elsewhere = try await committing(second).loadSession(for: "u")
                    #expect(elsewhere.snapshot() == owner.existingSession(for: "u")?.snapshot())
                }
            }
            #expect(first.store.statistics.committedSessions == 40, "a row per push")
            let chain = ["33:true"] + (34...40).map { "\($0):false" }
            // Before a compaction the superseded rows may still be there (the maintenance compacts every second);
            // what a load reads is the same.
            #expect(try await query(endpoint, rowsOfU, as: String.self).suffix(8) == chain[...])
            try await second.store.compactSessions()
            #expect(try await query(endpoint, rowsOfU, as: String.self) == chain)
            let compacted = first.store.statistics.compactedSessionRows + second.store.statistics.compactedSessionRows
            #expect(compacted == 32, "versions 1 to 32, each once, by whichever instance compacted first")
            let stored = try #require(try await second.store.sessions.load(userID: "u"))
            #expect(stored.version == 40)
            #expect(stored.deltas == 7)
            let live = try #require(owner.existingSession(for: "u")).snapshot()
            let loaded = try await committing(second).loadSession(for: "u")
            #expect(loaded.snapshot() == live)
            #expect(live.model["song"] == songParameters(40)["song"])
            #expect(live.userProperties["plan"] == "pro")
            #expect(live.attributes[brazeUserAttribute] == .object(["external_id": "u"]))
            #expect(second.store.statistics.unappliedSessionDeltas == 0)
        }
    }

    /// A delta is kept only on top of the version it continues: a stale owner's (below the head), one that skips
    /// versions, and a snapshot not above the head are refused with their records.
    @Test func aStaleOwnersDeltaIsFencedAndTheHeadStays() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let stale = Instance(endpoint, name: "stale") { $0.delivers = false }
        let owner = Instance(endpoint, name: "owner") { $0.delivers = false }
        try await withRunning([stale.run, owner.run]) {
            try await stale.commit([], sessions: [stored("u", version: 1)])
            try await stale.commit([makeRecord(user: "u", event: "one")], checkpoints: [delta("u", 2, "a")])
            // The user moved: the owner loads version 2 and goes on, two commits in one append.
            #expect(try await owner.store.sessions.load(userID: "u")?.version == 2)
            try await owner.commit([makeRecord(user: "u")], checkpoints: [delta("u", 3, "b"), delta("u", 4, "c")])
            let refused: [(String, SessionCheckpoint)] = [
                ("stale", delta("u", 3, "stale")),
                ("gap", delta("u", 6, "gap")),
                (
                    "below",
                    SessionCheckpoint(stored("u", event: 9, version: 4))
                ),
            ]
            for (event, checkpoint) in refused {
                let error = await #expect(throws: DurabilityError.self) {
                    try await stale.commit([makeRecord(user: "u", event: event)], checkpoints: [checkpoint])
                }
                #expect(error?.code == .superseded, "\(event)")
            }
            #expect(stale.store.statistics.fencedSessions == 3)
            let loaded = try #require(try await stale.store.sessions.load(userID: "u"))
            #expect(loaded.version == 4)
            #expect(loaded.deltas == 3)
            #expect(loaded.snapshot.model.keys == ["a", "b", "c"])
        }
        #expect(try await query(endpoint, rowsOfU, as: String.self) == ["1:true", "2:false", "3:false", "4:false"])
        let events = try await query(endpoint, "SELECT payload FROM ck_records", as: String.self)
        #expect(events.count == 2)
        #expect(!events.contains { $0.contains("\"stale\"") || $0.contains("\"gap\"") || $0.contains("\"below\"") })
    }

    /// Two instances pushing one user: the one holding a stale copy is fenced, loads the newest and pushes again
    /// on top; under concurrent pushes no version is stored twice, the chain folds without a gap, and every
    /// acknowledged push is in the state.
    @Test func twoInstancesPushingOneUserNeverForkItNorLoseAnAcknowledgedPush() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        let a = committing(first)
        let b = committing(second)
        try await withRunning([first.run, second.run]) {
            // Both hold version 1; a commits version 2; b's delta from version 1 is fenced and pushed again.
            try await a.push(event: "tick", parameters: ["a0": true], for: "u")
            _ = try await b.loadSession(for: "u")
            try await a.push(event: "tick", parameters: ["a1": true], for: "u")
            try await b.push(event: "tick", parameters: ["b0": true], for: "u")
            #expect(second.store.statistics.fencedSessions == 1)
            #expect(b.existingSession(for: "u")?.get("a1") == true, "b's push ends up on top of a's")
            var acknowledged = ["a0", "a1", "b0"]
            acknowledged += try await withThrowingTaskGroup(of: [String].self) { group in
                for (name, sessions) in [("a", a), ("b", b)] {
                    group.addTask {
                        var kept: [String] = []
                        for index in 1...25 {
                            let key = "\(name)-\(index)"
                            do throws(SessionStore.PushError) {
                                try await sessions.push(event: "tick", parameters: [key: true], for: "u")
                                kept.append(key)
                            } catch {
                                // Refused three times by the other instance's commits: not acknowledged.
                                guard case .notDurable(let failure, _) = error, failure.code == .superseded else {
                                    throw error
                                }
                            }
                        }
                        return kept
                    }
                }
                var all: [String] = []
                for try await kept in group { all += kept }
                return all
            }
            let loaded = try #require(try await first.store.sessions.load(userID: "u"))
            #expect(first.store.statistics.unappliedSessionDeltas == 0)
            for key in acknowledged { #expect(loaded.snapshot.model[key] == true, "acknowledged push '\(key)' kept") }
            #expect(loaded.snapshot.eventNumber == acknowledged.count, "nothing else was kept")
            let versions = try await query(
                endpoint,
                "SELECT version FROM ck_session_changes WHERE user_id = 'u' ORDER BY version",
                as: Int64.self
            )
            #expect(versions == Array(try #require(versions.first)...loaded.version))
        }
    }

    /// A delta row that does not parse: the load returns the state before it at the newest version (counted,
    /// logged), and the session's next commit is a snapshot, kept, that replaces the unreadable rows.
    @Test func aCorruptDeltaRowLoadsTheStateBeforeItAndTheNextCommitIsAKeptSnapshot() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        let owner = committing(first)
        try await withRunning([first.run, second.run]) {
            for push in 1...5 {
                try await owner.push(event: "tick", parameters: ["k\(push)": .int(Int64(push))], for: "u")
            }
            _ = try await query(
                endpoint,
                """
                UPDATE ck_session_changes SET body = '{"format":1,' WHERE user_id = 'u' AND version = 4
                RETURNING version
                """,
                as: Int64.self
            )
            let stored = try #require(try await second.store.sessions.load(userID: "u"))
            #expect(stored.version == 5)
            #expect(stored.deltas == .max, "the next commit is a snapshot")
            #expect(stored.snapshot.model["k3"] == 3)
            #expect(stored.snapshot.model["k4"] == nil && stored.snapshot.model["k5"] == nil)
            #expect(second.store.statistics.unappliedSessionDeltas == 2, "the corrupt row and the one after it")

            let next = committing(second)
            try await next.push(event: "tick", parameters: ["k6": 6], for: "u")
            #expect(second.store.statistics.fencedSessions == 0)
            try await compactSessions(endpoint)
            #expect(try await query(endpoint, rowsOfU, as: String.self) == ["6:true"])
            let reloaded = try #require(try await first.store.sessions.load(userID: "u"))
            #expect(reloaded.snapshot == next.existingSession(for: "u")?.snapshot())
            #expect(reloaded.snapshot.model["k5"] == nil && reloaded.snapshot.model["k6"] == 6)
        }
    }

    /// With no readable snapshot there is no state to continue: the load finds no session, and the new one
    /// starts above the stored versions, so that its first snapshot is kept.
    @Test func aCorruptSnapshotRowGivesANewSessionAboveTheStoredVersions() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        let owner = committing(first)
        try await withRunning([first.run, second.run]) {
            for push in 1...3 { try await owner.push(event: "tick", parameters: ["k\(push)": true], for: "u") }
            _ = try await query(
                endpoint,
                "UPDATE ck_session_changes SET body = 'garbage' WHERE user_id = 'u' AND version = 1 RETURNING version",
                as: Int64.self
            )
            #expect(try await second.store.sessions.load(userID: "u") == nil)
            #expect(try await second.store.sessions.endedVersion(userID: "u") == 3)
            let next = committing(second)
            try await next.push(event: "tick", parameters: ["fresh": true], for: "u")
            #expect(second.store.statistics.fencedSessions == 0)
            #expect(second.store.statistics.unappliedSessionDeltas > 0)
            try await compactSessions(endpoint)
            #expect(try await query(endpoint, rowsOfU, as: String.self) == ["4:true"])
            let fresh = try #require(try await first.store.sessions.load(userID: "u"))
            #expect(fresh.version == 4)
            #expect(fresh.snapshot.model["fresh"] == true && fresh.snapshot.model["k3"] == nil)
        }
    }

    /// `ck_sessions` rows from before session deltas are moved into `ck_session_changes` as snapshot rows by the
    /// first store whose definitions are newer than the schema's: then loaded, continued with deltas (fenced
    /// against their version), and replaced by the user's next snapshot. A legacy row below a snapshot the user
    /// already has in the changes is dropped, not moved.
    @Test func legacySessionsRowsAreMovedIntoTheChangesAsSnapshotsAndContinuedWithDeltas() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let legacy = SessionSnapshot(
            sessionID: "u",
            model: ["plan": "gold", "cart": .object(["items": 2])],
            userProperties: ["tier": "a"],
            attributes: [brazeUserAttribute: .object(["external_id": "u"])],
            eventNumber: 7
        )
        let before = Instance(endpoint, name: "before") { $0.delivers = false }
        try await withRunning([before.run]) {
            #expect(try await before.store.sessions.load(userID: "u") == nil)  // creates the tables
            try await before.commit([], sessions: [stored("w", version: 9)])
        }
        // The rows a version before deltas left, under a schema whose mark is older than these definitions.
        _ = try await query(
            endpoint,
            """
            INSERT INTO ck_sessions (user_id, version, snapshot)
            VALUES ('u', 7, $json$\(legacy.jsonText)$json$), ('w', 5, '{}') RETURNING version
            """,
            as: Int64.self
        )
        try await execute(endpoint, "COMMENT ON TABLE ck_meta IS 'an older schema'")
        let first = Instance(endpoint, name: "first") { $0.delivers = false }
        let second = Instance(endpoint, name: "second") { $0.delivers = false }
        try await withRunning([first.run, second.run]) {
            let loaded = try await second.store.sessions.load(userID: "u")
            #expect(loaded?.snapshot == legacy && loaded?.version == 7 && loaded?.checkpointID == 0)
            #expect(try await query(endpoint, "SELECT count(*) FROM ck_sessions", as: Int64.self) == [0])
            #expect(try await query(endpoint, rowsOfU, as: String.self) == ["7:true"])
            #expect(
                try await query(
                    endpoint,
                    "SELECT version FROM ck_session_changes WHERE user_id = 'w'",
                    as: Int64.self
                ) == [9]
            )
            let owner = committing(second)
            #expect(try await owner.loadSession(for: "u").snapshot() == legacy)
            try await owner.push(event: "upgrade", parameters: ["plan": "platinum"], for: "u")
            #expect(try await query(endpoint, rowsOfU, as: String.self) == ["7:true", "8:false"])
            let continued = try #require(try await first.store.sessions.load(userID: "u"))
            #expect(continued.version == 8)
            #expect(continued.snapshot == owner.existingSession(for: "u")?.snapshot())
            // A delta from before the moved row's version is stale.
            let error = await #expect(throws: DurabilityError.self) {
                try await first.commit([], checkpoints: [delta("u", 7, "stale")])
            }
            #expect(error?.code == .superseded)
            // The 16th commit since the load is a snapshot: it replaces the moved row and the deltas.
            for push in 2...16 { try await owner.push(event: "tick", parameters: ["n": .int(Int64(push))], for: "u") }
            try await compactSessions(endpoint)
            #expect(try await query(endpoint, rowsOfU, as: String.self) == ["23:true"])
            #expect(
                try await first.store.sessions.load(userID: "u")?.snapshot
                    == owner.existingSession(for: "u")?.snapshot()
            )
        }
    }

    /// A removal names the version the ending session held: below the stored head it changes nothing (deleting
    /// the rows up to it would leave the newer deltas without their snapshot); at the head it deletes all of the
    /// user's rows.
    @Test func aRemovalBelowTheHeadKeepsTheChainAndOneAtTheHeadDeletesEveryRow() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let instance = Instance(endpoint) { $0.delivers = false }
        let persistence = instance.store.sessions
        try await withRunning([instance.run]) {
            try await instance.commit([], sessions: [stored("u", version: 1)])
            try await instance.commit([], checkpoints: [delta("u", 2, "a"), delta("u", 3, "b")])
            _ = try await persistence.save([.remove(userID: "u", version: 2)])
            #expect(try await query(endpoint, rowsOfU, as: String.self) == ["1:true", "2:false", "3:false"])
            #expect(try await persistence.load(userID: "u")?.snapshot.model.keys == ["a", "b"])

            _ = try await persistence.save([.remove(userID: "u", version: 3)])
            #expect(try await query(endpoint, "SELECT count(*) FROM ck_session_changes", as: Int64.self) == [0])
            #expect(try await persistence.load(userID: "u") == nil)
            #expect(try await persistence.endedVersion(userID: "u") == 0)
        }
    }
}

/// The user `u`'s session rows, as `version:snapshot`.
private let rowsOfU = "SELECT version || ':' || snapshot FROM ck_session_changes WHERE user_id = 'u' ORDER BY version"

/// The versions of user `u`'s session rows.
private let versionsOfU = "SELECT version FROM ck_session_changes WHERE user_id = 'u' ORDER BY version"

/// The session attribute the Braze provider keeps its user in (`BrazeTagProvider.userAttributeKey`).
private let brazeUserAttribute = "braze.user"

/// Names the session's Braze user as the Braze provider does (an alias first, the external id once known).
private func nameBrazeUser(_ session: DataLayer, known: Bool) {
    let user: Value = known ? .object(["external_id": .string(session.sessionID)]) : .object(["braze_id": "anon-1"])
    if session.attribute(brazeUserAttribute) != user { session.setAttribute(user, forKey: brazeUserAttribute) }
}

/// The parameters of push `push`: nested objects, a dotted key, now and then user properties and a new key.
private func songParameters(_ push: Int) -> ValueMap {
    var parameters: ValueMap = [
        "song": .object([
            "title": .string("take \(push)"), "artist": .object(["name": "Miles", "plays": .int(Int64(push))]),
        ]),
        "queue.length": .int(Int64(push % 4)),
    ]
    if push % 5 == 0 {
        parameters["gtm.userProperties"] = .object([
            "plan": push % 10 == 0 ? "pro" : "gold", "pushes": .int(Int64(push)),
        ])
    }
    if push % 7 == 0 { parameters["coupon\(push)"] = .string("c\(push)") }
    return parameters
}

/// A delta checkpoint of `userID` at `version` (from the version before) that sets `key`.
private func delta(_ userID: String, _ version: Int64, _ key: String) -> SessionCheckpoint {
    SessionCheckpoint(
        userID: userID,
        version: version,
        expected: version - 1,
        content: .delta(SessionDelta(sessionID: userID, model: [key: .int(version)], eventNumber: Int(version)))
    )
}

/// A session store on `instance` whose pushes commit their records and the session's checkpoint in one append.
private func committing(_ instance: Instance) -> SessionStore {
    SessionStore(
        tagManager: TagManager(logger: InMemoryLogger()),
        configuration: .init(
            persistence: instance.store.sessions,
            committer: RecordCommitter(instance.pipeline, keepsSessions: true)
        )
    )
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
