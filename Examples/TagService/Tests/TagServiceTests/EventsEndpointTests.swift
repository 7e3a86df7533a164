import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

@Suite struct EventsEndpointTests {
    @Test func anEventWithoutALiveContainerIsRefusedWith503AndCounted() async throws {
        let fixture = try TestService(containers: false)
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                #expect(response.status == .serviceUnavailable)
                let error = try #require(try response.json["error"]?.objectValue)
                #expect(error["code"] == "no_container")
                #expect(error["message"]?.stringValue?.contains("not evaluated") == true)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let lines = Set(String(buffer: response.body).split(separator: "\n").map(String.init))
                #expect(lines.contains(#"tagservice_events_refused_total{reason="no_container"} 1"#))
            }
        }
        // Nothing was pushed: no session, no record.
        #expect(service.sessions.count == 0)
        #expect(service.queue?.statistics.durableRecords == 0)
    }

    /// A user's data layer has a size limit (`--max-session-bytes`): the push that would pass it gets 413
    /// `session_too_large`, changes nothing, and smaller pushes go on (issue 38).
    @Test func aPushThatWouldMakeTheSessionTooLargeIs413AndChangesNothing() async throws {
        var fixture = try TestService()
        fixture.configuration.maximumSessionBytes = 4096
        defer { fixture.remove() }
        let service = try await fixture.make()
        let big = String(repeating: "x", count: 3000)
        try await service.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                #expect(response.status == .ok)
            }
            let body = eventBody(user: "ada", parameters: #"{"title": "\#(big)"}"#)
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .contentTooLarge)
                let error = try #require(try response.json["error"]?.objectValue)
                #expect(error["code"] == "session_too_large")
            }
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                #expect(response.status == .ok)
            }
        }
        #expect(service.sessions.existingSession(for: "ada")?.get("title") == "So What")
        #expect(service.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 2)
    }

    /// An event's `timestamp` is the time of its records: as given, or moved by how far the client's clock was off
    /// when it sent the event (`sent_at`, the event's own or its batch's), as Segment corrects it.
    @Test func anEventsTimestampIsTheTimeOfItsRecordsCorrectedBySentAt() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        @Sendable func times(_ answer: ValueMap) -> [String] {
            (answer["records"]?.arrayValue ?? []).compactMap { $0.objectValue?["time"]?.stringValue }
        }
        try await service.application.test(.router) { client in
            let given = ByteBuffer(
                string: #"{"user_id": "ada", "event": "played song", "parameters": {"title": "So What"}, "#
                    + #""timestamp": "2016-11-01T10:00:00.250+01:00"}"#
            )
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: given) { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(!times(answer).isEmpty && times(answer).allSatisfy { $0 == "2016-11-01T09:00:00.250Z" })
            }
            // A client whose clock is ten years ahead sent, ten seconds after the event by that clock: the event
            // happened ten seconds before the service received it.
            let before = Date()
            let skewed = ByteBuffer(
                string: #"{"user_id": "bob", "event": "played song", "parameters": {"title": "So What"}, "#
                    + #""timestamp": "2036-11-01T10:00:00.000Z", "sent_at": "2036-11-01T10:00:10.000Z"}"#
            )
            let answer = try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: skewed)
            let after = Date()
            let time = try #require(times(try answer.json).first.flatMap(ISO8601Timestamp.date(from:)))
            #expect(time >= before.addingTimeInterval(-10.001) && time <= after.addingTimeInterval(-10), "\(time)")
            // A batch's sent_at is that of each event without its own.
            let batch = ByteBuffer(
                string: #"{"sent_at": "2036-11-01T10:00:10.000Z", "events": ["#
                    + #"{"user_id": "cy", "event": "played song", "parameters": {"title": "A"}, "timestamp": "2036-11-01T10:00:00.000Z"}, "#
                    + #"{"user_id": "di", "event": "played song", "parameters": {"title": "B"}, "timestamp": "2036-11-01T10:00:00.000Z", "sent_at": "2036-11-01T10:00:00.000Z"}, "#
                    + #"{"user_id": "ed", "event": "played song", "parameters": {"title": "C"}}]}"#
            )
            let batchStart = Date()
            let results = try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: batch).json
                .batchResults
            let batchEnd = Date()
            let batchTimes = results.map { times($0).first.flatMap(ISO8601Timestamp.date(from:)) ?? .distantPast }
            #expect(batchTimes.count == 3)
            // Ten seconds before it arrived; as sent (its own sent_at says its clock was right); now.
            #expect(
                batchTimes[0] >= batchStart.addingTimeInterval(-10.001)
                    && batchTimes[0] <= batchEnd.addingTimeInterval(-10)
            )
            #expect(batchTimes[1] >= batchStart.addingTimeInterval(-0.001) && batchTimes[1] <= batchEnd)
            #expect(batchTimes[2] >= batchStart.addingTimeInterval(-0.001) && batchTimes[2] <= batchEnd)
            // How late the four events with a time arrived: ten years, ten seconds twice, none.
            try await client.execute(uri: "/metrics", method: .get) { response in
                let lines = String(buffer: response.body).split(separator: "\n")
                func value(_ prefix: String) -> String? {
                    lines.first { $0.hasPrefix(prefix) }.map { String($0.split(separator: " ").last ?? "") }
                }
                #expect(value("tagservice_event_delay_seconds_count") == "4")
                #expect(value(#"tagservice_event_delay_seconds_bucket{le="1.0"}"#) == "1", "\(lines)")
                #expect(value(#"tagservice_event_delay_seconds_bucket{le="60.0"}"#) == "3")
                #expect(value(#"tagservice_event_delay_seconds_bucket{le="604800.0"}"#) == "3")
            }
        }
    }

    @Test func aUserIDWithANULIsABadRequest() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            try await client.execute(
                uri: "/v1/events",
                method: .post,
                headers: .json,
                body: eventBody(user: #"a\u0000b"#)
            ) {
                response in
                #expect(response.status == .badRequest)
                let error = try #require(try response.json["error"]?.objectValue)
                #expect(error["code"] == "invalid_field")
                #expect(error["message"]?.stringValue?.contains("NUL") == true)
            }
        }
        #expect(service.sessions.count == 0)
    }

    @Test func canonicallyEquivalentUserIDsAreTwoUsers() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            for user in [#"caf\u00e9"#, #"cafe\u0301"#] {
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: user))
                { response in
                    #expect(response.status == .ok)
                    // Each is a new user: the once-per-load tag fires for both.
                    let names = try response.json.firedNames
                    #expect(names == ["Braze - played song", "Braze - first play"])
                }
            }
        }
        #expect(service.sessions.count == 2)
    }
    @Test func eventAnswersWithFiredTagsOnlyOnceItsRecordsAreDurable() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "user-1"))
            { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["user_id"] == "user-1")
                #expect(answer["durable"] == true)
                #expect(answer.firedNames == ["Braze - played song", "Braze - first play"])
                // Both records were written and synced before the answer was sent.
                #expect(service.queue?.statistics.durableRecords == 2)
            }
        }
    }

    @Test func answerListsTheRecordsThePushMade() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "user-1"))
            { response in
                let records = try #require(try response.json["records"]?.arrayValue)
                let lines = records.compactMap(\.objectValue)
                #expect(lines.map { $0["name"] } == ["played song", "first play"])
                #expect(lines.allSatisfy { $0["external_id"] == "user-1" })
            }
        }
    }

    @Test func eachUserHasItsOwnSession() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            for user in ["a", "b", "a"] {
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: user))
            }
            // The once-per-load tag fired once for each user, not once per push.
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "b")) {
                response in
                let answer = try response.json
                #expect(answer.firedNames == ["Braze - played song"])
            }
            #expect(service.sessions.count == 2)
        }
    }

    @Test func withoutTheDurabilityWaitTheAnswerSaysSo() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        fixture.configuration.waitsForDurability = false
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "u")) {
                response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["durable"] == false)
            }
        }
    }

    @Test func contextFromTheRequestReachesTheSession() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        let body = ByteBuffer(
            string: #"{"user_id": "u", "event": "other", "context": {"platform": "iOS", "app_id": "com.example"}}"#
        )
        try await service.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer.firedNames == [])
            }
        }
        let session = service.sessions.session(for: "u", context: nil)
        #expect(session.context.platform == "iOS")
        #expect(session.context.appID == "com.example")
        #expect(session.context.deviceName == "")
    }
}
