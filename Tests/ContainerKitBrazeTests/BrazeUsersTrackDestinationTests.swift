import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

/// The settings a test may change: the destination's and its in-memory front's.
struct BrazeSettings {
    var objectLimit: BrazeUsersTrackDestination.ObjectLimit = .total(75)
    var requestTimeout: Duration = .seconds(3600)
    var maximumResponseBytes = 64 << 10
    var flushCount = 75
    var flushInterval: Duration = .seconds(3600)
    var retry = DeliveryRetryPolicy()
    var drainTimeout: Duration = .seconds(3600)
}

/// A Braze test server, a `/users/track` destination pointed at it and an in-memory front running in
/// front of it, with recorded (not real) retry sleeps, and request deadlines on a manual clock of their own.
final class BrazeFixture: Sendable {
    let server: BrazeTestServer
    let destination: BrazeUsersTrackDestination
    let sink: DeliveryPipeline<MemoryRecordStore>
    let clock = ManualClock.skippingShortSleeps()
    let deadlines = ManualClock()
    let logger = InMemoryLogger()
    private let running: Task<Void, Never>

    init(
        serverLimit: BrazeTestServer.ObjectLimit = .total(75),
        apiKey: String = "test-rest-api-key",
        adjust: (inout BrazeSettings) -> Void = { _ in }
    ) throws {
        server = try BrazeTestServer(apiKey: "test-rest-api-key", objectLimit: serverLimit)
        var settings = BrazeSettings()
        adjust(&settings)
        var destinationSettings = BrazeUsersTrackDestination.Configuration(
            objectLimit: settings.objectLimit,
            requestTimeout: settings.requestTimeout
        )
        destinationSettings.maximumResponseBytes = settings.maximumResponseBytes
        destination = BrazeUsersTrackDestination(
            endpoint: server.endpoint,
            apiKey: apiKey,
            configuration: destinationSettings,
            clock: deadlines
        )
        var delivery = DeliverySettings(
            retry: settings.retry,
            linger: settings.flushInterval,
            lingerCount: settings.flushCount,
            logger: logger
        )
        delivery.random = { 0.5 }
        delivery.drainTimeout = settings.drainTimeout
        let queue = DeliveryPipeline.inMemory(destination: destination, settings: delivery, clock: clock)
        sink = queue
        // Test scaffolding: the front runs beside the test until `close()` cancels (and so drains) it.
        running = Task { try? await queue.run() }
    }

    /// Shuts the front down gracefully (it drains) and waits for it; stops the server.
    func close() async {
        sink.gracefulShutdown()
        await running.value
        server.stop()
    }
}

extension DeliveryPipeline {
    /// Enqueues, ignoring a refusal (the statistics count it).
    func receive(_ records: [AnalyticsRecord]) { _ = try? enqueue(records) }
}

@Suite struct BrazeUsersTrackDestinationTests {
    static func mixedRecords(_ count: Int) -> [AnalyticsRecord] {
        (0..<count).map { i -> AnalyticsRecord in
            let user = UserIdentity.externalID("u-\(i % 7)")
            switch i % 3 {
            case 0: return event("e\(i)", user: user, ["i": .int(Int64(i)), "f": 0.5])
            case 1:
                return AnalyticsRecord(
                    user: user,
                    payload: .customAttribute(key: "level", operation: .set(.int(Int64(i))))
                )
            default:
                return AnalyticsRecord(
                    user: user,
                    payload: .purchase(productID: "p\(i)", currency: "USD", price: 1.25, quantity: 1, properties: [:])
                )
            }
        }
    }

