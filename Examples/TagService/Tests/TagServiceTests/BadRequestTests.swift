import ContainerKit
import Foundation
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
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "not JSON", body: #"{"user_id": "u", "event": "#, status: .badRequest, code: "malformed_json"),
        Case(name: "not an object", body: #"["user_id"]"#, status: .badRequest, code: "malformed_json"),
        Case(name: "no user_id", body: #"{"event": "played song"}"#, status: .badRequest, code: "missing_field"),
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
            code: "invalid_field"
        ),
        Case(name: "no event", body: #"{"user_id": "u"}"#, status: .badRequest, code: "missing_field"),
        Case(
            name: "parameters not an object",
            body: #"{"user_id": "u", "event": "played song", "parameters": [1]}"#,
            status: .badRequest,
            code: "invalid_field"
        ),
        Case(
            name: "unknown context key",
            body: #"{"user_id": "u", "event": "played song", "context": {"cpu": "x"}}"#,
            status: .badRequest,
            code: "invalid_field"
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
            try await client.execute(uri: "/v1/events", method: .post, body: ByteBuffer(string: badRequest.body)) {
                response in
                #expect(response.status == badRequest.status)
                #expect(response.headers[.contentType]?.hasPrefix("application/json") == true)
                let error = try #require(try response.json["error"]?.objectValue)
                #expect(error["code"] == .string(badRequest.code))
                #expect(error["message"]?.stringValue?.isEmpty == false)
            }
        }
        #expect(service.queue.lastTicket == 0)
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
            try await client.execute(uri: "/v1/events", method: .post, body: body) { response in
                #expect(response.status == .contentTooLarge)
                let answer = try response.json
                #expect(answer["error"]?.objectValue?["code"] == "body_too_large")
            }
            // The connection's next request still works.
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
        #expect(service.queue.lastTicket == 0)
    }
}
