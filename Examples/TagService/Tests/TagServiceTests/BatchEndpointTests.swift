import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

#if canImport(Glibc)
    import Glibc
#endif

/// A `POST /v1/batch` body of `events` (each a JSON object's text).
func batchBody(_ events: [String]) -> ByteBuffer {
    ByteBuffer(string: #"{"events": ["# + events.joined(separator: ", ") + "]}")
}

/// One event of a batch: a "played song" of `user` with `title`.
func batchEvent(user: String, title: String) -> String {
    #"{"user_id": "\#(user)", "event": "played song", "parameters": {"title": "\#(title)"}}"#
}

extension ValueMap {
    /// The items of a batch answer.
    var batchResults: [ValueMap] { (self["results"]?.arrayValue ?? []).compactMap(\.objectValue) }

    /// The song titles of the records in an events answer (or a batch item), in order.
    var recordTitles: [String] {
        (self["records"]?.arrayValue ?? []).compactMap {
            $0.objectValue?["properties"]?.objectValue?["title"]?.stringValue
        }
    }
}

@Suite struct BatchEndpointTests {
    @Test func aBatchOfManyUsersIsAnsweredInOrderAndEachUsersEventsArePushedInOrder() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        let events = [("u1", "a"), ("u2", "b"), ("u1", "c"), ("u3", "d"), ("u1", "e"), ("u2", "f")]
        try await service.application.test(.live) { client in
            let body = batchBody(events.map { batchEvent(user: $0.0, title: $0.1) })
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["accepted"] == 6)
                #expect(answer["refused"] == 0)
                let results = answer.batchResults
                #expect(results.map { $0["status"] } == [200, 200, 200, 200, 200, 200])
                #expect(results.map { $0["user_id"]?.stringValue ?? "" } == events.map(\.0))
                #expect(results.allSatisfy { $0["durable"] == true })
                // Each item is the answer of its own event: its title, and the once-per-load tag only on a
                // user's first event of the batch (their first ever).
                #expect(results.map { $0.recordTitles.first ?? "" } == events.map(\.1))
                #expect(results.map { $0.firedNames.count } == [2, 2, 1, 2, 1, 1])
                // Answered once every record is durable.
                #expect(service.queue?.statistics.durableRecords == 9)
            }
        }
        #expect(service.sessions.existingSession(for: "u1")?.snapshot().eventNumber == 3)
        // The queue delivered each user's records in the order of the batch.
        let delivered = try fixture.deliveredRecords()
        let u1Titles = delivered.filter { $0.user == .externalID("u1") }.compactMap { record -> String? in
            guard case .customEvent("played song", let properties) = record.payload else { return nil }
            return properties["title"]?.stringValue
        }
        #expect(u1Titles == ["a", "c", "e"])
    }

    @Test func aBadEventIsRefusedInItsPlaceWithTheSingleRequestErrorAndTheOthersArePushed() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.live) { client in
            let body = batchBody([
                batchEvent(user: "ada", title: "a"),
                #"{"user_id": "ada", "parameters": {}}"#,
                #""not an object""#,
                batchEvent(user: #"a\u0000b"#, title: "x"),
                #"{"user_id": "grace", "event": "played song", "parameters": []}"#,
                batchEvent(user: "ada", title: "b"),
            ])
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["accepted"] == 2)
                #expect(answer["refused"] == 4)
                let results = answer.batchResults
                #expect(results.map { $0["status"] } == [200, 400, 400, 400, 400, 200])
                #expect(
                    results.map { $0["error"]?.objectValue?["code"]?.stringValue } == [
                        nil, "missing_field", "invalid_field", "invalid_field", "invalid_field", nil,
                    ]
                )
                // The same message as a single request gets.
                #expect(results[1]["error"]?.objectValue?["message"] == "'event' is required (or a consent 'command')")
                #expect(results[4]["user_id"] == "grace")
                #expect(results.map { $0.recordTitles.first } == ["a", nil, nil, nil, nil, "b"])
                // Each refusal says where in the body: the refused value's pointer, line and column.
                let errors = results.map { $0["error"]?.objectValue }
                #expect(
                    errors.map { $0?["pointer"]?.stringValue } == [
                        nil, "/events/1", "/events/2", "/events/3/user_id", "/events/4/parameters", nil,
                    ]
                )
                #expect(errors[2]?["message"] == "each event must be a JSON object, not string")
                // The body is one ASCII line: the column is the offset of grace's `[]`, plus one.
                let text = String(buffer: body)
                let offset = try #require(text.range(of: #""parameters": []"#)).upperBound.utf16Offset(in: text) - 1
                #expect(errors[4]?["line"] == 1)
                #expect(errors[4]?["column"] == .int(Int64(offset)))
            }
        }
        // Nothing of the refused events was pushed: no session for grace, two pushes for ada.
        #expect(service.sessions.existingSession(for: "grace") == nil)
        #expect(service.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 2)
    }

    @Test func aBatchBeyondItsLimitsOrUnreadableIsRefusedWholeWithAJSONError() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        fixture.configuration.maximumBatchEvents = 3
        fixture.configuration.maximumBatchBytes = 512
        let service = try await fixture.make()
        let cases: [(ByteBuffer, HTTPResponse.Status, String)] = [
            (batchBody((0..<4).map { batchEvent(user: "u\($0)", title: "t") }), .contentTooLarge, "too_many_events"),
            (
                batchBody([batchEvent(user: "u1", title: String(repeating: "x", count: 600))]), .contentTooLarge,
                "body_too_large"
            ),
            (batchBody([]), .badRequest, "invalid_field"),
            (ByteBuffer(string: #"{"batch": []}"#), .badRequest, "missing_field"),
            (ByteBuffer(string: #"{"events": {}}"#), .badRequest, "invalid_field"),
            (ByteBuffer(string: "[1, 2"), .badRequest, "malformed_json"),
            // The batch's own send time is the time of every event without one: not readable, it refuses them all.
            (
                ByteBuffer(string: #"{"events": [\#(batchEvent(user: "u1", title: "t"))], "sent_at": "soon"}"#),
                .badRequest, "invalid_field"
            ),
        ]
        try await service.application.test(.live) { client in
            for (body, status, code) in cases {
                try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: body) { response in
                    #expect(response.status == status)
                    let error = try #require(try response.json["error"]?.objectValue)
                    #expect(error["code"]?.stringValue == code)
                    #expect(error["message"]?.stringValue?.isEmpty == false)
                }
            }
            // An empty `events` is placed like any refused value: its pointer, line and column.
            try await client.execute(
                uri: "/v1/batch",
                method: .post,
                headers: .json,
                body: ByteBuffer(string: "{\n  \"events\": []\n}")
            ) { response in
                let error = try #require(try response.json["error"]?.objectValue)
                #expect(error["pointer"] == "/events")
                #expect(error["line"] == 2 && error["column"] == 13, "\(error)")
            }
            // At the limits it is taken.
            let full = batchBody((0..<3).map { batchEvent(user: "u\($0)", title: "t") })
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: full) { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["accepted"] == 3)
            }
        }
        #expect(service.sessions.count == 3)
    }

    /// Issue 38: an event nesting deeper than a single body may refused the whole batch; only it is refused now.
    @Test func anEventThatNestsTooDeepIsRefusedInItsPlaceAndTheOthersArePushed() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        // 70 levels inside the event object: more than the 64 a body may have.
        let deep = String(repeating: #"{"a": "#, count: 70) + "1" + String(repeating: "}", count: 70)
        let deepEvent = #"{"event": "played song", "user_id": "grace", "parameters": \#(deep)}"#
        // Exactly as deep as a single body may be (64 levels, the event object included) is fine.
        let deepest = String(repeating: #"{"a": "#, count: 62) + "1" + String(repeating: "}", count: 62)
        try await service.application.test(.router) { client in
            let body = batchBody([
                batchEvent(user: "ada", title: "a"), deepEvent,
                #"{"event": "played song", "user_id": "ada", "parameters": {"title": "b", "x": \#(deepest)}}"#,
                "[\(deep)]",
            ])
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["accepted"] == 2)
                #expect(answer["refused"] == 2)
                let results = answer.batchResults
                #expect(results.map { $0["status"] } == [200, 400, 200, 400])
                #expect(results[1]["error"]?.objectValue?["code"] == "malformed_json")
                #expect(results[1]["user_id"] == "grace")
                #expect(results.map { $0.recordTitles.first } == ["a", nil, "b", nil])
            }
            // The same event sent alone is refused the same way.
            try await client.execute(
                uri: "/v1/events",
                method: .post,
                headers: .json,
                body: ByteBuffer(string: deepEvent)
            ) { response in
                #expect(response.status == .badRequest)
                let answer = try response.json
                #expect(answer["error"]?.objectValue?["code"] == "malformed_json")
            }
            // Too deep outside the events, or not JSON elsewhere: the batch cannot be read.
            for broken in [
                #"{"meta": \#(deep), "events": [\#(batchEvent(user: "ada", title: "c"))]}"#,
                #"{"events": [\#(deepEvent), {"event": "x", "user_id": "ada", "n": 01}]}"#,
                #"{"events": [\#(deepEvent), {"event": "x" "user_id": "ada"}]}"#,
                #"{"events": [\#(deepEvent)] "#, #"{"events": [\#(deepEvent)]} x"#,
            ] {
                try await client.execute(
                    uri: "/v1/batch",
                    method: .post,
                    headers: .json,
                    body: ByteBuffer(string: broken)
                ) { response in
                    #expect(response.status == .badRequest, "\(broken.suffix(40))")
                    let answer = try response.json
                    #expect(answer["error"]?.objectValue?["code"] == "malformed_json")
                }
            }
            // Too many events, counted without reading them.
            let many = "{\"events\": [" + Array(repeating: deepEvent, count: 101).joined(separator: ",") + "]}"
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: ByteBuffer(string: many)) {
                response in
                let answer = try response.json
                #expect(answer["error"]?.objectValue?["code"] == "too_many_events")
            }
        }
        #expect(service.sessions.existingSession(for: "grace") == nil)
        #expect(service.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 2)
    }

    @Test func spansFollowTheStructureWithoutBuildingIt() throws {
        let text = #" {"k": "a\"]}", "events": [1, {"x": [true, null]}, "s" , -2.5e3], "e": {}} "#
        let spans = JSONSpans(bytes: Array(text.utf8))
        let document = try #require(spans.document())
        let members = try #require(spans.members(of: document))
        let bytes = Array(text.utf8)
        #expect(members.map { String(decoding: bytes[$0.key], as: UTF8.self) } == [#""k""#, #""events""#, #""e""#])
        let elements = try #require(spans.elements(of: members[1].value))
        #expect(
            elements.map { String(decoding: bytes[$0], as: UTF8.self) } == [
                "1", #"{"x": [true, null]}"#, #""s""#, "-2.5e3",
            ]
        )
        #expect(spans.members(of: members[2].value)?.isEmpty == true)
        for broken in [#"{"a": [1}"#, #"{"a" 1}"#, #"{"a": 1,}"#, "[1 2]", #"{"a": "x}"#, "{} {}", ""] {
            let spans = JSONSpans(bytes: Array(broken.utf8))
            let parsed = spans.document().flatMap { spans.members(of: $0) ?? spans.elements(of: $0).map { _ in [] } }
            #expect(parsed == nil, "\(broken)")
        }
    }

    @Test func aBatchWithoutALiveContainerIsRefusedWith503AndNothingIsPushed() async throws {
        let fixture = try TestService(containers: false)
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.live) { client in
            let body = batchBody([batchEvent(user: "u1", title: "a"), batchEvent(user: "u2", title: "b")])
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .serviceUnavailable)
                let answer = try response.json
                #expect(answer["error"]?.objectValue?["code"] == "no_container")
            }
        }
        #expect(service.sessions.count == 0)
        #expect(service.queue?.lastTicket == 0)
    }
}

