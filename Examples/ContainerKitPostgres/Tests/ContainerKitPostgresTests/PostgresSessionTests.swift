import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import Testing

@Suite(.timeLimit(.minutes(2)))
struct PostgresSessionTests {
    @Test func aSessionIsLoadedOnAMissFromWhatAnotherInstanceCommitted() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let first = PostgresRecordStore(configuration: .init(endpoint: endpoint))
        let second = PostgresRecordStore(configuration: .init(endpoint: endpoint))
        let snapshot = SessionSnapshot(
            sessionID: "s",
            model: ["plan": "gold"],
            firedOncePerLoad: ["welcome"],
            eventNumber: 7
        )
        try await withRunning([{ try await first.run() }, { try await second.run() }]) {
            #expect(try await first.loadSession(userID: "u") == nil)
            try await first.commit([makeRecord(user: "u")], session: .init(userID: "u", snapshot: snapshot))
            #expect(try await second.loadSession(userID: "u") == snapshot)
        }
    }

    @Test func aStaleOwnersWriteIsRefusedAndNothingOfItIsCommitted() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let invalidated = Reports<[String]>()
        var staleConfiguration = PostgresRecordStore.Configuration(endpoint: endpoint)
        staleConfiguration.onSessionsInvalidated = { invalidated.report($0) }
        let stale = PostgresRecordStore(configuration: staleConfiguration)
        let owner = PostgresRecordStore(configuration: .init(endpoint: endpoint))
        try await withRunning([{ try await stale.run() }, { try await owner.run() }]) {
            _ = try await stale.loadSession(userID: "u")
            try await stale.commit(
                [makeRecord(user: "u", event: "one")],
                session: .init(userID: "u", snapshot: SessionSnapshot(sessionID: "s", eventNumber: 1))
            )
            // The user moved: the new owner loads version 1 and writes version 2.
            _ = try await owner.loadSession(userID: "u")
            try await owner.commit(
                [makeRecord(user: "u", event: "two")],
                session: .init(userID: "u", snapshot: SessionSnapshot(sessionID: "s", eventNumber: 2))
            )
            // The old owner still believes version 1 is the latest.
            let error = await #expect(throws: PostgresStoreError.self) {
                try await stale.commit(
                    [makeRecord(user: "u", event: "stale")],
                    session: .init(userID: "u", snapshot: SessionSnapshot(sessionID: "s", eventNumber: 2))
                )
            }
            #expect(error?.code == .fenced)
            #expect(await invalidated.first { $0.contains("u") } == ["u"])
            // A user it never loaded cannot be overwritten either.
            let blind = await #expect(throws: PostgresStoreError.self) {
                try await owner.commit(
                    [],
                    session: .init(userID: "u-seen-elsewhere", snapshot: SessionSnapshot(sessionID: "x"))
                )
                try await stale.commit(
                    [],
                    session: .init(userID: "u-seen-elsewhere", snapshot: SessionSnapshot(sessionID: "y"))
                )
            }
            #expect(blind?.code == .fenced)
            // After loading again, the old owner continues from the newest state.
            let reloaded = try await stale.loadSession(userID: "u")
            #expect(reloaded?.eventNumber == 2)
            try await stale.commit(
                [makeRecord(user: "u", event: "three")],
                session: .init(userID: "u", snapshot: SessionSnapshot(sessionID: "s", eventNumber: 3))
            )
        }
        let events = try await query(
            endpoint,
            "SELECT payload FROM ck_records ORDER BY xid, seq",
            as: String.self
        )
        #expect(events.map { $0.contains("\"stale\"") } == [false, false, false])
        #expect(try await query(endpoint, "SELECT version FROM ck_sessions WHERE user_id = 'u'", as: Int64.self) == [3])
    }
}
