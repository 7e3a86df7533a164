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
        let instance = Instance(endpoint) { $0.delivers = false }
        var tickets: [UInt64] = []
        for index in 0..<200 {
            tickets.append(try instance.pipeline.append(EncodedRecords([makeRecord(user: "u\(index % 17)")])).ticket)
        }
        try await withRunning([instance.run]) {
            try await instance.pipeline.waitUntilDurable(tickets: tickets)
        }
        #expect(instance.store.statistics.commits == 1)
        #expect(instance.store.statistics.roundTrips == 2, "one call of ck_commit_group, one answer after its commit")
        #expect(instance.store.statistics.committedRows == 200)
        #expect(instance.pipeline.statistics.commits == 1)
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [200])
    }

    /// With a long commit delay, a lone append still commits at once; after a commit during which an append
    /// arrived, the writer waits for more only while they keep coming (here none: a tick, not the delay), and
    /// not at all once the gather target waits already.
    @Test func aWriterGathersOnlyWhileAppendsKeepArriving() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let instance = Instance(endpoint) { configuration in
            configuration.delivers = false
            configuration.commitDelay = .seconds(5)
            configuration.gatherTarget = 4
        }
        try await withRunning([instance.run]) {
            try await instance.commit([makeRecord(user: "first")])
            var started = ContinuousClock.now
            for index in 0..<3 { try await instance.commit([makeRecord(user: "lone-\(index)")]) }
            #expect(ContinuousClock.now - started < .seconds(2), "lone appends never wait for the delay")

            for arriving in [1, 4] {
                // A commit held up by a lock; `arriving` appends come while it waits.
                let blocker = try await beginTransaction(endpoint, id: 66)
                try await blocker.query("LOCK TABLE ck_records IN EXCLUSIVE MODE", logger: testLogger)
                let held = try instance.pipeline.append(EncodedRecords([makeRecord(user: "held")]))
                try await blocker.query(
                    """
                    DO $$ BEGIN
                      FOR i IN 1..3000 LOOP
                        EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
                            AND wait_event_type = 'Lock' AND query LIKE '%ck_commit_group%');
                        PERFORM pg_sleep(0.01);
                        PERFORM pg_stat_clear_snapshot();
                      END LOOP;
                    END $$
                    """,
                    logger: testLogger
                )
                let during = try (0..<arriving).map { index in
                    try instance.pipeline.append(EncodedRecords([makeRecord(user: "during-\(index)")])).ticket
                }
                started = ContinuousClock.now
                try await blocker.query("ROLLBACK", logger: testLogger)
                try await blocker.close()
                try await instance.pipeline.waitUntilDurable(ticket: held.ticket)
                try await instance.pipeline.waitUntilDurable(tickets: during)
                #expect(ContinuousClock.now - started < .seconds(2), "\(arriving) arriving: no 5 s wait")
            }
        }
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [11])
    }

    /// The quiet gap that ends a gathering wait grows with the delay an operator sets (a raised delay is not cut
    /// short by the gaps between a busy machine's bursts), but never past 10 ms.
    @Test func theQuietGapThatEndsGatheringIsAQuarterOfTheDelayUpTo10Milliseconds() throws {
        var configuration = PostgresRecordStore.Configuration(
            endpoint: try PostgresEndpoint(url: "postgres://containerkit@127.0.0.1:5432/tags")
        )
        for (delay, tick): (Duration, Duration) in [
            (.milliseconds(2), .microseconds(500)), (.milliseconds(30), .microseconds(7_500)),
            (.milliseconds(60), .milliseconds(10)), (.seconds(5), .milliseconds(10)),
        ] {
            configuration.commitDelay = delay
            #expect(configuration.gatherTick == tick, "delay \(delay)")
        }
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
        let instance = Instance(endpoint) { configuration in
            configuration.delivers = false
            configuration.healthInterval = .milliseconds(200)
            configuration.onAvailabilityChanged = { availability.report($0) }
        }
        try await withRunning([instance.run]) {
            try await instance.commit([makeRecord(user: "u1")], sessions: [stored("u1", version: 1)])

            // Another connection holds the sessions table, so the writer's transaction stops in the middle.
            let blocker = try await beginTransaction(endpoint, id: 99)
            try await blocker.query("LOCK TABLE ck_session_changes IN EXCLUSIVE MODE", logger: testLogger)
            let token = try instance.pipeline.append(
                EncodedRecords(
                    [makeRecord(user: "u1", event: "cut")],
                    sessions: [SessionCheckpoint(stored("u1", event: 2, version: 2))]
                )
            )
            // Waits (in the server, bounded) until the writer waits for the lock, then ends its backend. (Within a
            // transaction `pg_stat_activity` is read once and kept: each round clears that snapshot, or a first read
            // made before the writer waited would be all the loop ever sees.)
            try await blocker.query(
                """
                DO $$ BEGIN
                  FOR i IN 1..3000 LOOP
                    EXIT WHEN EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
                                      AND application_name = 'containerkit a' AND wait_event_type = 'Lock'
                                      AND query LIKE '%ck_commit_group%');
                    PERFORM pg_sleep(0.01);
                    PERFORM pg_stat_clear_snapshot();
                  END LOOP;
                  PERFORM pg_terminate_backend(pid) FROM pg_stat_activity
                    WHERE datname = current_database() AND application_name = 'containerkit a';
                END $$
                """,
                logger: testLogger
            )
            try await blocker.query("ROLLBACK", logger: testLogger)
            try await blocker.close()

            let error = await #expect(throws: DurabilityError.self) {
                try await instance.pipeline.waitUntilDurable(ticket: token.ticket)
            }
            #expect(error?.code == .unavailable)
            let cut = try await query(
                endpoint,
                "SELECT count(*) FROM ck_records WHERE payload LIKE '%\"cut\"%'",
                as: Int64.self
            )
            #expect(cut == [0])

            // It recovers by itself: the next commits go through once the store is available again.
            while !instance.store.isAvailable { _ = await availability.next() }
            try await instance.commit(
                [makeRecord(user: "u1", event: "after")],
                sessions: [stored("u1", event: 2, version: 2)]
            )
        }
        #expect(try await query(endpoint, "SELECT count(*) FROM ck_records", as: Int64.self) == [2])
        try await compactSessions(endpoint)
        #expect(try await query(endpoint, "SELECT version FROM ck_session_changes", as: Int64.self) == [2])
    }

    @Test func rotationDropsOnlyGenerationsWhoseRowsAreAllAcknowledged() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let writer = Instance(endpoint, name: "writer") { configuration in
            configuration.delivers = false
            configuration.rotationInterval = .seconds(3600)
        }
        let destination = RecordingDestination()
        let deliverer = Instance(endpoint, name: "deliverer", destination: destination) {
            $0.rotationInterval = .seconds(3600)
        }
        let tables = "SELECT count(*) FROM pg_inherits WHERE inhparent = 'ck_records'::regclass"
        let records = (0..<40).map { makeRecord(user: "u\($0)") }
        try await withRunning([writer.run]) {
            try await writer.commit(records)
            try await writer.store.rotate()  // generation 2 starts; generation 1 is not acknowledged yet
            try await writer.store.rotate()
            #expect(try await query(endpoint, tables, as: Int64.self) == [2])
            #expect(writer.store.statistics.droppedGenerations == 0)
            #expect(try await writer.store.undeliveredRows() == 40)

            try await withRunning([deliverer.run]) {
                await destination.waitForDelivery(of: Set(records.map(\.id)))
                try await deliverer.pipeline.flush()
            }
            // Any one partition behind (its cursor before its last row): the generation is not drained, whatever
            // the other partitions say.
            let parts = try await query(endpoint, "SELECT DISTINCT part FROM ck_records ORDER BY part", as: Int32.self)
            #expect(parts.count > 1)
            // After delivery a partition's cursor is its last row; `back` rows before it leave that row undelivered.
            func moveCursor(of part: Int32, back: Int) async throws {
                try await execute(
                    endpoint,
                    """
                    UPDATE ck_cursors c SET xid = r.xid, seq = r.seq - \(back) FROM (SELECT xid, seq FROM ck_records
                    WHERE part = \(part) ORDER BY xid DESC, seq DESC LIMIT 1) r WHERE c.part = \(part)
                    """
                )
            }
            for part in parts {
                try await moveCursor(of: part, back: 1)
                #expect(try await writer.store.undeliveredRows() == 1, "partition \(part) behind")
                try await writer.store.rotate()
                #expect(writer.store.statistics.droppedGenerations == 0, "partition \(part) behind")
                try await moveCursor(of: part, back: 0)
            }
            try await writer.store.rotate()
            #expect(writer.store.statistics.droppedGenerations == 1)
            #expect(try await query(endpoint, tables, as: Int64.self) == [1])
            // Rows leave with their table: nothing was ever deleted row by row.
            #expect(try await writer.store.undeliveredRows() == 0)
        }
        #expect(Set(destination.records.map(\.id)).count == 40)
    }
}
