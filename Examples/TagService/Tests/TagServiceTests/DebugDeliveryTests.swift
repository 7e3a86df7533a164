import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

/// The delivery state of a followed user's records on the debug page: `queued` when the push is recorded, then
/// what the delivery pipeline's destination answers — without a browser (the hub and the observed destination).
struct DebugDeliveryTests {
    /// A traced push that sent records `ids` (durable) and held one (`held`, which is never delivered).
    static func trace(_ event: String, sent ids: [String], held: String? = nil) -> PushTrace {
        var records = ids.map {
            #"{"state":"sent","record_id":"\#($0)","record":{"id":"\#($0)"},"durability":"durable","from_push_hook":false}"#
        }
        if let held {
            records.append(
                #"{"state":"held","record_id":"\#(held)","record":{"id":"\#(held)"},"durability":"session","from_push_hook":false}"#
            )
        }
        return try! PushTrace(
            json:
                #"{"version":1,"session_id":"alice","event":"\#(event)","message":{},"outcome":"applied","changes":[],"evaluations":[],"records":[\#(records.joined(separator: ","))],"data_layer":{}}"#
        )
    }

    static func record(_ id: String) -> AnalyticsRecord {
        AnalyticsRecord(id: id, user: .externalID("alice"), payload: .customEvent(name: "played", properties: [:]))
    }

    /// The delivery state and reason of each record of the user's newest push.
    static func states(_ hub: DebugHub, _ user: String = "alice") -> [String: String] {
        var states: [String: String] = [:]
        for record in hub.pushes(of: user).first?.trace.records ?? [] {
            states[record.recordID ?? "?"] =
                (record.delivery?.rawValue ?? "none") + (record.deliveryReason.map { " (\($0))" } ?? "")
        }
        return states
    }

    @Test func aFollowedUsersRecordsAreQueuedThenDeliveredAndTheirPageIsTold() async throws {
        let hub = DebugHubTests.Fixture().hub
        let subscription = try hub.subscribe("alice", after: 0)
        var messages = subscription.messages.makeAsyncIterator()
        hub.record(Self.trace("played", sent: ["r1", "r2"], held: "h1"), userID: "alice", tracing: .followed)
        #expect(Self.states(hub) == ["r1": "queued", "r2": "queued", "h1": "none"])
        guard case .push = await messages.next() else {
            Issue.record("no push message")
            return
        }
        // The destination accepts r1 (and records of other users, which change nothing).
        hub.noteDelivery(.accepted([Self.record("r1"), Self.record("someone-else")]))
        #expect(Self.states(hub) == ["r1": "delivered", "r2": "queued", "h1": "none"])
        guard case .delivery(let entry) = await messages.next() else {
            Issue.record("no delivery message")
            return
        }
        #expect(entry.sequence == 1)
        #expect(entry.trace.records.first?.delivery == .delivered)
        let html = DebugPages.records(entry)
        #expect(html.hasPrefix(#"<div class="records" id="records-1">"#))
        #expect(html.contains(#"<span class="record-delivery delivery-delivered">delivered</span>"#))
        subscription.end()
    }

