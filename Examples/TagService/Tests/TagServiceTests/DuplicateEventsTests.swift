import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

/// A `POST /v1/events` body with a `message_id` (its JSON text as given: a string's quotes included).
func eventBody(user: String, title: String = "So What", messageID: String) -> ByteBuffer {
    ByteBuffer(
        string: #"{"user_id": "\#(user)", "event": "played song", "parameters": {"title": "\#(title)"}, "#
            + #""message_id": \#(messageID)}"#
    )
}

/// The record IDs a (non-duplicate) answer lists, in order.
extension ValueMap {
    var recordIDs: [String] { (self["records"]?.arrayValue ?? []).compactMap { $0.objectValue?["id"]?.stringValue } }

    /// The record IDs a duplicate's answer names, tag by tag.
    var duplicateRecordIDs: [String] {
        (self["fired"]?.arrayValue ?? []).flatMap { tag in
            (tag.objectValue?["record_ids"]?.arrayValue ?? []).compactMap(\.stringValue)
        }
    }
}

/// Events with a `message_id` (issue 41): a retry is answered with the original outcome and `"duplicate": true`,
/// and is not pushed again; a batch deduplicates each item; a bad `message_id` is refused.
@Suite struct DuplicateEventsTests {
    @Test func aRetriedEventIsAnsweredAsADuplicateAndPushedOnce() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        let stored = try await service.application.test(.router) { client in
            var original: ValueMap = [:]
            let body = eventBody(user: "ada", messageID: #""m-1""#)
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .ok)
                original = try response.json
                #expect(original["duplicate"] == nil)
                #expect(!original.recordIDs.isEmpty)
            }
            // The retry says something else: nothing of it is pushed.
            let retry = eventBody(user: "ada", title: "Blue in Green", messageID: #""m-1""#)
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: retry) { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["duplicate"] == true && answer["durable"] == true && answer["user_id"] == "ada")
                #expect(answer["records"] == .array([]))
                #expect(answer.duplicateRecordIDs == original.recordIDs)
                let tagIDs = (answer["fired"]?.arrayValue ?? []).map { $0.objectValue?["tag_id"] ?? .null }
                let originalTagIDs = (original["fired"]?.arrayValue ?? []).map { $0.objectValue?["tag_id"] ?? .null }
                #expect(tagIDs == originalTagIDs)
                #expect(answer["original_time"].map { if case .int = $0 { true } else { false } } == true)
            }
            try await client.execute(uri: "/metrics", method: .get) { response in
                let lines = Set(String(buffer: response.body).split(separator: "\n").map(String.init))
                #expect(lines.contains("tagservice_events_duplicate_total 1"))
            }
            return original.recordIDs.count
        }
        let session = try #require(service.sessions.existingSession(for: "ada"))
        #expect(session.snapshot().eventNumber == 1 && session.get("title") == "So What")
        #expect(service.queue?.statistics.durableRecords == stored, "stored once")
    }

    @Test func withoutAMessageIDARetryIsPushedAgain() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            for _ in 0..<2 {
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada"))
                { response in
                    #expect(response.status == .ok)
                    let answer = try response.json
                    #expect(answer["duplicate"] == nil)
                }
            }
        }
        #expect(service.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 2)
    }

    @Test func aBatchDeduplicatesEachItemAlsoTwoItemsWithOneIDAndARetriedBatch() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        let events = [
            #"{"user_id": "ada", "event": "played song", "parameters": {"title": "a"}, "message_id": "m-1"}"#,
            #"{"user_id": "ada", "event": "played song", "parameters": {"title": "a"}, "message_id": "m-1"}"#,
            #"{"user_id": "bob", "event": "played song", "parameters": {"title": "b"}, "message_id": "m-1"}"#,
            #"{"user_id": "ada", "event": "played song", "parameters": {"title": "c"}, "message_id": "m-2"}"#,
            #"{"user_id": "ada", "event": "played song", "parameters": {"title": "d"}}"#,
        ]
        try await service.application.test(.router) { client in
            var first: [ValueMap] = []
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: batchBody(events)) {
                response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["accepted"] == 5 && answer["refused"] == 0)
                first = answer.batchResults
                #expect(first.map { $0["duplicate"] == true } == [false, true, false, false, false])
                #expect(first[1].duplicateRecordIDs == first[0].recordIDs)
            }
            // The client never got that answer and sends the batch again: every item with an ID is a duplicate.
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: batchBody(events)) {
                response in
                let results = try response.json.batchResults
                #expect(results.map { $0["duplicate"] == true } == [true, true, true, true, false])
                #expect(
                    Array(results.map(\.duplicateRecordIDs).prefix(4))
                        == [first[0], first[0], first[2], first[3]].map(\.recordIDs)
                )
                #expect(results.allSatisfy { $0["status"] == 200 })
            }
        }
        #expect(service.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 3 + 1)
        #expect(service.sessions.existingSession(for: "bob")?.snapshot().eventNumber == 1)
        #expect(service.sessions.existingSession(for: "ada")?.get("title") == "d")
    }

    @Test(arguments: [
        (#"7"#, "'message_id' must be a string of 1 to 256 bytes without NUL, not number"),
        (#""""#, "'message_id' is refused: an event id must not be empty"),
        (
            "\"\(String(repeating: "x", count: 257))\"",
            "'message_id' is refused: the event id '\(String(repeating: "x", count: 32))…' is 257 bytes long; "
                + "the most is 256"
        ),
        (#""a\u0000b""#, "'message_id' is refused: the event id 'a\u{0}b' contains a NUL character"),
        (#"["m-1"]"#, "'message_id' must be a string of 1 to 256 bytes without NUL, not array"),
    ])
    func aBadMessageIDIsRefusedWith400(messageID: String, problem: String) async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            let body = eventBody(user: "ada", messageID: messageID)
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) { response in
                #expect(response.status == .badRequest)
                let error = try #require(try response.json["error"]?.objectValue)
                #expect(error["code"] == "invalid_event_id")
                // The whole message: what is wrong, said once.
                #expect(error["message"]?.stringValue == problem)
            }
            let batch = batchBody([
                batchEvent(user: "ada", title: "a"),
                #"{"user_id": "ada", "event": "played song", "message_id": \#(messageID)}"#,
            ])
            try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: batch) { response in
                #expect(response.status == .ok)
                let results = try response.json.batchResults
                #expect(results.map { $0["status"] } == [200, 400])
                let error = try #require(results[1]["error"]?.objectValue)
                #expect(error["code"] == "invalid_event_id" && results[1]["user_id"] == "ada")
                #expect(error["message"]?.stringValue == "event 1: \(problem)")
            }
        }
        #expect(service.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 1, "nothing of them pushed")
    }

    @Test func theEventIDWindowIsReadFromTheCommandLineAndAForgottenIDIsPushedAgain() async throws {
        let parsed = try TagServiceConfiguration.parse(
            ["--containers", "/c", "--queue", "/q", "--event-id-window", "3600", "--braze-pending-bytes", "4096"],
            environment: ["TAGSERVICE_EVENT_ID_COUNT": "2"]
        )
        guard case .run(let parsedConfiguration) = parsed else {
            Issue.record("expected a configuration")
            return
        }
        #expect(parsedConfiguration.eventIDWindow.duration == .seconds(3600))
        #expect(parsedConfiguration.eventIDWindow.maximumCount == 2)
        #expect(parsedConfiguration.brazeProviderConfiguration.maximumPendingBytes == 4096)
        for bad in [["--event-id-count", "0"], ["--event-id-count", "100001"], ["--event-id-window", "-1"]] {
            #expect(throws: UsageError.self) {
                try TagServiceConfiguration.parse(["--containers", "/c", "--queue", "/q"] + bad, environment: [:])
            }
        }

        // Two IDs remembered: the third forgets the first, whose retry is then pushed again.
        var fixture = try TestService()
        fixture.configuration.eventIDWindow = parsedConfiguration.eventIDWindow
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.router) { client in
            for (id, duplicate) in [("m-1", false), ("m-2", false), ("m-2", true), ("m-3", false), ("m-1", false)] {
                let body = eventBody(user: "ada", messageID: "\"\(id)\"")
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: body) { response in
                    #expect(response.status == .ok)
                    let expected: Value? = duplicate ? .bool(true) : nil
                    let answer = try response.json
                    #expect(answer["duplicate"] == expected, "\(id)")
                }
            }
        }
        let session = try #require(service.sessions.existingSession(for: "ada"))
        #expect(session.snapshot().eventNumber == 4)
        #expect(session.seenEventIDs.map(\.id) == ["m-3", "m-1"])
    }
}
