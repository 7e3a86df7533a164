import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// `withoutUser: .alias(label:)`: a session without a user sends its records for a user alias at once, and the push
/// that gives it an `external_id` adds an `identify` record, which goes to Braze's `/users/identify` after the
/// `/users/track` request of the alias's records — so that Braze merges an alias-only profile that holds them.
@Suite struct AliasIdentifyTests {
    static let label = "containerkit_session"

    static func manager(sink: any AnalyticsSink) async throws -> (TagManager, BrazeTagProvider) {
        try await PendingRecordsTests.manager(
            sink: sink,
            clock: PendingRecordsTests.WallClock(),
            configuration: .init(withoutUser: .alias(label: label))
        )
    }

    static func identify(_ externalID: String, alias: String, id: String = "i-1") -> AnalyticsRecord {
        AnalyticsRecord(
            id: id,
            user: nil,
            payload: .identify(externalID: externalID, aliasName: alias, aliasLabel: label)
        )
    }

    @Test func aLoginIdentifiesTheAliasAfterTheAliasRecordsAndOnlyOnce() async throws {
        let sink = InMemoryAnalyticsSink()
        let (manager, _) = try await Self.manager(sink: sink)
        let session = manager.makeDataLayer(sessionID: "cookie-9")
        let alias = UserIdentity.userAlias(name: "cookie-9", label: Self.label)
        await session.push(event: "played song", parameters: PendingRecordsTests.played("So What"))
        await session.push(event: "played song", parameters: PendingRecordsTests.played("Blue in Green"))
        #expect(BrazeTagProvider.aliasToIdentify(of: session) == alias)
        #expect(session.attribute("braze.alias") == alias.jsonValue, "saved with the session")

        let login = await session.push(event: "login", parameters: ["user_id": "ada"])
        #expect(sink.records.map(\.kind) == [.customEvent, .customEvent, .changeUser, .identify])
        #expect(sink.records.prefix(2).allSatisfy { $0.user == alias })
        let identify = try #require(sink.records.last)
        #expect(identify.payload == .identify(externalID: "ada", aliasName: "cookie-9", aliasLabel: Self.label))
        #expect(identify.user == .externalID("ada"))
        #expect(
            login.outputs.flatMap(\.records).compactMap { ($0 as? AnalyticsRecord)?.kind } == [.changeUser, .identify]
        )
        #expect(BrazeTagProvider.aliasToIdentify(of: session) == nil)
        #expect(session.attribute("braze.alias") == nil)