    @Test func aRetryShowsTheErrorAndARejectionItsReason() throws {
        let hub = DebugHubTests.Fixture().hub
        try hub.follow("alice")
        hub.record(Self.trace("played", sent: ["r1", "r2"]), userID: "alice", tracing: .followed)
        hub.noteDelivery(
            .retry(
                [Self.record("r1"), Self.record("r2")],
                DeliveryError(.serverError, "braze answered 503", status: 503)
            )
        )
        #expect(
            Self.states(hub) == [
                "r1": "retrying (server_error: braze answered 503 (HTTP 503))",
                "r2": "retrying (server_error: braze answered 503 (HTTP 503))",
            ]
        )
        hub.noteDelivery(
            DeliveryResult(
                accepted: [Self.record("r1")],
                rejected: [.init(records: [Self.record("r2")], error: DeliveryError(.rejected, "invalid attribute"))]
            )
        )
        #expect(Self.states(hub) == ["r1": "delivered", "r2": "rejected (rejected: invalid attribute)"])
        #expect(hub.deliveries.trackedCount == 0, "settled records are no longer tracked")
        // The trace's JSON carries the state, and its text too.
        let trace = try #require(hub.pushes(of: "alice").first?.trace)
        #expect(trace.json().contains(#""delivery":"rejected","delivery_reason":"rejected: invalid attribute""#))
        #expect(trace.textLines.contains { $0.hasSuffix("[durable, rejected: rejected: invalid attribute]") })
    }

    @Test func aRecordDeliveredBeforeItsPushIsRecordedShowsDelivered() throws {
        let hub = DebugHubTests.Fixture().hub
        try hub.follow("alice")
        // The pipeline can deliver between the commit and the push's answer: while the push is in flight.
        let tracing = try #require(hub.tracing(userID: "alice", headers: [:]))
        hub.noteDelivery(.accepted([Self.record("r1")]))
        hub.noteDelivery(.retry([Self.record("r2")], DeliveryError(.timeout, "slow")))
        hub.record(Self.trace("played", sent: ["r1", "r2", "r3"]), userID: "alice", tracing: tracing)
        hub.ended(tracing)
        #expect(Self.states(hub) == ["r1": "delivered", "r2": "retrying (timeout: slow)", "r3": "queued"])
        #expect(hub.deliveries.trackedCount == 2, "r2, retrying, and r3")
        hub.noteDelivery(.accepted([Self.record("r2"), Self.record("r3")]))
        #expect(Self.states(hub) == ["r1": "delivered", "r2": "delivered", "r3": "delivered"])
    }

    @Test func whileNoTracedPushIsInFlightTheOthersAnswersAreNotRemembered() throws {
        let hub = DebugHubTests.Fixture().hub
        try hub.follow("alice")
        hub.noteDelivery(.accepted([Self.record("bob-1"), Self.record("bob-2")]))
        #expect(hub.deliveries.rememberedCount == 0, "nothing tracked: the answer is not looked at")
        // While alice's push is in flight every answer is remembered: one of them may be of her push.
        let tracing = try #require(hub.tracing(userID: "alice", headers: [:]))
        #expect(hub.tracedPushesInFlight == 1)
        hub.noteDelivery(.accepted([Self.record("bob-3")]))
        #expect(hub.deliveries.rememberedCount == 1)
        hub.record(Self.trace("played", sent: ["r1"]), userID: "alice", tracing: tracing)
        hub.ended(tracing)
        #expect(hub.tracedPushesInFlight == 0)
        // r1 is tracked: an answer of a record on another bit of the filter, or on r1's (then looked up under the
        // lock), is still not remembered, and r1's own answer still reaches it.
        let bit = DebugFilterBit.index(of: "r1")
        let sameBit = try #require(
            (0...10_000).lazy.map { "bob-x\($0)" }.first { DebugFilterBit.index(of: $0) == bit }
        )
        let otherBit = try #require(
            (0...10_000).lazy.map { "bob-y\($0)" }.first { DebugFilterBit.index(of: $0) != bit }
        )
        hub.noteDelivery(.accepted([Self.record(otherBit)]))
        hub.noteDelivery(.accepted([Self.record(sameBit)]))
        #expect(hub.deliveries.rememberedCount == 1)
        #expect(Self.states(hub) == ["r1": "queued"])
        hub.noteDelivery(.accepted([Self.record(otherBit), Self.record("r1")]))
        #expect(Self.states(hub) == ["r1": "delivered"])
        #expect(hub.deliveries.trackedCount == 0)
        #expect(hub.deliveries.rememberedCount == 1)
    }

    @Test(.timeLimit(.minutes(1))) func theServicesTracedPushesEndAndTheirRecordsShowDelivered() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        fixture.configuration.debug.token = DebugHubTests.token
        fixture.configuration.debug.port = 0
        let service = try await fixture.make()
        let hub = try #require(service.debug)
        let page = try hub.subscribe("alice", after: 0)
        try await service.application.test(.router) { client in
            var messages = page.messages.makeAsyncIterator()
            // One event each (alice followed, bob not, carol through the debug header), then a batch of both.
            for (user, headers) in [("alice", HTTPFields.json), ("bob", .json), ("carol", .json)] {
                var headers = headers
                if user == "carol" { headers[DebugHub.header] = DebugHubTests.token }
                try await client.execute(
                    uri: "/v1/events",
                    method: .post,
                    headers: headers,
                    body: eventBody(user: user)
                ) { response in #expect(response.status == .ok) }
                #expect(hub.tracedPushesInFlight == 0, "\(user)'s push ended")
            }
            try await client.execute(
                uri: "/v1/batch",
                method: .post,
                headers: .json,
                body: batchBody([batchEvent(user: "alice", title: "a"), batchEvent(user: "bob", title: "b")])
            ) { response in #expect(response.status == .ok) }
            #expect(hub.tracedPushesInFlight == 0, "the batch's traced push ended")
            // Every record of alice's two pushes is shown delivered, whether answered before or after its push was
            // recorded (a page is told of each answer after).
            func allDelivered() -> Bool {
                let pushes = hub.pushes(of: "alice")
                return pushes.count == 2
                    && pushes.allSatisfy { push in
                        push.trace.records.filter { $0.delivery != nil }.allSatisfy { $0.delivery == .delivered }
                    }
            }
            while !allDelivered() {
                guard await messages.next() != nil else { break }
            }
            #expect(allDelivered())
            #expect(hub.pushes(of: "alice").allSatisfy { !$0.trace.records.isEmpty })
            #expect(hub.pushes(of: "bob").isEmpty)
            #expect(hub.pushes(of: "carol").count == 1)
        }
        page.end()
    }

    @Test func withNobodyFollowedAnAnswerIsNotLookedAt() throws {
        let hub = DebugHubTests.Fixture().hub
        hub.noteDelivery(.accepted([Self.record("r1")]))
        #expect(hub.deliveries.rememberedCount == 0)
        // Had the answer been looked at, r1 would be remembered and shown delivered now.
        try hub.follow("alice")
        hub.record(Self.trace("played", sent: ["r1"]), userID: "alice", tracing: .followed)
        #expect(Self.states(hub) == ["r1": "queued"])
    }

    @Test func theTrackedRecordsAreThoseOfTheKeptPushesOnly() throws {
        let hub = DebugHubTests.Fixture {
            $0.pushesPerUser = 3; $0.followGrace = .seconds(1)
        }.hub
        try hub.follow("alice")
        for index in 1...10 {
            hub.record(
                Self.trace("e\(index)", sent: ["r\(index)a", "r\(index)b"]),
                userID: "alice",
                tracing: .followed
            )
        }
        #expect(hub.deliveries.trackedCount == 6, "3 pushes kept, 2 records each")
        hub.noteDelivery(.accepted([Self.record("r1a")]))
        #expect(hub.pushes(of: "alice").allSatisfy { $0.trace.records.allSatisfy { $0.delivery == .queued } })
    }

    @Test func unfollowingForgetsTheUsersRecords() throws {
        let fixture = DebugHubTests.Fixture { $0.followGrace = .seconds(10) }
        try fixture.hub.follow("alice")
        fixture.hub.record(Self.trace("played", sent: ["r1"]), userID: "alice", tracing: .followed)
        #expect(fixture.hub.deliveries.trackedCount == 1)
        fixture.advance(.seconds(11))
        #expect(fixture.hub.sweep() == 1)
        #expect(fixture.hub.deliveries.trackedCount == 0)
    }

    @Test func aPageThatDoesNotReadIsDroppedAndNeverBlocksTheDelivery() async throws {
        let hub = DebugHubTests.Fixture { $0.pushesPerUser = 10 }.hub
        let subscription = try hub.subscribe("alice", after: 0)
        for index in 1...10 {
            hub.record(Self.trace("e\(index)", sent: ["r\(index)"]), userID: "alice", tracing: .followed)
        }
        // Nothing reads the stream: its buffer (26) fills, then it is finished; every call returns at once.
        for _ in 1...2 {
            for index in 1...10 {
                hub.noteDelivery(.retry([Self.record("r\(index)")], DeliveryError(.timeout, "slow")))
            }
        }
        hub.noteDelivery(.accepted((1...10).map { Self.record("r\($0)") }))
        var received = 0
        for await _ in subscription.messages { received += 1 }
        #expect(received == 26, "what its buffer held, then the stream ended")
        #expect(hub.openStreams == 0)
        #expect(Self.states(hub) == ["r10": "delivered"])
    }

    @Test func theObservedDestinationDeliversWhatItsDestinationDoes() async throws {
        let hub = DebugHubTests.Fixture().hub
        try hub.follow("alice")
        hub.record(Self.trace("played", sent: ["r1"]), userID: "alice", tracing: .followed)
        let memory = InMemoryAnalyticsSink()
        let destination = DebugObservedDestination.wrapping(memory, debug: hub)
        let result = await destination.deliver([Self.record("r1")], json: nil)
        #expect(result.accepted.map(\.id) == ["r1"])
        #expect(Self.states(hub) == ["r1": "delivered"])
        #expect(DebugObservedDestination.wrapping(memory, debug: nil) is InMemoryAnalyticsSink)
    }
}
