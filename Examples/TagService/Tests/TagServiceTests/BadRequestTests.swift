import ContainerKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

@Suite struct BadRequestTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var body: String
        var status: HTTPResponse.Status
        var code: String
        /// The whole message, where the case pins it.
        var message: String? = nil
        /// The JSON pointer of the refused value, and its `line:column` in the body, where the case pins them.
        var pointer: String? = nil
        var place: String? = nil
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(
            name: "not JSON",
            body: #"{"user_id": "u", "event": "#,
            status: .badRequest,
            code: "malformed_json",
            message: "the body is not JSON at 1:27: unexpected end of file inside object that starts at column 1"
        ),
        Case(
            name: "not an object",
            body: #"["user_id"]"#,
            status: .badRequest,
            code: "malformed_json",
            message: "the body must be a JSON object, not array",
            pointer: "",
            place: "1:1"
        ),
        Case(
            name: "no user_id",
            body: #"{"event": "played song"}"#,
            status: .badRequest,
            code: "missing_field",
            pointer: "",
            place: "1:1"
        ),
        Case(
            name: "a timestamp that is not a time",
            body: #"{"user_id": "u", "event": "x", "timestamp": "yesterday"}"#,
            status: .badRequest,
            code: "invalid_field",
            message: "'timestamp' must be an ISO-8601 time such as 2024-05-01T12:30:00.250Z, not 'yesterday'",
            pointer: "/timestamp",
            place: "1:45"
        ),
        Case(
            name: "a numeric sent_at",
            body: #"{"user_id": "u", "event": "x", "sent_at": 1714564800}"#,
            status: .badRequest,
            code: "invalid_field",
            message: "'sent_at' must be an ISO-8601 time such as 2024-05-01T12:30:00.250Z, not number",
            pointer: "/sent_at"
        ),
        Case(
            name: "a timestamp on a command",
            body: #"{"user_id": "u", "command": ["consent", "update", {}], "timestamp": "2024-05-01"}"#,
            status: .badRequest,
            code: "invalid_field",
            message: "'timestamp' is for events, not commands",
            pointer: "/timestamp"
        ),
        Case(
            name: "empty user_id",
            body: #"{"user_id": "", "event": "x"}"#,
            status: .badRequest,
            code: "invalid_field"
        ),
        Case(
            name: "numeric user_id",
            body: #"{"user_id": 7, "event": "x"}"#,
            status: .badRequest,
            code: "invalid_field",
            message: "'user_id' must be a non-empty string of at most 997 bytes, not number",
            pointer: "/user_id",
            place: "1:13"
        ),
        Case(name: "no event", body: #"{"user_id": "u"}"#, status: .badRequest, code: "missing_field"),
        Case(
            name: "empty event, on its own line",
            body: "{\n  \"user_id\": \"u\",\n  \"event\": \"\",\n  \"parameters\": {}\n}",
            status: .badRequest,
            code: "invalid_field",
            message: "'event' must be a non-empty string, not an empty string",
            pointer: "/event",
            place: "3:12"
        ),
        Case(
            name: "parameters not an object",
            body: #"{"user_id": "u", "event": "played song", "parameters": [1]}"#,
            status: .badRequest,
            code: "invalid_field",
            message: "'parameters' must be an object, not array",
            pointer: "/parameters",
            place: "1:56"
        ),
        Case(
            name: "unknown context key",
            body: #"{"user_id": "u", "event": "played song", "context": {"cpu": "x"}}"#,
            status: .badRequest,
            code: "invalid_field",
            pointer: "/context/cpu",
            place: "1:61"
        ),
        Case(
            name: "a region outside the country, the region first",
            body: #"{"user_id": "u", "event": "e", "context": {"region": "FR-75", "country": "ES"}}"#,
            status: .badRequest,
            code: "invalid_field",
            message: "'context': context key 'region' 'FR-75' is not in the country 'ES'",
            pointer: "/context/region",
            place: "1:54"
        ),
        Case(
            name: "a region outside the country, the country first",
            body: #"{"user_id": "u", "event": "e", "context": {"country": "ES", "region": "FR-75"}}"#,
            status: .badRequest,
            code: "invalid_field",
            message: "'context': context key 'region' 'FR-75' is not in the country 'ES'",
            pointer: "/context/region",
            place: "1:71"
        ),
        Case(
            name: "a consent command with a bad kind",
            body: #"{"user_id": "u", "command": ["consent", "later", {}]}"#,
            status: .badRequest,
            code: "invalid_field",
            pointer: "/command/1",
            place: "1:41"
        ),
        Case(
            name: "body over the limit",
            body:
                #"{"user_id": "u", "event": "played song", "parameters": {"title": "\#(String(repeating: "x", count: 2000))"}}"#,
            status: .contentTooLarge,
            code: "body_too_large"
        ),
    ]

    @Test(arguments: cases)
    func refusedWithAJSONErrorAndNothingEnqueued(_ badRequest: Case) async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        fixture.configuration.maximumBodyBytes = 1024
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            try await client.execute(
                uri: "/v1/events",
                method: .post,
                headers: .json,
                body: ByteBuffer(string: badRequest.body)
            ) {
                response in
                #expect(response.status == badRequest.status)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let error = try #require(try response.json["error"]?.objectValue)
                #expect(error["code"] == .string(badRequest.code))
                #expect(error["message"]?.stringValue?.isEmpty == false)
                if let message = badRequest.message { #expect(error["message"] == .string(message)) }
                if let pointer = badRequest.pointer { #expect(error["pointer"] == .string(pointer)) }
                if let place = badRequest.place {
                    let found = error["line"].map(\.jsString).map { "\($0):\(error["column"]?.jsString ?? "?")" }
                    #expect(found == place)
                }
            }
        }
        #expect(service.queue?.lastTicket == 0)
        #expect(service.sessions.count == 0)
        #expect(try fixture.deliveredRecords().isEmpty)
    }

    @Test func oversizeBodyIsRefusedOnALiveServer() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        fixture.configuration.maximumBodyBytes = 1024
        let service = try await fixture.make()
        let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: 64 * 1024)
        try await service.application.test(.live) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .contentTooLarge)
                let answer = try response.json
                #expect(answer["error"]?.objectValue?["code"] == "body_too_large")
            }
            // The connection's next request still works.
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
        #expect(service.queue?.lastTicket == 0)
    }

    /// Issue 38: a body that is not declared JSON is refused before it is read, on every endpoint that reads one
    /// (a missing `Content-Type` too: Segment's and RudderStack's clients always send it, and a browser can send
    /// a body without one, or as `text/plain`, to another origin without asking first).
    @Test(arguments: [
        nil, "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
        "application/json; charset=iso-8859-1", "application/jsonx", "application/vnd.api+json",
    ])
    func aBodyThatIsNotDeclaredJSONIsRefusedWith415(_ contentType: String?) async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        let headers: HTTPFields = contentType.map { [.contentType: $0] } ?? [:]
        try await service.application.test(.router) { client in
            for (path, body) in [
                ("/v1/events", eventBody(user: "ada")), ("/v1/batch", batchBody([batchEvent(user: "ada", title: "t")])),
            ] {
                try await client.execute(uri: path, method: .post, headers: headers, body: body) { response in
                    #expect(response.status == .unsupportedMediaType, "\(path)")
                    let error = try #require(try response.json["error"]?.objectValue)
                    #expect(error["code"] == "unsupported_media_type")
                }
            }
        }
        #expect(service.queue?.lastTicket == 0)
        #expect(service.sessions.count == 0)
    }

    @Test(arguments: ["application/json", "application/json; charset=utf-8", #"Application/JSON;charset="UTF-8""#])
    func jsonWithOrWithoutAUTF8CharsetIsAccepted(_ contentType: String) async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            let headers: HTTPFields = [.contentType: contentType]
            try await client.execute(uri: "/v1/events", method: .post, headers: headers, body: eventBody(user: "ada")) {
                response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func aRepeatedContentTypeIsRefused() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            var headers: HTTPFields = [.contentType: "application/json"]
            headers.append(HTTPField(name: .contentType, value: "text/plain"))
            try await client.execute(uri: "/v1/events", method: .post, headers: headers, body: eventBody(user: "ada")) {
                response in
                #expect(response.status == .unsupportedMediaType)
            }
        }
        #expect(service.sessions.count == 0)
    }
}
