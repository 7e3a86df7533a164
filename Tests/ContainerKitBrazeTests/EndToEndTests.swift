import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

/// The production path of a Braze tag: a container live in a `TagManager`, the Braze tag provider, a
/// durable queue in a temporary directory and the `/users/track` sink, delivering to a `BrazeTestServer`.
/// Records get a fixed time, so the objects the server accepted can be compared whole.
private struct Pipeline {
    static let now = Date(timeIntervalSince1970: 1_714_564_800.123)
    static let nowText: Value = "2024-05-01T12:00:00.123Z"

    let server: BrazeTestServer
    let braze: BrazeUsersTrackDestination
    let queue: DeliveryPipeline<SegmentRecordStore>
    let running: Task<Void, Never>
    let directory = TemporaryDirectory("end-to-end")
    let logger = InMemoryLogger()
    let manager: TagManager

    init(container: URL) async throws {
        server = try BrazeTestServer(apiKey: "test-rest-api-key")
        braze = BrazeUsersTrackDestination(endpoint: server.endpoint, apiKey: "test-rest-api-key")
        var settings = DeliverySettings()
        settings.logger = logger
        let queue = try DeliveryPipeline.durable(directory: directory.path, destination: braze, settings: settings)
        self.queue = queue
        // Test scaffolding: the queue runs beside the test until `close()` shuts it down (it drains).
        running = Task { try? await queue.run() }
        manager = TagManager(logger: logger)
        manager.add(try await ContainerLoader().load(path: container.path))
        BrazeTagProvider(sink: queue, clock: { Pipeline.now }).register(on: manager)
    }

    /// Every object the server accepted, of every kind.
    var acceptedObjects: [Value] {
        server.acceptedAttributes + server.acceptedEvents + server.acceptedPurchases
    }

    func close() async {
        queue.gracefulShutdown()
        await running.value
        server.stop()
        directory.remove()
    }

    /// Runs `body` with a pipeline for `container`, closing it afterwards even if `body` throws.
    static func with(_ container: URL, _ body: (Pipeline) async throws -> Void) async throws {
        let pipeline = try await Pipeline(container: container)
        do {
            try await body(pipeline)
        } catch {
            await pipeline.close()
            throw error
        }
        await pipeline.close()
    }
}

@Suite struct EndToEndTests {
    /// The corpus's Braze sample container (Braze's Android SDK sample app), when the corpus is present.
    static let brazeSample: URL? = {
        guard let corpus = Fixtures.corpusDirectory else { return nil }
        let url = corpus.appendingPathComponent("v5-mobile/Appboy__appboy-android-sdk__GTM-5HM9ZRX.json")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }()

    @Test(.enabled(if: EndToEndTests.brazeSample != nil, Fixtures.corpusMissing))
    func theBrazeSampleContainerDeliversOneTypedCustomEventThroughTheDurableQueue() async throws {
        try await Pipeline.with(try #require(Self.brazeSample)) { pipeline in
            let session = pipeline.manager.makeDataLayer()
            BrazeTagProvider.setUser(.brazeID("b-device-1"), on: session)
            await session.push(
                event: "logEvent",
                parameters: [
                    "eventName": "played song", "boolParam": true, "doubleParam": 2.5, "intParam": 3,
                    "stringParam": "jazz",
                ]
            )
            try await pipeline.queue.flush()

            let server = pipeline.server
            #expect(
                server.acceptedEvents == [
                    [
                        "braze_id": "b-device-1", "name": "played song", "time": Pipeline.nowText,
                        "properties": [
                            "boolParam": .bool(true), "doubleParam": .double(2.5), "intParam": .int(3),
                            "stringParam": .string("jazz"),
                        ],
                    ]
                ]
            )
            #expect(server.acceptedAttributes.isEmpty && server.acceptedPurchases.isEmpty)
            #expect(server.requests.map(\.status) == [201])
            #expect(server.requests.first?.authorization == "Bearer test-rest-api-key")
            #expect(server.violations.isEmpty, "\(server.violations)")
            let statistics = pipeline.queue.statistics
            #expect(statistics.durableRecords == 1 && statistics.deliveredRecords == 1)
            #expect(pipeline.logger.messages(at: .warning).isEmpty, "\(pipeline.logger.entries)")
        }
    }

    @Test func theMusicSessionReachesBrazeAsAttributesEventsAndPurchasesOfTheLoggedInUser() async throws {
        let containers = Fixtures.containersDirectory
        let lines = try String(
            contentsOf: containers.appendingPathComponent("events/music-session.jsonl"),
            encoding: .utf8
        )
        .split(separator: "\n")
        try await Pipeline.with(containers.appendingPathComponent("GTM-MUSIC01.json")) { pipeline in
            let session = pipeline.manager.makeDataLayer(context: ClientContext(appID: "com.example.music"))
            BrazeTagProvider.setUser(.brazeID("b-device-1"), on: session)
            for line in lines {
                let message = try #require(try Value(json: String(line)).objectValue)
                await session.push(message)
            }
            try await pipeline.queue.flush()

            let server = pipeline.server
            // login: changeUser creates the identified profile.
            // genre selected: the favorite_genre custom attribute.
            #expect(
                server.acceptedAttributes == [
                    ["external_id": "user-42"],
                    ["external_id": "user-42", "favorite_genre": "jazz"],
                ]
            )
            // Only the first song fires: the second is too short, the third is a test tone.
            #expect(
                server.acceptedEvents == [
                    [
                        "external_id": "user-42", "name": "played song", "time": Pipeline.nowText,
                        "properties": [
                            "title": "So What", "genre": "jazz", "duration": .int(545), "genre_family": "instrumental",
                            "app": "app:com.example.music",
                        ],
                    ]
                ]
            )
            #expect(
                server.acceptedPurchases == [
                    [
                        "external_id": "user-42", "product_id": "premium-month", "currency": "USD",
                        "price": .double(9.99), "quantity": .int(1), "time": Pipeline.nowText,
                        "properties": ["plan": "premium (month)"],
                    ]
                ]
            )
            #expect(pipeline.acceptedObjects.allSatisfy { $0.objectValue?["external_id"] == "user-42" })
            #expect(pipeline.acceptedObjects.allSatisfy { $0.objectValue?["braze_id"] == nil })
            #expect(server.requests.allSatisfy { $0.status == 201 })
            #expect(server.violations.isEmpty, "\(server.violations)")
            let statistics = pipeline.queue.statistics
            #expect(statistics.durableRecords == 4 && statistics.deliveredRecords == 4)
            #expect(BrazeTagProvider.user(of: session) == .externalID("user-42"))
        }
    }
}
