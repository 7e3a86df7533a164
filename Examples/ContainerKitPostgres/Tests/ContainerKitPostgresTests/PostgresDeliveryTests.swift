import ContainerKit
import ContainerKitDelivery
import PostgresNIO
import PostgresTestHarness
import Testing

@testable import ContainerKitPostgres

@Suite(.timeLimit(.minutes(2)))
struct PostgresDeliveryTests {
    @Test func everyCommittedBatchIsDeliveredAndAcknowledgedExactlyOnce() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let destination = RecordingDestination(batchSize: 7)
        let instance = Instance(endpoint, destination: destination)
        var committed: [AnalyticsRecord] = []
        try await withRunning([instance.run]) {
            for round in 0..<30 {
                let records = (0..<5).map { makeRecord(user: "user-\(($0 + round) % 11)", event: "e\(round)") }
                committed += records
                try await instance.commit(records)
            }
            await destination.waitForDelivery(of: Set(committed.map(\.id)))
            try await instance.pipeline.flush()
            #expect(try await instance.store.undeliveredRows() == 0)
        }
        // Each record was sent once, and each batch acknowledged once: the cursors count every row once.
        #expect(destination.records.count == committed.count)
        #expect(Set(destination.records.map(\.id)) == Set(committed.map(\.id)))
        let acknowledgedRows = try await query(
            endpoint,
            "SELECT sum(acknowledged)::bigint FROM ck_cursors",
            as: Int64.self
        )
        #expect(acknowledgedRows == [Int64(committed.count)])
        #expect(instance.store.statistics.acknowledgedRows == committed.count)
        #expect(instance.pipeline.statistics.deliveredRecords == committed.count)
        // A user's records arrive in the order they were committed.
        let user3 = destination.records.filter { $0.user == .externalID("user-3") }.map(\.id)
        #expect(user3 == committed.filter { $0.user == .externalID("user-3") }.map(\.id))
    }

    /// A record committed while an older transaction still runs (another instance's commit, an `ANALYZE`) cannot
    /// be delivered before that transaction ends: a row it commits later may sort before it. A flush meanwhile
    /// waits for the record (the reader reads again) instead of ending with it committed and unread.
    @Test func aFlushWaitsForARecordCommittedBehindATransactionStillRunning() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let destination = RecordingDestination()
        let behind = Reports<Void>()
        let instance = Instance(endpoint, destination: destination) { configuration in
            configuration.onRowsBehindHorizon = { behind.report(()) }
        }
        try await withRunning([instance.run]) {
            let early = makeRecord(user: "early")
            try await instance.commit([early])
            await destination.waitForDelivery(of: [early.id])

            // An older transaction with an id of its own, still open.
            let blocker = try await beginTransaction(endpoint, id: 67)
            try await blocker.query("SELECT pg_current_xact_id()", logger: testLogger)
            let late = makeRecord(user: "late")
            try await instance.commit([late])
            async let flushed: Void = instance.pipeline.flush()
            await behind.next()
            try await blocker.query("ROLLBACK", logger: testLogger)
            try await blocker.close()
            try await flushed
            #expect(destination.records.map(\.id).contains(late.id), "the flush ended before the record was delivered")
            #expect(try await instance.store.undeliveredRows() == 0)
        }
    }

    /// An instance that has not checked its leases yet holds no partition because it has not looked, not because
    /// other instances hold them: a flush then waits for that first check and delivers what was committed, instead
    /// of ending at once with the records unread.
    @Test func aFlushBeforeTheFirstLeaseCheckWaitsForItAndDeliversWhatWasCommitted() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let destination = RecordingDestination()
        let instance = Instance(endpoint, destination: destination)
        // The members' lock held exclusively: the instance's lease connection cannot join, so cannot check its
        // leases, until this transaction ends.
        let blocker = try await beginTransaction(endpoint, id: 68)
        let namespace = instance.store.configuration.lockNamespace
        try await blocker.query(
            "SELECT pg_advisory_xact_lock(\(namespace), \(PostgresSchema.memberLockKey))",
            logger: testLogger
        )
        try await withRunning([instance.run]) {
            let records = (0..<5).map { makeRecord(user: "u\($0)") }
            try await instance.commit(records)
            // What has arrived when the flush returns.
            @Sendable func flushed() async throws -> Int {
                try await instance.pipeline.flush()
                return destination.records.count
            }
            async let deliveredAtFlush = flushed()
            try await blocker.query("ROLLBACK", logger: testLogger)
            try await blocker.close()
            #expect(try await deliveredAtFlush == records.count, "the flush ended before the first lease check")
        }
    }

    @Test func recordsAnotherInstanceCommittedAreDeliveredByTheLeaseHolder() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let destination = RecordingDestination()
        let writer = Instance(endpoint, name: "writer") { $0.delivers = false }
        let deliverer = Instance(endpoint, name: "deliverer", destination: destination)
        try await withRunning([writer.run, deliverer.run]) {
            let records = (0..<25).map { makeRecord(user: "u\($0)") }
            try await writer.commit(records)
            await destination.waitForDelivery(of: Set(records.map(\.id)))
        }
        #expect(destination.records.count == 25)
    }

    @Test func aDeadInstancesPartitionsAreTakenOver() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let leasesA = Reports<[Int]>()
        let leasesB = Reports<[Int]>()
        let destination = RecordingDestination()
        let a = Instance(endpoint, name: "a", destination: destination) { $0.onLeasesChanged = { leasesA.report($0) } }
        let b = Instance(endpoint, name: "b", destination: destination) { $0.onLeasesChanged = { leasesB.report($0) } }
        let runA = Task { try await a.pipeline.run() }
        #expect(await leasesA.first { $0.count == 4 } == [0, 1, 2, 3])
        try await withRunning([b.run]) {
            // B joins: A gives back half, B takes it.
            _ = await leasesB.first { $0.count == 2 }
            #expect(a.store.leasedPartitions.count + b.store.leasedPartitions.count <= 4)
            // A dies: its connections close and its leases with them.
            runA.cancel()
            _ = await runA.result
            #expect(await leasesB.first { $0.count == 4 } == [0, 1, 2, 3])
            let records = (0..<12).map { makeRecord(user: "u\($0)") }
            try await b.commit(records)
            await destination.waitForDelivery(of: Set(records.map(\.id)))
        }
    }

    @Test func deliveryResumesAfterPostgresRestartsWithoutLosingCommittedRecords() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let endpoint = try PostgresEndpoint(url: try await cluster.createDatabase())
        let availability = Reports<Bool>()
        let destination = RecordingDestination()
        let instance = Instance(endpoint, destination: destination) { configuration in
            configuration.healthInterval = .milliseconds(200)
            configuration.onAvailabilityChanged = { availability.report($0) }
        }
        var committed: Set<String> = []
        try await withRunning([instance.run]) {
            let before = (0..<20).map { makeRecord(user: "u\($0)") }
            try await instance.commit(before)
            committed.formUnion(before.map(\.id))

            try await cluster.crash()
            while instance.store.isAvailable { _ = await availability.next() }
            let refused = await #expect(throws: DurabilityError.self) {
                try await instance.commit([makeRecord(user: "lost")])
            }
            #expect(refused?.code == .unavailable)

            try await cluster.startServer()
            while !instance.store.isAvailable { _ = await availability.next() }
            let after = (0..<20).map { makeRecord(user: "v\($0)") }
            try await instance.commit(after)
            committed.formUnion(after.map(\.id))
            await destination.waitForDelivery(of: committed)
        }
        #expect(!destination.records.contains { $0.user == .externalID("lost") })
    }
}
