import ContainerKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresTestHarness
import Testing

@testable import TagServiceCore

/// `--postgres`: two instances over one throw-away PostgreSQL cluster on 127.0.0.1.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PostgresModeTests {
    private func instance(_ url: String, name: String) throws -> TestService {
        try TestService.postgres(url, name: name)
    }

    /// Runs `body` with instances "a" and "b" over one database of a throw-away cluster.
    private func withTwoInstances(
        _ body: (TagServiceApplication, TagServiceApplication) async throws -> Void
    ) async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let url = try await cluster.createDatabase()
        let first = try instance(url, name: "a")
        let second = try instance(url, name: "b")
        defer {
            first.remove()
            second.remove()
        }
        try await body(try await first.make(), try await second.make())
    }

    private func userRequest(_ user: String, body: ByteBuffer) -> (HTTPFields, ByteBuffer) {
        var headers = HTTPFields()
        headers[HTTPField.Name("X-User-ID")!] = user
        headers[.contentType] = "application/json"
        return (headers, body)
    }

    @Test func aUsersSessionFollowsThemToAnotherInstance() async throws {
        try await withTwoInstances { a, b in
            try await a.application.test(.live) { clientA in
                let (headers, body) = userRequest("u1", body: eventBody(user: "u1"))
                try await clientA.execute(uri: "/v1/events", method: .post, headers: headers, body: body) { response in
                    #expect(response.status == .ok)
                    let json1 = try response.json
                    #expect(json1.firedNames == ["Braze - played song", "Braze - first play"])
                }
            }
            try await b.application.test(.live) { clientB in
                // The path form, and no user_id in the body: the once-per-load tag does not fire again.
                try await clientB.execute(
                    uri: "/v1/users/u1/events",
                    method: .post,
                    headers: .json,
                    body: ByteBuffer(string: #"{"event": "played song", "parameters": {"title": "Blue in Green"}}"#)
                ) { response in
                    #expect(response.status == .ok)
                    let json2 = try response.json
                    #expect(json2.firedNames == ["Braze - played song"])
                    let json3 = try response.json
                    #expect(json3["user_id"] == "u1")
                }
                #expect(b.sessions.existingSession(for: "u1")?.snapshot().eventNumber == 2)
                try await clientB.execute(uri: "/metrics", method: .get) { response in
                    let text = String(buffer: response.body)
                    #expect(text.contains("containerkit_postgres_commits_total 1"))
                }
            }
        }
    }

    @Test func aBodyWhoseUserDisagreesWithTheRoutedUserIsRefused() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let fixture = try instance(try await cluster.createDatabase(), name: "a")
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await service.application.test(.live) { client in
            let (headers, body) = userRequest("u2", body: eventBody(user: "u1"))
            try await client.execute(uri: "/v1/events", method: .post, headers: headers, body: body) { response in
                #expect(response.status == .badRequest)
                let json4 = try response.json
                #expect(json4["error"]?.objectValue?["code"] == "user_id_mismatch")
            }
            try await client.execute(
                uri: "/v1/users/u2/events",
                method: .post,
                headers: .json,
                body: eventBody(user: "u1")
            ) {
                response in
                #expect(response.status == .badRequest)
            }
        }
        #expect(service.sessions.count == 0)
    }

    /// Runs `body` with instance "a" over a database of its own throw-away cluster.
    private func withOneInstance(
        _ body: (PostgresTestCluster, TestService, TagServiceApplication, PostgresScaleOut) async throws -> Void
    ) async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let fixture = try instance(try await cluster.createDatabase(), name: "a")
        defer { fixture.remove() }
        let service = try await fixture.make()
        try await body(cluster, fixture, service, try #require(service.scaleOut))
    }

    /// Issue 38: the path's id was used percent-encoded, a repeated header joined, a header and a path that
    /// disagree resolved silently. The same rules as the local mode (``checkUserIDRules(_:)``).
    @Test func theUserIDRulesAreTheLocalModes() async throws {
        try await withOneInstance { _, _, service, _ in
            try await service.application.test(.live) { client in
                try await checkUserIDRules(client)
            }
            #expect(service.sessions.count == 2)
        }
    }

    @Test func aLostPostgresGives503AndTheServiceRecoversByItself() async throws {
        try await withOneInstance { cluster, fixture, service, scaleOut in
            @Sendable func titled(_ title: String) -> ByteBuffer {
                eventBody(user: "u1", parameters: #"{"title": "\#(title)"}"#)
            }
            try await service.application.test(.live) { client in
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: titled("before")) {
                    response in
                    #expect(response.status == .ok)
                }
                try await client.execute(uri: "/ready", method: .get) { response in
                    #expect(response.status == .ok)
                }
                try await cluster.crash()
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: titled("refused")) {
                    response in
                    #expect(response.status == .serviceUnavailable)
                }
                try await client.execute(uri: "/ready", method: .get) { response in
                    #expect(response.status == .serviceUnavailable)
                }
                try await cluster.startServer()
                await scaleOut.store.waitUntilAvailable()
                try await client.execute(uri: "/ready", method: .get) { response in
                    #expect(response.status == .ok)
                }
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: titled("after")) {
                    response in
                    #expect(response.status == .ok)
                    // The refused event left no trace in the session: this is its second acknowledged event.
                    let json5 = try response.json
                    #expect(json5.firedNames == ["Braze - played song"])
                }
                #expect(service.sessions.existingSession(for: "u1")?.snapshot().eventNumber == 2)
            }
            // What PostgreSQL holds is what was acknowledged: the refused event's records are not there.
            let database = try #require(fixture.configuration.postgresURL?.split(separator: "/").last.map(String.init))
            let payloads = try await cluster.psql("SELECT payload FROM ck_records", database: database)
            #expect(!payloads.contains(#""refused""#))
            #expect(payloads.contains(#""before""#) && payloads.contains(#""after""#))
        }
    }

    @Test func metricsShowTheStoresCommitsLatencyUndeliveredRowsAndLeases() async throws {
        try await withOneInstance { _, _, service, scaleOut in
            try await service.application.test(.live) { client in
                for user in ["u1", "u2", "u1"] {
                    try await client.execute(
                        uri: "/v1/events",
                        method: .post,
                        headers: .json,
                        body: eventBody(user: user)
                    ) {
                        response in
                        #expect(response.status == .ok)
                    }
                }
                // Delivered and acknowledged: the partitions are leased, nothing is left undelivered.
                try await scaleOut.pipeline.flush()
                let statistics = scaleOut.store.statistics
                try await client.execute(uri: "/metrics", method: .get) { response in
                    var values: [String: Double] = [:]
                    for line in String(buffer: response.body).split(separator: "\n") where !line.hasPrefix("#") {
                        let parts = line.split(separator: " ")
                        if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
                    }
                    #expect(values["containerkit_postgres_commits_total"] == Double(statistics.commits))
                    #expect(statistics.commits >= 1)
                    #expect(values["containerkit_postgres_committed_rows_total"] == Double(statistics.committedRows))
                    #expect(statistics.committedRows >= 3)
                    #expect(values["containerkit_postgres_rows_per_commit"] == statistics.rowsPerCommit)
                    #expect((values["containerkit_postgres_commit_seconds_total"] ?? 0) > 0)
                    #expect((values["containerkit_postgres_commit_seconds_max"] ?? 0) > 0)
                    #expect(values["containerkit_postgres_undelivered_rows"] == 0)
                    #expect(values["containerkit_postgres_leases_held"] == 4)
                    #expect(values["containerkit_postgres_available"] == 1)
                }
            }
        }
    }

    @Test func sessionsStayUnderTheCapAndEvictedUsersContinueFromPostgres() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        var fixture = try instance(try await cluster.createDatabase(), name: "a")
        fixture.configuration.maximumSessions = 2
        defer { fixture.remove() }
        let service = try await fixture.make()
        let users = (1...6).map { "user-\($0)" }
        try await service.application.test(.live) { client in
            for round in 1...2 {
                for user in users {
                    try await client.execute(
                        uri: "/v1/events",
                        method: .post,
                        headers: .json,
                        body: eventBody(user: user)
                    ) {
                        response in
                        #expect(response.status == .ok)
                        // The once-per-load tag fires on a user's first event only, though the session was
                        // evicted in between and loaded again.
                        let fired = try response.json.firedNames
                        #expect(fired.contains("Braze - first play") == (round == 1))
                    }
                    #expect(service.sessions.count <= 2)
                }
            }
        }
        #expect(service.sessions.statistics.loaded >= 4)
        #expect(try #require(service.scaleOut).store.statistics.fencedSessions == 0)
    }

    @Test func aBatchFollowsTheRoutedUserRulesAndCommitsEachUsersEventsInOrder() async throws {
        try await withTwoInstances { a, b in
            try await a.application.test(.live) { client in
                // Routed to u1 by the header: an event without user_id is u1's, one naming u2 is refused alone.
                let routed = batchBody([
                    batchEvent(user: "u1", title: "a"),
                    #"{"event": "played song", "parameters": {"title": "b"}}"#,
                    batchEvent(user: "u2", title: "c"),
                    batchEvent(user: "u1", title: "d"),
                ])
                let (headers, body) = userRequest("u1", body: routed)
                try await client.execute(uri: "/v1/batch", method: .post, headers: headers, body: body) { response in
                    #expect(response.status == .ok)
                    let results = try response.json.batchResults
                    #expect(results.map { $0["status"] } == [200, 200, 400, 200])
                    #expect(results[2]["error"]?.objectValue?["code"] == "user_id_mismatch")
                    #expect(results.map { $0.recordTitles.first } == ["a", "b", nil, "d"])
                    #expect(results.map { $0["durable"] } == [true, true, nil, true])
                }
                // Many users, without routing.
                let mixed = batchBody([
                    batchEvent(user: "u2", title: "x"), batchEvent(user: "u3", title: "y"),
                    batchEvent(user: "u2", title: "z"),
                ])
                try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: mixed) { response in
                    #expect(response.status == .ok)
                    let results = try response.json.batchResults
                    #expect(results.map { $0["user_id"]?.stringValue } == ["u2", "u3", "u2"])
                    #expect(results.map { $0.firedNames.count } == [2, 2, 1])
                }
            }
            // Another instance finds every user's session as the batches left it.
            try await b.application.test(.live) { client in
                try await client.execute(
                    uri: "/v1/users/u1/batch",
                    method: .post,
                    headers: .json,
                    body: batchBody([#"{"event": "played song", "parameters": {"title": "e"}}"#])
                ) { response in
                    #expect(response.status == .ok)
                    let answer = try response.json
                    #expect(answer.batchResults.first?.firedNames == ["Braze - played song"])
                }
                let mixed = batchBody([batchEvent(user: "u2", title: "w"), batchEvent(user: "u3", title: "v")])
                try await client.execute(uri: "/v1/batch", method: .post, headers: .json, body: mixed) { response in
                    #expect(response.status == .ok)
                }
            }
            #expect(b.sessions.existingSession(for: "u1")?.snapshot().eventNumber == 4)
            #expect(b.sessions.existingSession(for: "u2")?.snapshot().eventNumber == 3)
            #expect(b.sessions.existingSession(for: "u3")?.snapshot().eventNumber == 2)
        }
    }

    @Test func aBatchOnAStaleSessionIsPushedAgainOnTheNewestOne() async throws {
        try await withTwoInstances { a, b in
            try await a.application.test(.live) { clientA in
                try await clientA.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "u1"))
                { response in
                    #expect(response.status == .ok)
                }
                // Meanwhile u1 is served by b: a's copy of the session is one event behind.
                try await b.application.test(.live) { clientB in
                    try await clientB.execute(
                        uri: "/v1/events",
                        method: .post,
                        headers: .json,
                        body: eventBody(user: "u1")
                    ) {
                        response in
                        #expect(response.status == .ok)
                    }
                }
                let body = batchBody([batchEvent(user: "u1", title: "a"), batchEvent(user: "u1", title: "b")])
                try await clientA.execute(uri: "/v1/batch", method: .post, headers: .json, body: body) { response in
                    #expect(response.status == .ok)
                    let results = try response.json.batchResults
                    #expect(results.map { $0["status"] } == [200, 200])
                    #expect(results.map { $0.recordTitles.first } == ["a", "b"])
                }
            }
            // Both events were pushed on the newest session: it holds all four.
            #expect(a.sessions.existingSession(for: "u1")?.snapshot().eventNumber == 4)
        }
    }
}
