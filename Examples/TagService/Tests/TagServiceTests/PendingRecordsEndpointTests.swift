import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

/// `--braze-user none`: the `user_id` only keys the session, Braze tags of a session without a Braze user are
/// `pending` (their records wait in the session), and the push whose `changeUser` tag names the user releases
/// them — over HTTP, with the records' IDs and original times, delivered once.
@Suite struct PendingRecordsEndpointTests {
    /// The package root of ContainerKit (three levels above this package's tests).
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// The corpus' Braze sample (a `logEvent` tag for the event `logEvent`), when `../shared` is there.
    static var brazeSample: URL? {
        let url = root.deletingLastPathComponent()
            .appendingPathComponent("shared/research/corpus/v5-mobile/Appboy__appboy-android-sdk__GTM-5HM9ZRX.json")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    static let corpusMissing: Comment = "corpus not found at ../shared/research/corpus; corpus tests skipped"

    /// A service with `--braze-user none` over the corpus' Braze sample (`logEvent`, no `changeUser` tag) and
    /// `Containers/GTM-MUSIC01.json` (whose `login` event fires `changeUser` with the `user_id` parameter).
    static func service() throws -> TestService {
        var fixture = try TestService(containers: false)
        let directory = URL(fileURLWithPath: fixture.configuration.containersDirectory)
        try FileManager.default.copyItem(
            at: try #require(brazeSample),
            to: directory.appendingPathComponent("GTM-5HM9ZRX.json")
        )
        try FileManager.default.copyItem(
            at: root.appendingPathComponent("Containers/GTM-MUSIC01.json"),
            to: directory.appendingPathComponent("GTM-MUSIC01.json")
        )
        fixture.configuration.brazeUser = .none
        return fixture
    }

    @Test(.enabled(if: PendingRecordsEndpointTests.brazeSample != nil, PendingRecordsEndpointTests.corpusMissing))
    func aTagWithoutABrazeUserIsPendingAndTheLoginReleasesItsRecordsForThatUser() async throws {
        let fixture = try Self.service()
        defer { fixture.remove() }
        let service = try await fixture.make()
        let held = try await service.application.test(.live) { client -> [ValueMap] in
            var held: [ValueMap] = []
            for name in ["app_open", "search"] {
                let body = eventBody(user: "device-1", event: "logEvent", parameters: #"{"eventName": "\#(name)"}"#)
                held += try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) {
                    response in
                    #expect(response.status == .ok)
                    let answer = try response.json
                    let tag = try #require(answer["fired"]?.arrayValue?.first?.objectValue)
                    #expect(tag["status"] == "pending")
                    #expect(tag["message"]?.stringValue?.contains("until the session has a Braze user") == true)
                    #expect(answer["records"] == [], "nothing is sent yet")
                    return (tag["pending_records"]?.arrayValue ?? []).compactMap(\.objectValue)
                }
            }
            #expect(held.map { $0["name"] } == ["app_open", "search"])
            #expect(held.allSatisfy { $0["external_id"] == nil })

            let login = eventBody(user: "device-1", event: "login", parameters: #"{"user_id": "ada"}"#)
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: login) { [held] response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer.firedNames == ["Braze - login"])
                let records = try #require(answer["records"]?.arrayValue).compactMap(\.objectValue)
                #expect(records.map { $0["type"] } == ["change_user", "custom_event", "custom_event"])
                #expect(records.allSatisfy { $0["external_id"] == "ada" })
                let released = Array(records.dropFirst())
                #expect(released.map { $0["id"] } == held.map { $0["id"] }, "the records keep their IDs")
                #expect(released.map { $0["time"] } == held.map { $0["time"] }, "and their original times")
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let lines = Set(String(buffer: response.body).split(separator: "\n").map(String.init))
                #expect(lines.contains(#"tagservice_tags_total{status="pending"} 2"#))
                #expect(lines.contains("tagservice_braze_pending_held 2.0"))
                #expect(lines.contains("tagservice_braze_pending_released 2.0"))
                #expect(lines.contains("tagservice_braze_pending_records 0.0"))
                #expect(lines.contains(#"tagservice_braze_pending_expired{reason="age"} 0.0"#))
            }
            return held
        }
        // Delivered once each, for the user, with the times the answers showed.
        let delivered = try fixture.deliveredRecords().filter { $0.kind == .customEvent }
        #expect(delivered.map(\.id) == held.compactMap { $0["id"]?.stringValue })
        #expect(delivered.allSatisfy { $0.user == .externalID("ada") })
        #expect(delivered.map { ISO8601Timestamp.string(from: $0.time) } == held.compactMap { $0["time"]?.stringValue })
    }

    @Test(.enabled(if: PendingRecordsEndpointTests.brazeSample != nil, PendingRecordsEndpointTests.corpusMissing))
    func pendingRecordsPastTheCountBoundAreDroppedAndCounted() async throws {
        var fixture = try Self.service()
        fixture.configuration.brazePendingRecords = 1
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            for name in ["a", "b", "c"] {
                let body = eventBody(user: "device-2", event: "logEvent", parameters: #"{"eventName": "\#(name)"}"#)
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) { response in
                    #expect(response.status == .ok)
                }
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let lines = Set(String(buffer: response.body).split(separator: "\n").map(String.init))
                #expect(lines.contains("tagservice_braze_pending_records 1.0"))
                #expect(lines.contains(#"tagservice_braze_pending_expired{reason="size"} 2.0"#))
            }
        }
        let session = try #require(service.sessions.existingSession(for: "device-2"))
        #expect(BrazeTagProvider.pendingRecords(of: session).count == 1)
    }

    @Test func theModeAndTheBoundsAreReadFromTheCommandLine() throws {
        let parsed = try TagServiceConfiguration.parse(
            [
                "--containers", "/c", "--queue", "/q", "--braze-user", "none", "--braze-pending-records", "5",
                "--braze-pending-age", "3600",
            ],
            environment: [:]
        )
        guard case .run(let configuration) = parsed else {
            Issue.record("expected a configuration")
            return
        }
        #expect(configuration.brazeUser == .none)
        #expect(configuration.brazeProviderConfiguration.maximumPendingRecords == 5)
        #expect(configuration.brazeProviderConfiguration.maximumPendingAge == .seconds(3600))
        #expect(throws: UsageError.self) {
            try TagServiceConfiguration.parse(
                ["--containers", "/c", "--queue", "/q", "--braze-user", "alias"],
                environment: [:]
            )
        }
    }
}