    @Test func batchesAtMost75ObjectsPerRequestWithTheBearerKey() async throws {
        let fixture = try BrazeFixture()
        fixture.sink.receive(Self.mixedRecords(200))
        try await fixture.sink.flush()
        let requests = fixture.server.requests
        #expect(requests.map(\.objectCount) == [75, 75, 50])
        #expect(requests.allSatisfy { $0.status == 201 && $0.authorization == "Bearer test-rest-api-key" })
        #expect(fixture.server.violations.isEmpty, "\(fixture.server.violations)")
        #expect(fixture.server.acceptedObjectCount == 200)
        let firstEvent = try #require(fixture.server.acceptedEvents.first)
        #expect(
            firstEvent == [
                "external_id": "u-0", "name": "e0", "time": firstEvent.objectValue?["time"] ?? .null,
                "properties": ["i": 0, "f": 0.5],
            ]
        )
        let time = try #require(firstEvent.objectValue?["time"]?.stringValue)
        #expect(time.hasSuffix("Z") && time.count == 24)
        await fixture.close()
    }

    @Test func legacyModeAllows75OfEachKind() async throws {
        let fixture = try BrazeFixture(serverLimit: .legacy) { $0.objectLimit = .legacy }
        fixture.sink.receive(Self.mixedRecords(300))
        try await fixture.sink.flush()
        let requests = fixture.server.requests
        #expect(
            requests.allSatisfy { $0.attributes <= 75 && $0.events <= 75 && $0.purchases <= 75 && $0.status == 201 }
        )
        #expect(requests.map(\.objectCount) == [225, 75])
        #expect(fixture.server.violations.isEmpty, "\(fixture.server.violations)")
        #expect(fixture.server.acceptedObjectCount == 300)
        await fixture.close()
    }

    @Test func theTestServerRejectsOversizedRequests() async throws {
        let fixture = try BrazeFixture(serverLimit: .total(75)) { $0.objectLimit = .legacy }
        fixture.sink.receive(Self.mixedRecords(90))
        await #expect(throws: DeliveryError.self) { try await fixture.sink.flush() }
        #expect(fixture.server.requests.first?.status == 400)
        #expect(fixture.server.violations.first?.contains("the limit is 75") == true)
        await fixture.close()
    }

    @Test func mapsEveryRecordKindToBrazeObjects() async throws {
        let fixture = try BrazeFixture()
        let date = try #require(ISO8601Timestamp.date(from: "2020-01-02T03:04:05.006Z"))
        fixture.sink.receive([
            AnalyticsRecord(
                user: .brazeID("b-1"),
                payload: .changeUser(externalID: "u-1", previousUser: .brazeID("b-1"))
            ),
            AnalyticsRecord(
                user: .externalID("u-1"),
                payload: .customAttribute(key: "since", operation: .set(.date(date)))
            ),
            AnalyticsRecord(
                user: .externalID("u-1"),
                payload: .customAttribute(key: "logins", operation: .increment(3))
            ),
            AnalyticsRecord(
                user: .externalID("u-1"),
                payload: .customAttribute(key: "tags", operation: .addToArray(["a"]))
            ),
            AnalyticsRecord(
                user: .externalID("u-1"),
                payload: .customAttribute(key: "tags", operation: .removeFromArray(["b"]))
            ),
            AnalyticsRecord(user: .externalID("u-1"), payload: .userAttribute(.email, value: "ana@example.com")),
            AnalyticsRecord(
                user: .userAlias(name: "c-1", label: "cookie"),
                payload: .customEvent(name: "seen", properties: [:])
            ),
        ])
        try await fixture.sink.flush()
        #expect(fixture.server.violations.isEmpty, "\(fixture.server.violations)")
        #expect(
            fixture.server.acceptedAttributes == [
                ["external_id": "u-1"],
                ["external_id": "u-1", "since": "2020-01-02T03:04:05.006Z"],
                ["external_id": "u-1", "logins": ["inc": 3]],
                ["external_id": "u-1", "tags": ["add": ["a"]]],
                ["external_id": "u-1", "tags": ["remove": ["b"]]],
                ["external_id": "u-1", "email": "ana@example.com"],
            ]
        )
        let alias = try #require(fixture.server.acceptedEvents.first?.objectValue)
        #expect(alias["user_alias"] == ["alias_name": "c-1", "alias_label": "cookie"])
        #expect(alias["_update_existing_only"] == false)
        await fixture.close()
    }

    @Test func recordsWithoutIdentityAreDroppedWithAWarning() async throws {
        let fixture = try BrazeFixture()
        fixture.sink.receive([event("anonymous", user: nil), event("known")])
        await #expect(throws: DeliveryError.self) { try await fixture.sink.flush() }
        #expect(fixture.server.acceptedEvents.count == 1)
        #expect(fixture.sink.statistics.rejectedRecords == 1)
        #expect(fixture.destination.statistics.rejectedRecords == 1)
        #expect(
            fixture.logger.entries.contains {
                $0.level == .error && $0.metadata["error"]?.contains("without a user identity") == true
            }
        )
        await fixture.close()
    }

    @Test func retriesServerErrorsWithJitteredBackoff() async throws {
        let fixture = try BrazeFixture()
        fixture.server.fail(next: 2, with: .serverError(status: 500))
        fixture.sink.receive((0..<10).map { event("e\($0)") })
        try await fixture.sink.flush()
        #expect(fixture.server.requests.map(\.status) == [500, 500, 201])
        #expect(fixture.clock.autoAdvancedSleeps == [.milliseconds(250), .milliseconds(500)])
        #expect(fixture.server.acceptedObjectCount == 10)
        #expect(fixture.sink.statistics.retries == 2)
        await fixture.close()
    }

    @Test func honoursRetryAfterOnRateLimits() async throws {
        let fixture = try BrazeFixture()
        fixture.server.fail(next: 1, with: .rateLimited(retryAfter: "7"))
        fixture.server.fail(next: 1, with: .rateLimited(retryAfter: nil))
        fixture.sink.receive([event("e")])
        try await fixture.sink.flush()
        #expect(fixture.server.requests.map(\.status) == [429, 429, 201])
        #expect(fixture.clock.autoAdvancedSleeps == [.seconds(7), .milliseconds(500)])
        await fixture.close()
    }

    @Test func retryAfterAcceptsSecondsAndHTTPDates() {
        let now = Date(timeIntervalSince1970: 784_111_777)  // Sun, 06 Nov 1994 08:49:37 GMT
        #expect(DeliveryRetryPolicy.retryAfterSeconds("120", now: now) == 120)
        #expect(DeliveryRetryPolicy.retryAfterSeconds("Sun, 06 Nov 1994 08:49:47 GMT", now: now) == 10)
        #expect(DeliveryRetryPolicy.retryAfterSeconds("soon", now: now) == nil)
    }

    @Test func otherClientErrorsAreDroppedWithBrazesMessage() async throws {
        let fixture = try BrazeFixture()
        fixture.server.fail(next: 1, with: .badRequest(message: "Invalid payload", errors: ["events[0] is bad"]))
        fixture.sink.receive((0..<3).map { event("e\($0)") })
        do {
            try await fixture.sink.flush()
            Issue.record("expected the flush to report the rejection")
        } catch let error as DeliveryError {
            #expect(error.code == .rejected)
            #expect(error.status == 400)
            #expect(error.message.contains("'Invalid payload'"))
        }
        #expect(fixture.server.requests.count == 1)
        #expect(fixture.clock.autoAdvancedSleeps.isEmpty)
        #expect(fixture.sink.statistics.rejectedRecords == 3)
        let logged = fixture.logger.entries.filter { $0.level == .error }
        #expect(
            logged.contains {
                $0.message == "the destination rejected records; they are dropped" && $0.metadata["status"] == "400"
                    && $0.metadata["error"]?.contains("'Invalid payload'") == true
                    && $0.metadata["error"]?.contains("events[0] is bad") == true
            }
        )
        fixture.sink.receive([event("next")])
        try await fixture.sink.flush()
        #expect(fixture.server.acceptedObjectCount == 1)
        await fixture.close()
    }

    @Test func aWrongKeyKeepsTheRecordsAndPausesDelivery() async throws {
        let fixture = try BrazeFixture(apiKey: "wrong") {
            $0.retry.maximumAttempts = 1
            $0.drainTimeout = .seconds(1)
            $0.flushCount = 1
        }
        fixture.sink.receive([event("e")])
        // A refusal of the request uses up no attempt: the records are offered again after the pause.
        await fixture.server.waitForRequests(2)
        #expect(fixture.server.requests.prefix(2).map(\.status) == [401, 401])
        #expect(fixture.sink.statistics.rejectedRecords == 0)
        #expect(fixture.clock.autoAdvancedSleeps.first == .seconds(60))
        #expect(
            fixture.logger.entries.contains {
                $0.level == .error && $0.metadata["status"] == "401" && $0.metadata["code"] == "request_refused"
                    && $0.metadata["error"]?.contains("Invalid API key") == true
            }
        )
        await fixture.close()
    }

    @Test(
        arguments: [
            (401, nil), (403, nil), (404, nil), (301, "https://rest.fra-01.braze.eu/users/track"),
            (302, "http://example.invalid/"), (307, nil),
        ] as [(Int, String?)]
    )
    func anAnswerThatRefusesTheRequestKeepsTheBacklog(status: Int, location: String?) async throws {
        let fixture = try BrazeFixture { $0.retry.maximumAttempts = 1 }
        fixture.server.fail(next: 2, with: .refuse(status: status, location: location))
        let records = (0..<3).map { event("e\($0)") }
        fixture.sink.receive(records)
        try await fixture.sink.flush()
        #expect(fixture.server.requests.prefix(2).map(\.status) == [status, status])
        #expect(fixture.server.acceptedObjectCount == 3)
        #expect(fixture.sink.statistics.rejectedRecords == 0)
        #expect(fixture.sink.statistics.droppedRecords == 0)
        #expect(fixture.destination.statistics.refusedRequests == 2)
        #expect(fixture.clock.autoAdvancedSleeps == [.seconds(60), .seconds(60)])
        #expect(
            fixture.logger.entries.contains {
                $0.level == .error && $0.message.contains("kept") && $0.metadata["status"] == String(status)
            }
        )
        await fixture.close()
    }

    @Test func givesUpAfterTheLastAttempt() async throws {
        let fixture = try BrazeFixture { $0.retry.maximumAttempts = 3 }
        fixture.server.fail(next: 3, with: .serverError(status: 503))
        fixture.sink.receive([event("e")])
        do {
            try await fixture.sink.flush()
            Issue.record("expected the flush to fail")
        } catch let error as DeliveryError {
            #expect(error.code == .retriesExhausted)
            #expect(error.status == 503)
        }
        #expect(fixture.server.requests.count == 3)
        await fixture.close()
    }

    @Test func retriesTimeoutsAndBrokenConnections() async throws {
        let fixture = try BrazeFixture { $0.requestTimeout = .seconds(3600) }
        fixture.server.fail(next: 1, with: .hang)
        fixture.server.fail(next: 1, with: .closeConnection)
        fixture.server.fail(next: 1, with: .garbage)
        fixture.sink.receive([event("e")])
        async let flushed: Void = fixture.sink.flush()
        // The first request hangs until its deadline, which passes on the fixture's manual clock.
        await fixture.server.waitForRequests(1)
        await fixture.deadlines.waitForSleepers(1)
        fixture.deadlines.advance(by: .seconds(3600))
        try await flushed
        #expect(fixture.server.acceptedObjectCount == 1)
        #expect(fixture.server.requests.count == 4)
        #expect(fixture.sink.statistics.retries >= 2)
        await fixture.close()
    }

    @Test func flushesWhenEnoughRecordsAreBuffered() async throws {
        let fixture = try BrazeFixture { $0.flushCount = 10 }
        fixture.sink.receive((0..<9).map { event("e\($0)") })
        fixture.sink.receive([event("e9")])
        await fixture.server.waitForAcceptedObjects(10)
        #expect(fixture.server.requests.count == 1)
        await fixture.close()
    }

    @Test func cancellingTheFrontDrainsTheBuffer() async throws {
        let fixture = try BrazeFixture { $0.flushCount = 1000 }
        fixture.sink.receive((0..<30).map { event("e\($0)") })
        await fixture.close()
        #expect(fixture.server.acceptedObjectCount == 30)
        #expect(throws: AnalyticsSinkError.self) { try fixture.sink.enqueue([event("late")]) }
        #expect(fixture.sink.statistics.droppedRecords == 1)
    }

    @Test func flushesOnTheIntervalOfTheInjectedClock() async throws {
        let server = try BrazeTestServer()
        defer { server.stop() }
        let clock = ManualClock()
        let queue = DeliveryPipeline.inMemory(
            destination: BrazeUsersTrackDestination(endpoint: server.endpoint, apiKey: server.apiKey),
            settings: DeliverySettings(linger: .seconds(10), lingerCount: 1000, logger: InMemoryLogger()),
            clock: clock
        )
        try await whileRunning(queue) {
            // The pipeline's first read (of what a store held before the run) has ended: records it found
            // would go out at once, without waiting for the interval.
            try await queue.flush()
            queue.receive((0..<3).map { event("e\($0)") })
            await clock.waitForSleepers(1)
            #expect(server.requests.isEmpty)
            clock.advance(by: .seconds(10))
            await server.waitForAcceptedObjects(3)
        }
        #expect(server.requests.count == 1)
    }

    @Test func anEndlessAnswerIsCutOffAtTheCapAndRetried() async throws {
        let calls = Mutex(0)
        let cap = 64 << 10
        // One byte more than the cap, then the connection stays open: the request can only end by the
        // client giving up at its cap (the deadline is out of reach), whatever the machine's speed.
        let server = try LoopbackHTTPServer { _ in
            let first = calls.withLock { calls -> Bool in
                calls += 1
                return calls == 1
            }
            return first ? .fault(.oversizedBody(cap + 1)) : .json(#"{"message":"success"}"#, status: 201)
        }
        defer { server.stop() }
        let destination = BrazeUsersTrackDestination(
            endpoint: server.baseURL,
            apiKey: "k",
            configuration: .init(requestTimeout: .seconds(3600))
        )
        #expect(destination.configuration.maximumResponseBytes == cap)
        let result = await destination.deliver([event("e")])
        #expect(result.retryable.count == 1)
        #expect(result.retryError?.code == .transport)
        #expect(result.retryError?.message.contains("larger than 65536 bytes") == true)
        let second = await destination.deliver([event("e")])
        #expect(second.accepted.count == 1)
    }

    @Test func anAnswerOfExactlyTheCapIsRead() async throws {
        let server = try LoopbackHTTPServer { _ in
            .json(#"{"message":"success"}"# + String(repeating: " ", count: 64 - 21), status: 201)
        }
        defer { server.stop() }
        var configuration = BrazeUsersTrackDestination.Configuration(requestTimeout: .seconds(3600))
        configuration.maximumResponseBytes = 64
        let destination = BrazeUsersTrackDestination(
            endpoint: server.baseURL,
            apiKey: "k",
            configuration: configuration
        )
        #expect(await destination.deliver([event("e")]).accepted.count == 1)
    }

    @Test func anEncodedAnswerIsRefusedAndRetried() async throws {
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPServer.Response(
                status: 201,
                headers: .init([("Content-Encoding", "gzip")]),
                body: Data([0x1f, 0x8b, 0x08, 0x00])
            )
        }
        defer { server.stop() }
        let destination = BrazeUsersTrackDestination(endpoint: server.baseURL, apiKey: "k")
        let result = await destination.deliver([event("e")])
        #expect(result.retryable.count == 1)
        #expect(result.retryError?.code == .transport)
        #expect(result.retryError?.message.contains("'gzip' encoded") == true)
        #expect(server.requestCount == 1)
    }

    @Test func aTricklingAnswerEndsAtTheRequestsOneDeadline() async throws {
        let server = try LoopbackHTTPServer { _ in .fault(.trickle(.milliseconds(100))) }
        defer { server.stop() }
        // The server sends a byte every 100 ms for ever: only the request's deadline, kept by the client's
        // I/O loop, ends it.
        let destination = BrazeUsersTrackDestination(
            endpoint: server.baseURL,
            apiKey: "k",
            configuration: .init(requestTimeout: .milliseconds(300))
        )
        let result = await destination.deliver([event("e")])
        #expect(result.retryable.count == 1)
        #expect(result.retryError?.code == .timeout)
    }

    @Test func aRunningDestinationKeepsItsConnectionAndStopsWithItsRun() async throws {
        let server = try BrazeTestServer()
        defer { server.stop() }
        let destination = BrazeUsersTrackDestination(endpoint: server.endpoint, apiKey: server.apiKey)
        var took = Duration.zero
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await destination.run() }
            await destination.started()
            let started = ContinuousClock.now
            for index in 0..<4 {
                #expect(await destination.deliver([event("e\(index)")]).accepted.count == 1)
            }
            took = ContinuousClock.now - started
            group.cancelAll()
        }
        #expect(server.requests.count == 4)
        // All four share the connection the first one opened. (Only if they took less than the pool's idle
        // timeout, 4 s, in all: a machine starved for longer between two of them rightly opens another.)
        if took < .seconds(4) { #expect(server.connectionCount == 1) }
    }

    @Test func durableQueueDeliversThroughBrazeAtLeastOnce() async throws {
        let fixture = try BrazeFixture()
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = DeliverySettings()
        settings.logger = InMemoryLogger()
        fixture.server.fail(next: 4, with: .serverError(status: 502))
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: fixture.destination,
            settings: settings,
            clock: ManualClock.skippingShortSleeps()
        )
        let records = Self.mixedRecords(100)
        try await whileRunning(queue) {
            try await queue.append(records)
            await fixture.server.waitForAcceptedObjects(100)
            try await queue.flushIgnoringRetries()
        }
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
        // One retry policy: the queue retried each failed request itself, nothing retried inside.
        #expect(queue.statistics.failedDeliveries == 4)
        #expect(fixture.server.requests.count == 4 + 2)
        #expect(fixture.server.violations.isEmpty)
        await fixture.close()
    }
}

extension DeliveryPipeline<SegmentRecordStore> {
    /// Flushes, starting over when a delivery failure interrupts the wait.
    func flushIgnoringRetries() async throws {
        while true {
            do {
                try await flush()
                return
            } catch is DeliveryError {
                continue
            }
        }
    }
}
