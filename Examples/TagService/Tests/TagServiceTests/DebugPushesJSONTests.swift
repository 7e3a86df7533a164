import ContainerKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

/// `GET /debug/users/<user id>/pushes.json`: the kept pushes of a user for scripts, each with the library's trace
/// JSON, behind the token like every debug route.
struct DebugPushesJSONTests {
    static let token = DebugHubTests.token

    /// The debug listener's routes over a hub (a fixture's clock) and a session store with GTM-DEBUG1.
    static func application(_ hub: DebugHub) throws -> some ApplicationProtocol {
        let manager = TagManager()
        let router = Router()
        DebugController(hub: hub, manager: manager, sessions: SessionStore(tagManager: manager)).register(on: router)
        return Application(router: router)
    }

    static var bearer: HTTPFields { [.authorization: "Bearer \(token)"] }

    @Test func aScriptGetsTheKeptTracesOldestFirstAsVersionedJSON() async throws {
        let hub = DebugHubTests.Fixture().hub
        try hub.follow("a/lice")
        for index in 1...3 {
            hub.record(DebugHubTests.trace("e\(index)"), userID: "a/lice", tracing: index == 2 ? .header : .followed)
        }
        try await Self.application(hub).test(.router) { client in
            try await client.execute(uri: "/debug/users/a%2Flice/pushes.json", method: .get, headers: Self.bearer) {
                response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType] == "application/json")
                #expect(response.headers[.contentSecurityPolicy] == DebugAccessMiddleware.contentSecurityPolicy)
                let document = try Value(json: String(buffer: response.body))
                #expect(document["version"] == 1)
                #expect(document["user_id"] == "a/lice")
                let pushes = try #require(document["pushes"]?.arrayValue)
                #expect(pushes.map { $0["sequence"] } == [1, 2, 3])
                #expect(pushes.map { $0["via_header"] } == [false, true, false])
                // Each trace is the library's JSON, read back by the library.
                let trace = try PushTrace(json: JSONWriter.string(try #require(pushes[0]["trace"])))
                #expect(trace == DebugHubTests.trace("e1"))
                #expect(pushes[2]["trace"]?["version"] == .int(Int64(PushTrace.formatVersion)))
            }
            try await client.execute(
                uri: "/debug/users/a%2Flice/pushes.json?after=2",
                method: .get,
                headers: Self.bearer
            ) { response in
                let document = try Value(json: String(buffer: response.body))
                #expect(document["pushes"]?.arrayValue?.map { $0["sequence"] } == [3])
            }
        }
    }

    @Test func anAfterThatIsNotAPushNumberIsRefusedNotReadAsZero() async throws {
        let hub = DebugHubTests.Fixture().hub
        try hub.follow("alice")
        hub.record(DebugHubTests.trace("e1"), userID: "alice", tracing: .followed)
        try await Self.application(hub).test(.router) { client in
            for (after, shown) in [("x", "x"), ("-1", "-1"), ("2.5", "2.5"), ("", "")] {
                let uri = "/debug/users/alice/pushes.json?after=\(after)"
                try await client.execute(uri: uri, method: .get, headers: Self.bearer) { response in
                    #expect(response.status == .badRequest, "\(uri)")
                    let error = try #require(try Value(json: String(buffer: response.body))["error"])
                    #expect(error["code"] == "invalid_parameter")
                    #expect(
                        error["message"]
                            == .string("'after' must be a push number (a whole number from 0), not '\(shown)'")
                    )
                }
            }
            // The live stream refuses it the same way, before it starts.
            try await client.execute(uri: "/debug/users/alice/events?after=x", method: .get, headers: Self.bearer) {
                response in
                #expect(response.status == .badRequest)
                let answer = try Value(json: String(buffer: response.body))
                #expect(answer["error"]?["code"] == "invalid_parameter")
            }
        }
    }

    @Test func askingForAUserStartsFollowingThem() async throws {
        let hub = DebugHubTests.Fixture().hub
        try await Self.application(hub).test(.router) { client in
            try await client.execute(uri: "/debug/users/bob/pushes.json", method: .get, headers: Self.bearer) {
                response in
                #expect(response.status == .ok)
                let document = try Value(json: String(buffer: response.body))
                #expect(document["pushes"] == [])
            }
        }
        #expect(hub.isFollowed("bob"))
        #expect(hub.tracing(userID: "bob", headers: [:]) == .followed)
    }

    @Test func withoutTheTokenItIsNotFound() async throws {
        let hub = DebugHubTests.Fixture().hub
        try hub.follow("alice")
        hub.record(DebugHubTests.trace("secret"), userID: "alice", tracing: .followed)
        try await Self.application(hub).test(.router) { client in
            for headers: HTTPFields in [[:], [.authorization: "Bearer wrong-token-0123456789abc"]] {
                try await client.execute(uri: "/debug/users/alice/pushes.json", method: .get, headers: headers) {
                    response in
                    #expect(response.status == .notFound)
                    #expect(!String(buffer: response.body).contains("secret"))
                }
            }
        }
    }

    @Test func aRefusedFollowIsAJSONError() async throws {
        let hub = DebugHubTests.Fixture { $0.maximumFollowedUsers = 1 }.hub
        let page = try hub.subscribe("alice", after: 0)
        try await Self.application(hub).test(.router) { client in
            try await client.execute(uri: "/debug/users/bob/pushes.json", method: .get, headers: Self.bearer) {
                response in
                #expect(response.status == .serviceUnavailable)
                let error = try Value(json: String(buffer: response.body))["error"]
                #expect(error?["code"] == "too_many_users")
            }
        }
        page.end()
    }
}

extension Value {
    /// The member `key` of an object (`nil` for anything else): how these tests read a JSON answer.
    fileprivate subscript(key: String) -> Value? { objectValue?[key] }
}
