import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import Foundation
import Logging
import PostgresNIO
import Testing

@Suite(.timeLimit(.minutes(2)))
struct PostgresRecordStoreTests {
    @Test func appendsGatheredWhileNoCommitRunsShareOneTransaction() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let store = PostgresRecordStore(configuration: .init(endpoint: endpoint))
        var tickets: [UInt64] = []
        for index in 0..<200 {
            tickets.append(try store.append([makeRecord(user: "u\(index % 17)")], session: nil))
        }
        try await withRunning([{ try await store.run() }]) {
            try await store.waitUntilDurable(ticket: tickets.last!)
            for ticket in tickets { try await store.waitUntilDurable(ticket: ticket) }
        }
        #expect(store.statistics.commits == 1)
        #expect(store.statistics.committedRows == 200)
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [200])
    }

    @Test func recordsOfAUserGoToOnePartition() async throws {
        let records = (0..<20).map { _ in makeRecord(user: "same-user") }
        let partitions = Set(records.map { PostgresPartitioning.partition(of: $0, count: 16) })
        #expect(partitions.count == 1)
        let spread = Set((0..<200).map { PostgresPartitioning.partition(ofKey: "e:user-\($0)", count: 16) })
        #expect(spread.count == 16)
    }

    @Test func aCommitCutOffByALostConnectionAcknowledgesNothingAndTheStoreRecovers() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let availability = Reports<Bool>()
        var configuration = PostgresRecordStore.Configuration(endpoint: endpoint)
        configuration.healthInterval = .milliseconds(200)
        configuration.onAvailabilityChanged = { availability.report($0) }
        let store = PostgresRecordStore(configuration: configuration)
        try await withRunning([{ try await store.run() }]) {
            // Creates the tables and the user's row.
            _ = try await store.loadSession(userID: "u1")
            try await store.commit(
                [makeRecord(user: "u1")],
                session: .init(userID: "u1", snapshot: SessionSnapshot(sessionID: "s1"))
            )

            // Another connection holds the sessions table, so the writer's transaction stops in the middle.
            let blocker = try await PostgresConnection.connect(
                configuration: endpoint.connectionConfiguration,
                id: 99,
                logger: testLogger
            )
            try await blocker.query("BEGIN", logger: testLogger)
            try await blocker.query("LOCK TABLE ck_sessions IN EXCLUSIVE MODE", logger: testLogger)
            let ticket = try store.append(
                [makeRecord(user: "u1", event: "cut")],
                session: .init(userID: "u1", snapshot: SessionSnapshot(sessionID: "s1", eventNumber: 2))
            )
            // Waits (in the server, bounded) until the writer waits for the lock, then ends its backend.
            try await blocker.query(
                """
                DO $$ BEGIN
                  FOR i IN 1..3000 LOOP
                    EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
                                      AND application_name = 'containerkit-writer' AND wait_event_type = 'Lock');
                    PERFORM pg_sleep(0.01);
                  END LOOP;
                  PERFORM pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'containerkit-writer';
                END $$
                """,
                logger: testLogger
            )
            try await blocker.query("ROLLBACK", logger: testLogger)
            try await blocker.close()

            let error = await #expect(throws: PostgresStoreError.self) {
                try await store.waitUntilDurable(ticket: ticket)
            }
            #expect(error?.code == .commitFailed)
            let cut = try await query(
                endpoint,
                "SELECT count(*) FROM ck_records WHERE payload LIKE '%\"cut\"%'",
                as: Int64.self
            )
            #expect(cut == [0])

            // It recovers by itself: the next commits go through once the store is available again.
            while !store.isAvailable { _ = await availability.next() }
            _ = try await store.loadSession(userID: "u1")
            try await store.commit(
                [makeRecord(user: "u1", event: "after")],
                session: .init(userID: "u1", snapshot: SessionSnapshot(sessionID: "s1", eventNumber: 2))
            )
        }
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [2])
        #expect(try await query(endpoint, "SELECT version FROM ck_sessions", as: Int64.self) == [2])
    }

    @Test func rotationDropsOnlyGenerationsWhoseRowsAreAllAcknowledged() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        var configuration = PostgresRecordStore.Configuration(endpoint: endpoint)
        configuration.partitions = 4
        configuration.rotationInterval = .seconds(3600)
        let store = PostgresRecordStore(configuration: configuration)
        let destination = RecordingDestination()
        let acknowledged = Reports<Int>()
        var deliveryConfiguration = PostgresDelivery.Configuration(endpoint: endpoint, instanceName: "a")
        deliveryConfiguration.partitions = 4
        deliveryConfiguration.pollInterval = .milliseconds(20)
        deliveryConfiguration.onAcknowledged = { _, records in acknowledged.report(records.count) }
        let delivery = PostgresDelivery(configuration: deliveryConfiguration, destination: destination)
        let tables = "SELECT count(*) FROM pg_inherits WHERE inhparent = 'ck_records'::regclass"

        try await withRunning([{ try await store.run() }]) {
            try await store.commit((0..<40).map { makeRecord(user: "u\($0)") }, session: nil)
            try await store.rotate()  // generation 2 starts; generation 1 is not acknowledged yet
            try await store.rotate()
            #expect(try await query(endpoint, tables, as: Int64.self) == [2])
            #expect(store.statistics.droppedGenerations == 0)

            try await withRunning([{ try await delivery.run() }]) {
                var count = 0
                while count < 40, let batch = await acknowledged.first(where: { _ in true }) { count += batch }
            }
            try await store.rotate()
            #expect(store.statistics.droppedGenerations == 1)
            #expect(try await query(endpoint, tables, as: Int64.self) == [1])
            // Rows leave with their table: nothing was ever deleted row by row.
            #expect(try await store.undeliveredRows() == 0)
        }
        #expect(Set(destination.records.map(\.id)).count == 40)
    }
}
