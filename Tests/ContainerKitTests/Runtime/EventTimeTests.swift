import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

/// A push may say when its event happened (a client's timestamp): the handlers its tags call see that time, a push
/// that says nothing (and a push a handler nests) happens now, and nothing else of the push changes.
struct EventTimeTests {
    static let happened = Date(timeIntervalSince1970: 1_700_000_000.25)

    /// A runtime whose one tag (class path `record`) fires on `purchase` and `nested`; the `purchase` call pushes
    /// `nested` from its handler.
    static func manager() throws -> (TagManager, RecordingHandler) {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(
            try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: #"[{"function": "__funct", "tag_id": 7, "vtp_classPath": "record"}]"#,
                predicates: #"[{"function": "_re", "arg0": ["macro", 0], "arg1": "^(purchase|nested)$"}]"#,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
        )
        let handler = RecordingHandler { call in
            if call.eventName == "purchase" { call.dataLayer.push(event: "nested") }
        }
        manager.register(tagHandler: handler, for: "record")
        return (manager, handler)
    }

    @Test func aHandlerSeesTheTimeItsPushGaveAndNowOtherwise() async throws {
        let (manager, handler) = try Self.manager()
        let session = manager.makeDataLayer()
        let timed = await session.push(event: "purchase", parameters: ["value": 1], eventTime: Self.happened)
        #expect(timed.fired.map(\.tagID) == [7, 7])
        await session.push(event: "purchase", parameters: ["value": 2])
        let calls = handler.calls
        #expect(calls.map(\.eventName) == ["purchase", "nested", "purchase", "nested"])
        #expect(calls.map(\.eventTime) == [Self.happened, nil, nil, nil])
        #expect(calls[0].arguments.isEmpty && session.model["value"] == 2)
    }

    @Test func aMessagePushGivesItsTimeToo() async throws {
        let (manager, handler) = try Self.manager()
        let session = manager.makeDataLayer()
        await session.push(["event": "purchase", "value": 3], eventTime: Self.happened)
        await session.push(["value": 4], eventTime: Self.happened)
        #expect(handler.calls.map(\.eventTime) == [Self.happened, nil])
        #expect(session.model["value"] == 4)
        let refused = await session.push(["event": "purchase"], eventID: "", eventTime: Self.happened)
        #expect(refused.refusal?.code == .invalidEventID && handler.calls.count == 2)
    }

    @Test func aTimedPushWithAnEventIDIsADuplicateAsAnyOther() async throws {
        let (manager, handler) = try Self.manager()
        let session = manager.makeDataLayer()
        await session.push(event: "purchase", eventID: "m-1", eventTime: Self.happened)
        let retry = await session.push(event: "purchase", eventID: "m-1", eventTime: Self.happened)
        #expect(retry.isDuplicate)
        #expect(handler.calls.count == 2)
        let refused = await session.push(event: "purchase", eventID: "", eventTime: Self.happened)
        #expect(refused.refusal?.code == .invalidEventID)
    }

    @Test func aSessionStorePushAndABatchRequestCarryTheTime() async throws {
        let (manager, handler) = try Self.manager()
        let store = SessionStore(tagManager: manager)
        try await store.push(event: "purchase", for: "ada", eventTime: Self.happened)
        let later = Self.happened.addingTimeInterval(60)
        let outcomes = await store.push([
            SessionStore.PushRequest(event: "purchase", userID: "ada", eventTime: later),
            SessionStore.PushRequest(event: "purchase", userID: "bob"),
        ])
        #expect(outcomes.allSatisfy { (try? $0.get()) != nil })
        let purchases = handler.calls.filter { $0.eventName == "purchase" }
        #expect(purchases.map(\.eventTime) == [Self.happened, later, nil])
    }
}
