import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

/// `--braze-user none --braze-alias-label <label>`: the Braze tags of a session without a Braze user go out at
/// once for the user alias `{alias_name: user_id, alias_label: label}`, and the push whose `changeUser` tag names
/// the user's `external_id` tells Braze to merge the alias — over HTTP, to the `/users/track` stand-in, which sees
/// the alias's events before the `/users/identify` request.
@Suite struct AliasIdentifyEndpointTests {
    /// A service with `--braze-user none --braze-alias-label device` over `Containers/GTM-MUSIC01.json` (`played
    /// song` fires a Braze `logEvent`, `login` a `changeUser` with the `user_id` parameter), delivering to `port`.
    static func service(deliveringTo port: UInt16) throws -> TestService {
        var fixture = try TestService(containers: false)
        try FileManager.default.copyItem(
            at: PendingRecordsEndpointTests.root.appendingPathComponent("Containers/GTM-MUSIC01.json"),
            to: URL(fileURLWithPath: fixture.configuration.containersDirectory)
                .appendingPathComponent("GTM-MUSIC01.json")
        )
        fixture.configuration.brazeUser = .none
        fixture.configuration.brazeAliasLabel = "device"
        fixture.configuration.brazeEndpoint = URL(string: "http://127.0.0.1:\(port)")
        fixture.configuration.brazeAPIKey = "test"
        return fixture
    }

    @Test func aSessionWithoutAUserSendsForItsAliasAndTheLoginIdentifiesTheAliasAfterItsEvents() async throws {
        let standIn = try UsersTrackStandIn()
        let fixture = try Self.service(deliveringTo: standIn.port)
        defer { fixture.remove() }
        let titles = ["So What", "Blue in Green"]
        try await standIn.withRunning {
            let service = try await fixture.make()
            try await service.application.test(.live) { client in
                for title in titles {
                    let body = eventBody(user: "device-1", parameters: #"{"title": "\#(title)", "duration": 545}"#)
                    try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) { response in
                        #expect(response.status == .ok)
                        let answer = try response.json
                        #expect(answer["fired"]?.arrayValue?.first?.objectValue?["status"] == "ok", "sent, not held")
                        let record = try #require(answer["records"]?.arrayValue?.first?.objectValue)
                        #expect(record["user_alias"] == ["alias_name": "device-1", "alias_label": "device"])
                    }
                }
                let login = eventBody(user: "device-1", event: "login", parameters: #"{"user_id": "ada"}"#)
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: login) { response in
                    #expect(response.status == .ok)
                    let records = try #require(try response.json["records"]?.arrayValue).compactMap(\.objectValue)
                    #expect(records.map { $0["type"] } == ["change_user", "identify"])
                    #expect(records.last?["external_id"] == "ada")
                    #expect(records.last?["alias"] == ["alias_name": "device-1", "alias_label": "device"])
                }
                // A second login names another user: nothing more is identified.
                let other = eventBody(user: "device-1", event: "login", parameters: #"{"user_id": "bob"}"#)
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: other) { response in
                    let records = try #require(try response.json["records"]?.arrayValue).compactMap(\.objectValue)
                    #expect(records.map { $0["type"] } == ["change_user"])
                }
                try await #require(service.queue).flush()
            }
        }
        let identifications = standIn.identifications
        #expect(identifications.count == 1)
        let identification = try #require(identifications.first)
        #expect(identification.externalID == "ada")
        #expect(identification.aliasName == "device-1" && identification.aliasLabel == "device")
        #expect(identification.mergeBehavior == "merge")
        #expect(Set(titles).isSubset(of: identification.titlesBefore), "the alias's events arrived first")
        #expect(standIn.deliveredTitles == ["So What": 1, "Blue in Green": 1])
    }

    @Test func theAliasLabelIsReadFromTheCommandLineAndAnEmptyOneIsRefused() throws {
        let parsed = try TagServiceConfiguration.parse(
            ["--containers", "/c", "--queue", "/q", "--braze-user", "none", "--braze-alias-label", "device"],
            environment: [:]
        )
        guard case .run(let configuration) = parsed else {
            Issue.record("expected a configuration")
            return
        }
        #expect(configuration.brazeProviderConfiguration.withoutUser == .alias(label: "device"))
        #expect(!configuration.brazeProviderConfiguration.sessionIDIsExternalID, "--braze-user none names no user")
        let fromEnvironment = try TagServiceConfiguration.parse(
            ["--containers", "/c", "--queue", "/q"],
            environment: ["TAGSERVICE_BRAZE_ALIAS_LABEL": "web"]
        )
        guard case .run(let environmentConfiguration) = fromEnvironment else {
            Issue.record("expected a configuration")
            return
        }
        #expect(environmentConfiguration.brazeAliasLabel == "web")
        #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "/c", "--queue", "/q", "--braze-alias-label", String(repeating: "x", count: 256)],
                environment: [:]
            )
        }
        let defaults = try TagServiceConfiguration.parse(["--containers", "/c", "--queue", "/q"], environment: [:])
        guard case .run(let held) = defaults else {
            Issue.record("expected a configuration")
            return
        }
        #expect(held.brazeProviderConfiguration.withoutUser == .hold)
        #expect(held.brazeProviderConfiguration.sessionIDIsExternalID, "--braze-user user-id: the provider names it")
    }
}
