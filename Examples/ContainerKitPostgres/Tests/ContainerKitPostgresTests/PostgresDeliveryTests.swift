import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import PostgresTestHarness
import Testing

@Suite(.timeLimit(.minutes(2)))
struct PostgresDeliveryTests {
    private func deliveryConfiguration(
        _ endpoint: PostgresEndpoint,
        _ name: String,
        leases: Reports<[Int]>? = nil,
        acknowledged: Reports<[AnalyticsRecord]>? = nil
    ) -> PostgresDelivery.Configuration {
        var configuration = PostgresDelivery.Configuration(endpoint: endpoint, instanceName: name)
        configuration.partitions = 4
        configuration.pollInterval = .milliseconds(20)
        configuration.leaseInterval = .milliseconds(200)
        configuration.reconnectDelay = .milliseconds(200)
        if let leases { configuration.onLeasesChanged = { leases.report($0) } }
        if let acknowledged { configuration.onAcknowledged = { _, records in acknowledged.report(records) } }
        return configuration
    }

    private func storeConfiguration(_ endpoint: PostgresEndpoint) -> PostgresRecordStore.Configuration {
        var configuration = PostgresRecordStore.Configuration(endpoint: endpoint)
        configuration.partitions = 4
        return configuration
    }

    @Test func everyCommittedBatchIsDeliveredAndAcknowledgedExactlyOnce() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let store = PostgresRecordStore(configuration: storeConfiguration(endpoint))
        let destination = RecordingDestination(batchSize: 7)
        let acknowledged = Reports<[AnalyticsRecord]>()
        let delivery = PostgresDelivery(
            configuration: deliveryConfiguration(endpoint, "a", acknowledged: acknowledged),
            destination: destination
        )
        var committed: [AnalyticsRecord] = []
        try await withRunning([{ try await store.run() }, { try await delivery.run() }]) {
            for round in 0..<30 {
                let records = (0..<5).map { makeRecord(user: "user-\(($0 + round) % 11)", event: "e\(round)") }
                committed += records
                try await store.commit(records, session: nil)
            }
            var acknowledgedIDs: [String] = []
            while acknowledgedIDs.count < committed.count, let batch = await acknowledged.first(where: { _ in true }) {
                acknowledgedIDs += batch.map(\.id)
            }
            #expect(acknowledgedIDs.count == committed.count)
            #expect(Set(acknowledgedIDs) == Set(committed.map(\.id)))
            #expect(try await store.undeliveredRows() == 0)
        }
        #expect(destination.records.count == committed.count)
        #expect(Set(destination.records.map(\.id)).count == committed.count)
        let acknowledgedRows = try await query(
            endpoint,
            "SELECT sum(acknowledged)::bigint FROM ck_cursors",
            as: Int64.self
        )
        #expect(acknowledgedRows == [Int64(committed.count)])
        // A user's records arrive in the order they were committed.
        let user3 = destination.records.filter { $0.user == .externalID("user-3") }.map(\.id)
        #expect(user3 == committed.filter { $0.user == .externalID("user-3") }.map(\.id))
    }

    @Test func aDeadInstancesPartitionsAreTakenOver() async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let store = PostgresRecordStore(configuration: storeConfiguration(endpoint))
        let leasesA = Reports<[Int]>()
        let leasesB = Reports<[Int]>()
        let acknowledged = Reports<[AnalyticsRecord]>()
        let destination = RecordingDestination()
        let a = PostgresDelivery(
            configuration: deliveryConfiguration(endpoint, "a", leases: leasesA),
            destination: destination
        )
        let b = PostgresDelivery(
            configuration: deliveryConfiguration(endpoint, "b", leases: leasesB, acknowledged: acknowledged),
            destination: destination
        )
        try await withRunning([{ try await store.run() }]) {
            let runA = Task { try await a.run() }
            #expect(await leasesA.first { $0.count == 4 } == [0, 1, 2, 3])
            try await withRunning([{ try await b.run() }]) {
                // B joins: A gives back half, B takes it.
                _ = await leasesB.first { $0.count == 2 }
                #expect(a.leasedPartitions.count + b.leasedPartitions.count <= 4)
                // A dies: its connection closes and its leases with it.
                runA.cancel()
                _ = await runA.result
                #expect(await leasesB.first { $0.count == 4 } == [0, 1, 2, 3])
                let records = (0..<12).map { makeRecord(user: "u\($0)") }
                try await store.commit(records, session: nil)
                var seen = 0
                while seen < records.count, let batch = await acknowledged.first(where: { _ in true }) {
                    seen += batch.count
                }
                #expect(seen == records.count)
            }
        }
    }

    @Test func deliveryResumesAfterPostgresRestartsWithoutLosingCommittedRecords() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let endpoint = try PostgresEndpoint(url: try await cluster.createDatabase())
        let availability = Reports<Bool>()
        var configuration = storeConfiguration(endpoint)
        configuration.healthInterval = .milliseconds(200)
        configuration.onAvailabilityChanged = { availability.report($0) }
        let store = PostgresRecordStore(configuration: configuration)
        let acknowledged = Reports<[AnalyticsRecord]>()
        let destination = RecordingDestination()
        let delivery = PostgresDelivery(
            configuration: deliveryConfiguration(endpoint, "a", acknowledged: acknowledged),
            destination: destination
        )
        var committed: Set<String> = []
        try await withRunning([{ try await store.run() }, { try await delivery.run() }]) {
            let before = (0..<20).map { makeRecord(user: "u\($0)") }
            try await store.commit(before, session: nil)
            committed.formUnion(before.map(\.id))

            try await cluster.crash()
            while store.isAvailable { _ = await availability.next() }
            let refused = await #expect(throws: PostgresStoreError.self) {
                try await store.commit([makeRecord(user: "lost")], session: nil)
            }
            #expect(refused?.code == .unavailable || refused?.code == .commitFailed)

            try await cluster.startServer()
            while !store.isAvailable { _ = await availability.next() }
            let after = (0..<20).map { makeRecord(user: "v\($0)") }
            try await store.commit(after, session: nil)
            committed.formUnion(after.map(\.id))

            var delivered: Set<String> = []
            while !committed.isSubset(of: delivered), let batch = await acknowledged.first(where: { _ in true }) {
                delivered.formUnion(batch.map(\.id))
            }
            #expect(committed.isSubset(of: delivered))
        }
        #expect(!destination.records.contains { $0.user == .externalID("lost") })
    }
}