/// The batch endpoint on the real executables: the service delivering to the `/users/track` stand-in.
@Suite(.serialized) struct BatchArrivalTests {
    @Test func everyAcknowledgedEventOfABatchArrivesAtTheStandIn() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        // The root package's stand-in, in this process (the one `make bench-service` runs as an executable).
        let standIn = try UsersTrackStandIn()
        try await standIn.withRunning { try await deliverBatches(to: standIn, fixture) }
    }

    private func deliverBatches(to standIn: UsersTrackStandIn, _ fixture: TestService) async throws {
        let service = try ServiceProcess(
            OperatingTests.arguments(fixture),
            environment: ["BRAZE_REST_ENDPOINT": "http://127.0.0.1:\(standIn.port)", "BRAZE_REST_API_KEY": "test"]
        )
        try await service.waitUntilListening()

        var acknowledged: [String] = []
        for batch in 0..<4 {
            // 25 events of 10 users per batch, with a unique title each; one bad event in each batch.
            var events = (0..<25).map { batchEvent(user: "user-\($0 % 10)", title: "id-\(batch)-\($0)") }
            events.insert(#"{"user_id": "user-1"}"#, at: 7)
            let (status, answer) = try await service.post("/v1/batch", body: String(buffer: batchBody(events)))
            #expect(status == 200)
            let results = answer["results"] as? [[String: Any]] ?? []
            #expect(results.count == 26)
            #expect(results.map { $0["status"] as? Int ?? 0 } == (0..<26).map { $0 == 7 ? 400 : 200 })
            for result in results where result["status"] as? Int == 200 {
                let records = result["records"] as? [[String: Any]] ?? []
                acknowledged += records.compactMap { ($0["properties"] as? [String: Any])?["title"] as? String }
            }
        }
        #expect(acknowledged.count == 100)

        // SIGTERM drains the queue into the stand-in before the service exits.
        #expect(await service.stop(SIGTERM) == 0)
        let arrived = Set(standIn.deliveredTitles.keys)
        #expect(Set(acknowledged).subtracting(arrived).isEmpty)
    }
}
