import ContainerKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 38: where a request's user id comes from — the body, the `X-User-ID` header, the path — and the rules
/// it follows, the same in the local mode and in `--postgres` mode (`PostgresModeTests` runs
/// ``checkUserIDRules(_:)`` there too).
@Suite struct UserIDRoutingTests {
    @Test func theLocalModeFollowsTheUserIDRules() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.live) { client in
            try await checkUserIDRules(client)
        }
        // Nothing refused was pushed: only the two users that were answered have a session.
        #expect(service.sessions.count == 2)
    }

    @Test func aPathSegmentIsPercentDecodedToUTF8() throws {
        #expect(try RoutedUser.decodedPathSegment("caf%C3%A9") == "caf\u{E9}")
        #expect(try RoutedUser.decodedPathSegment("caf%c3%a9") == "caf\u{E9}")
        #expect(try RoutedUser.decodedPathSegment("a+b%2Fc%25") == "a+b/c%")
        #expect(try RoutedUser.decodedPathSegment("caf\u{E9}") == "caf\u{E9}")
        for bad in ["%FF", "a%00b", "a%zz", "a%4", "%", "%EF%BF%BD", "%C3"] {
            let error = #expect(throws: APIError.self, "\(bad)") { try RoutedUser.decodedPathSegment(bad) }
            #expect(error?.code == .invalidUserID)
        }
    }
}

/// Checks the user id rules on a live service (`client` connects to its port).
func checkUserIDRules(_ client: any TestClientProtocol) async throws {
    let userHeader = HTTPField.Name("X-User-ID")!
    let event = ByteBuffer(string: #"{"event": "played song", "parameters": {"title": "t"}}"#)
    func headers(_ users: [String] = []) -> HTTPFields {
        var fields = HTTPFields.json
        for user in users { fields.append(HTTPField(name: userHeader, value: user)) }
        return fields
    }
    func post(
        _ path: String,
        users: [String] = [],
        body: ByteBuffer = event
    ) async throws -> (HTTPResponse.Status, ValueMap) {
        let response = try await client.execute(uri: path, method: .post, headers: headers(users), body: body)
        return (response.status, try response.json)
    }
    func code(_ answer: ValueMap) -> String? { answer["error"]?.objectValue?["code"]?.stringValue }

    // The path is percent-decoded, in either case: one user, the one nginx hashes (its $uri is decoded too).
    var (status, answer) = try await post("/v1/users/caf%C3%A9/events")
    #expect(status == .ok)
    #expect(answer["user_id"] == .string("caf\u{E9}"))
    #expect(answer.firedNames == ["Braze - played song", "Braze - first play"])
    for (path, users) in [
        ("/v1/users/caf%c3%a9/events", []), ("/v1/events", ["caf\u{E9}"]),
        ("/v1/users/caf%C3%A9/events", ["caf\u{E9}"]),
    ] {
        (status, answer) = try await post(path, users: users)
        #expect(status == .ok, "\(path) \(users)")
        #expect(answer.firedNames == ["Braze - played song"], "the same session: \(path) \(users)")
        #expect(answer["user_id"] == .string("caf\u{E9}"))
    }
    // The same user in the body, and in a batch routed by the header.
    (status, answer) = try await post("/v1/events", body: eventBody(user: "caf\u{E9}"))
    #expect(answer.firedNames == ["Braze - played song"])
    let batch = try await client.execute(
        uri: "/v1/users/caf%C3%A9/batch",
        method: .post,
        headers: .json,
        body: batchBody([#"{"event": "played song"}"#])
    )
    #expect(try batch.json.batchResults.map { $0["status"] } == [200])
    // Bytes, not canonical equivalence: the decomposed form is another user.
    (status, answer) = try await post("/v1/events", users: ["cafe\u{301}"])
    #expect(answer.firedNames == ["Braze - played song", "Braze - first play"])

    // Refused, with nothing pushed.
    for path in [
        "/v1/users/%FF/events", "/v1/users/a%00b/batch", "/v1/users/a%zz/events", "/v1/users/%EF%BF%BD/events",
    ] {
        (status, answer) = try await post(path)
        #expect(status == .badRequest, "\(path)")
        #expect(code(answer) == "invalid_user_id", "\(path)")
    }
    (status, answer) = try await post("/v1/events", users: ["dave", "erin"])
    #expect(status == .badRequest)
    #expect(code(answer) == "invalid_user_id")
    (status, answer) = try await post("/v1/users/dave/events", users: ["erin"])
    #expect(status == .badRequest)
    #expect(code(answer) == "conflicting_user_id")
    (status, answer) = try await post("/v1/users/dave/batch", users: ["erin"])
    #expect(code(answer) == "conflicting_user_id")
    (status, answer) = try await post("/v1/events", users: ["dave"], body: eventBody(user: "erin"))
    #expect(status == .badRequest)
    #expect(code(answer) == "user_id_mismatch")
    (status, answer) = try await post("/v1/users/dave/events", body: eventBody(user: "erin"))
    #expect(code(answer) == "user_id_mismatch")

    // A header that is not UTF-8 (bytes an HTTP client can send, and HTTP parsing turns into U+FFFD).
    let port = try #require(client.port)
    let fd = try ServingTests.connect(port)
    defer { close(fd) }
    let body = Array(#"{"event": "played song"}"#.utf8)
    var request = Array("POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-User-ID: caf".utf8)
    request += [0xE9]  // Latin-1 é
    request += Array("\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
    #expect(write(fd, request, request.count) == request.count)
    let raw = try #require(await ServingTests.read(fd, until: "}}"))
    #expect(raw.hasPrefix("HTTP/1.1 400"))
    #expect(raw.contains(#""code":"invalid_user_id""#))
}
