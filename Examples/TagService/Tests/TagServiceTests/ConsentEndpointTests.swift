import ContainerKit
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

/// `POST /v1/events` with a consent `command` instead of an event, and the visitor's location in `context`.
@Suite struct ConsentEndpointTests {
    /// A second container beside the fixture: on "played song" its tag 9 (class path `consent.ads`, no handler)
    /// needs `ad_storage`.
    static let consentContainer = """
        {"resource": {"version": "1",
          "macros": [{"function": "__e"}],
          "tags": [{"function": "__funct", "tag_id": 9, "vtp_classPath": "consent.ads", "consent": ["list", "ad_storage"]}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "played song"}],
          "rules": [[["if", 0], ["add", 0]]]}}
        """

    func post(_ client: some TestClientProtocol, _ body: String) async throws -> (HTTPResponse.Status, ValueMap) {
        try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: ByteBuffer(string: body)) {
            response in
            (response.status, try response.json)
        }
    }

    func status(ofTag id: Int64, in answer: ValueMap) -> Value? {
        answer["fired"]?.arrayValue?.first { $0.objectValue?["tag_id"] == .int(id) }?.objectValue?["status"]
    }

    @Test func commandsSetTheUsersConsentAndBlockedTagsAreAnswered() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try Self.consentContainer.write(
            toFile: fixture.configuration.containersDirectory + "/GTM-CONSENT1.json",
            atomically: true,
            encoding: .utf8
        )
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            let (defaulted, answer) = try await post(
                client,
                #"{"user_id": "ada", "command": ["consent", "default", {"ad_storage": "denied", "region": ["ES"]}], "#
                    + #""context": {"country": "ES", "region": "ES-MD"}}"#
            )
            #expect(defaulted == .ok && answer["fired"] == [])
            let (_, blocked) = try await post(client, #"{"user_id": "ada", "event": "played song", "parameters": {}}"#)
            #expect(status(ofTag: 9, in: blocked) == "blocked_by_consent")
            let (updated, _) = try await post(
                client,
                #"{"user_id": "ada", "command": ["consent", "update", {"ad_storage": "granted"}]}"#
            )
            #expect(updated == .ok)
            let (_, fired) = try await post(client, #"{"user_id": "ada", "event": "played song", "parameters": {}}"#)
            #expect(status(ofTag: 9, in: fired) == "unhandled")
            // A visitor elsewhere is not under the Spanish default.
            let (_, _) = try await post(
                client,
                #"{"user_id": "bo", "command": ["consent", "default", {"ad_storage": "denied", "region": ["ES"]}], "#
                    + #""context": {"country": "FR"}}"#
            )
            let (_, elsewhere) = try await post(client, #"{"user_id": "bo", "event": "played song", "parameters": {}}"#)
            #expect(status(ofTag: 9, in: elsewhere) == "unhandled")
        }
        let state = try #require(service.sessions.existingSession(for: "ada")?.snapshot())
        #expect(
            state.consent.entry("ad_storage")
                == .init(type: "ad_storage", region: "ES", defaultGranted: false, updateGranted: true)
        )
        #expect(state.context.region == "ES-MD")
    }

    @Test(arguments: [
        #"{"user_id": "ada", "command": ["config", "G-1"]}"#,
        #"{"user_id": "ada", "command": ["consent", "default"]}"#,
        #"{"user_id": "ada", "command": "consent"}"#,
        #"{"user_id": "ada", "command": ["consent", "update", {}], "event": "played song"}"#,
        #"{"user_id": "ada", "command": ["consent", "update", {}], "message_id": "m-1"}"#,
        #"{"user_id": "ada", "event": "played song", "context": {"country": "Spain"}}"#,
        #"{"user_id": "ada", "event": "played song", "context": {"country": "FR", "region": "ES-MD"}}"#,
    ])
    func aBadCommandOrLocationIsABadRequest(_ body: String) async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            let (status, answer) = try await post(client, body)
            #expect(status == .badRequest)
            #expect(answer["error"]?.objectValue?["code"] == "invalid_field")
        }
        #expect(service.sessions.count == 0)
    }
}