        // A later user is a change of user: nothing is identified again, nothing re-attributed.
        await session.push(event: "login", parameters: ["user_id": "bob"])
        #expect(sink.records.map(\.kind).suffix(1) == [.changeUser])
        #expect(sink.records.filter(\.isIdentify).count == 1)
    }

    @Test func theHostsSetUserIdentifiesTheAliasAtTheEndOfTheNextPush() async throws {
        let sink = InMemoryAnalyticsSink()
        let (manager, _) = try await Self.manager(sink: sink)
        let session = manager.makeDataLayer(sessionID: "cookie-3")
        await session.push(event: "played song", parameters: PendingRecordsTests.played("So What"))
        BrazeTagProvider.setUser(.brazeID("b-7"), on: session)
        await session.push(event: "page_view")
        #expect(sink.records.filter(\.isIdentify).isEmpty, "a braze_id cannot be identified: the alias waits")

        BrazeTagProvider.setUser(.externalID("ada"), on: session)
        let result = await session.push(event: "page_view")
        #expect(result.fired.isEmpty, "no tag fired; the end of the push identifies")
        #expect(
            sink.records.last?.payload == .identify(externalID: "ada", aliasName: "cookie-3", aliasLabel: Self.label)
        )
        #expect(result.outputs.flatMap(\.records).count == 1)
        #expect(BrazeTagProvider.aliasToIdentify(of: session) == nil)
    }

    @Test func theAliasToIdentifySurvivesASnapshotAndRestore() async throws {
        let sink = InMemoryAnalyticsSink()
        let (manager, _) = try await Self.manager(sink: sink)
        let session = manager.makeDataLayer(sessionID: "cookie-4")
        await session.push(event: "played song", parameters: PendingRecordsTests.played("So What"))
        let snapshot = session.snapshot()

        let (restoredManager, _) = try await Self.manager(sink: sink)
        let restored = restoredManager.restoreDataLayer(from: snapshot)
        #expect(BrazeTagProvider.aliasToIdentify(of: restored) == .userAlias(name: "cookie-4", label: Self.label))
        await restored.push(event: "login", parameters: ["user_id": "ada"])
        #expect(sink.records.map(\.kind) == [.customEvent, .changeUser, .identify])
    }

    @Test func identifyRecordsReadBackFromTheirJSON() throws {
        let record = Self.identify("ada", alias: "cookie-\"1\"")
        #expect(try AnalyticsRecord(jsonLine: record.jsonLine) == record)
        #expect(try AnalyticsRecord(jsonValue: record.jsonValue) == record)
        #expect(try Value(jsonBytes: Array(record.jsonLine.utf8)) == record.jsonValue)
        #expect(
            record.jsonValue.objectValue?["alias"] == [
                "alias_name": "cookie-\"1\"", "alias_label": .string(Self.label),
            ]
        )
        #expect(throws: AnalyticsRecordError.self) {
            try AnalyticsRecord(
                jsonLine: #"{"type":"identify","id":"i","time":"2024-05-01T12:00:00.000Z","external_id":"a"}"#
            )
        }
    }

    @Test func identifyRecordsAreUsersIdentifyRequestsBetweenTheTrackRequestsOfTheRecordsAround() throws {
        let alias = UserIdentity.userAlias(name: "cookie-1", label: Self.label)
        let records = [
            event("a", user: alias), event("b", user: alias), Self.identify("ada", alias: "cookie-1"),
            event("c", user: .externalID("ada")),
        ]
        let batcher = BrazeUsersTrackBatcher(limit: .total(75), createsAliasOnlyProfiles: true)
        let requests = batcher.requests(for: records).requests
        #expect(requests.map(\.endpoint) == [.track, .identify, .track])
        #expect(requests.map(\.records.count) == [2, 1, 1])
        let body = try Value(jsonBytes: requests[1].body)
        #expect(
            body
                == [
                    "aliases_to_identify": [
                        [
                            "external_id": "ada",
                            "user_alias": ["alias_name": "cookie-1", "alias_label": .string(Self.label)],
                        ]
                    ],
                    "merge_behavior": "merge",
                ]
        )
        // Braze takes at most 50 aliases a request.
        let many = (0..<51).map { Self.identify("u-\($0)", alias: "s-\($0)", id: "i-\($0)") }
        let split = batcher.requests(for: many).requests
        #expect(split.map(\.endpoint) == [.identify, .identify])
        #expect(split.map(\.aliases) == [50, 1])
    }

    @Test func theDestinationSendsTheIdentifyAfterTheTrackRequestAndHoldsItBackWhenThatFails() async throws {
        let server = try BrazeTestServer()
        defer { server.stop() }
        let braze = BrazeUsersTrackDestination(endpoint: server.endpoint, apiKey: "test-rest-api-key")
        let alias = UserIdentity.userAlias(name: "cookie-1", label: Self.label)
        let records = [event("a", user: alias), Self.identify("ada", alias: "cookie-1")]

        server.fail(next: 1, with: .serverError(status: 503))
        let failed = await braze.deliver(records)
        #expect(failed.retryable.map(\.id) == records.map(\.id), "the identify waits for the alias's records")
        #expect(server.requests.map(\.path) == ["/users/track"])

        let delivered = await braze.deliver(records)
        #expect(delivered.accepted.map(\.id) == records.map(\.id))
        #expect(server.requests.map(\.path) == ["/users/track", "/users/track", "/users/identify"])
        #expect(
            server.identifiedAliases == [
                ["external_id": "ada", "user_alias": ["alias_name": "cookie-1", "alias_label": .string(Self.label)]]
            ]
        )
        #expect(server.violations.isEmpty)
        #expect(braze.statistics.acceptedIdentifyRequests == 1)
    }

    @Test func aBatchWithAnIdentifyWaitsUntilTheBatchesBeforeItAreSettled() throws {
        typealias Machine = DeliveryPipelineMachine<Int, String>
        var machine = Machine(batchSize: 2, maximumInFlight: 3)
        try machine.start()
        #expect(machine.nextStep(now: .zero) == .read(after: nil, limit: 2))
        let first = DeliveryPipelineTests.deliveries(
            machine.readCompleted(StoredBatch(records: [event("a"), event("b")], end: 2))
        )
        #expect(machine.nextStep(now: .zero) == .read(after: 2, limit: 2))
        let held = machine.readCompleted(StoredBatch(records: [event("c"), Self.identify("ada", alias: "x")], end: 4))
        #expect(DeliveryPipelineTests.deliveries(held).isEmpty, "held while the first batch is out")
        #expect(machine.heldBack == 1)
        // A batch after it without an identify is not held.
        #expect(machine.nextStep(now: .zero) == .read(after: 4, limit: 2))
        let third = DeliveryPipelineTests.deliveries(machine.readCompleted(StoredBatch(records: [event("d")], end: 5)))
        #expect(third.count == 1)
        let released = machine.settled(id: try #require(first.first), error: nil)
        #expect(DeliveryPipelineTests.deliveries(released).count == 1, "handed out once the first is settled")
        #expect(machine.heldBack == 0)
    }

    /// The provider, a durable queue with four deliveries at once and the `/users/track` stand-in: the alias's
    /// events arrive before the identify of the alias, which arrives once.
    @Test func throughADurableQueueTheIdentifyArrivesOnceAfterTheAliasEvents() async throws {
        let standIn = try UsersTrackStandIn()
        let directory = TemporaryDirectory("alias-identify")
        defer { directory.remove() }
        var settings = DeliverySettings()
        settings.maximumConcurrentDeliveries = 4
        settings.batchSize = 1
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: BrazeUsersTrackDestination(
                endpoint: URL(string: "http://127.0.0.1:\(standIn.port)")!,
                apiKey: "test"
            ),
            settings: settings
        )
        let (manager, _) = try await Self.manager(sink: queue)
        let titles = (0..<6).map { "song-\($0)" }
        try await standIn.withRunning {
            let running = Task { try? await queue.run() }
            for user in ["cookie-1", "cookie-2"] {
                let session = manager.makeDataLayer(sessionID: user)
                for title in titles {
                    await session.push(event: "played song", parameters: PendingRecordsTests.played("\(user) \(title)"))
                }
                await session.push(event: "login", parameters: ["user_id": .string("user-of-\(user)")])
            }
            try await queue.flush()
            queue.gracefulShutdown()
            await running.value
        }
        let identifications = standIn.identifications
        #expect(identifications.map(\.aliasName) == ["cookie-1", "cookie-2"])
        #expect(identifications.map(\.externalID) == ["user-of-cookie-1", "user-of-cookie-2"])
        #expect(identifications.allSatisfy { $0.aliasLabel == Self.label && $0.mergeBehavior == "merge" })
        for identification in identifications {
            let own = Set(titles.map { "\(identification.aliasName) \($0)" })
            #expect(own.isSubset(of: identification.titlesBefore), "the alias's events arrived first")
        }
        #expect(standIn.deliveredTitles.count == 12)
        #expect(standIn.deliveredTitles.values.allSatisfy { $0 == 1 })
    }
}
