import ContainerKit
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import PostgresTestHarness
import Testing

@testable import TagServiceCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// `--postgres` when PostgreSQL is slow, refuses the service's role, or serves one user through two instances
/// at once (issue 40): what the client and the load balancer see.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct PostgresFailureModeTests {
    /// A table locked by someone else (a migration, a `VACUUM FULL`): a request whose commit waits on it is
    /// answered 503 `postgres_timeout` within `--postgres-timeout` (1 s here), `/ready` answers 503 naming
    /// `postgres_timeout` while the lock is held, a new user's request is 503 `sessions_unavailable`, and
    /// once the lock is released the service is ready again by itself and the next event is acknowledged.
    @Test func aLockedTableAnswers503PostgresTimeoutWithinTheDeadlineAndReadyFollows() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let url = try await cluster.createDatabase()
        var fixture = try TestService.postgres(url, name: "a")
        let deadline = Duration.seconds(1)
        fixture.configuration.postgresCallTimeout = deadline
        defer { fixture.remove() }
        let service = try await fixture.make()
        let scaleOut = try #require(service.scaleOut)
        let database = try #require(url.split(separator: "/").last.map(String.init))
        try await service.application.test(.live) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "warm")) {
                response in
                #expect(response.status == .ok)
            }
            let lock = try await cluster.lock(table: "ck_session_changes", database: database)
            var lockHeld = true
            defer { if lockHeld { Task { try? await lock.release() } } }

            // A user whose session is in memory: the push runs, its commit passes the deadline.
            let started = ContinuousClock.now
            let refused = eventBody(user: "warm", parameters: #"{"title": "refused"}"#)
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: refused) {
                response in
                #expect(response.status == .serviceUnavailable)
                let answer = try response.json
                #expect(answer.errorCode == "postgres_timeout")
            }
            // The property under test is the deadline itself: the answer comes within it (plus the server's
            // time to answer on a busy machine), not after the lock's 25 s.
            #expect(ContinuousClock.now - started < deadline + .seconds(4))
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try response.json
                #expect(body["postgres_available"] == false)
                #expect(body["postgres_error"] == "postgres_timeout")
            }
            // A user PostgreSQL has to be asked about: the session cannot be loaded.
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "cold")) {
                response in
                #expect(response.status == .serviceUnavailable)
                let answer = try response.json
                #expect(answer.errorCode == "sessions_unavailable")
            }

            lockHeld = false
            try await lock.release()
            await scaleOut.store.waitUntilAvailable()
            for user in ["warm", "cold"] {
                try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: user))
                { response in
                    #expect(response.status == .ok)
                }
            }
            // Ready again: PostgreSQL answers, and a session load succeeded since the one that failed.
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .ok)
                let body = try response.json
                #expect(body["postgres_error"] == nil)
            }
        }
        // The refused push left nothing: "warm" holds its two acknowledged events.
        #expect(service.sessions.existingSession(for: "warm")?.snapshot().eventNumber == 2)
        #expect(scaleOut.store.statistics.timedOutCalls > 0)
        let payloads = try await cluster.psql("SELECT payload FROM ck_records", database: database)
        #expect(!payloads.contains(#""refused""#))
    }

    /// One user's 64 requests at once, spread over two instances (a load balancer without affinity, or a user
    /// moving): the instances fence each other's stale copies, and every request is answered 200 — a refused
    /// write is pushed again on the newest session, the client never sees it — and each event is in the
    /// user's session exactly once.
    @Test func sixtyFourRequestsOfOneUserOverTwoInstancesAreAllAcknowledged() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let url = try await cluster.createDatabase()
        let first = try TestService.postgres(url, name: "a")
        let second = try TestService.postgres(url, name: "b")
        defer {
            first.remove()
            second.remove()
        }
        let a = try await first.make()
        let b = try await second.make()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.httpMaximumConnectionsPerHost = 64
        configuration.timeoutIntervalForRequest = 120
        let session = URLSession(configuration: configuration)
        try await a.application.test(.live) { clientA in
            try await b.application.test(.live) { clientB in
                let ports = [try #require(clientA.port), try #require(clientB.port)]
                let answers = try await withThrowingTaskGroup(of: (Int, String).self) { group in
                    for index in 0..<64 {
                        group.addTask {
                            var request = URLRequest(
                                url: URL(string: "http://127.0.0.1:\(ports[index % 2])/v1/events")!
                            )
                            request.httpMethod = "POST"
                            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                            request.setValue("shared-user", forHTTPHeaderField: "X-User-ID")
                            request.httpBody = Data(
                                #"{"event": "played song", "parameters": {"title": "t\#(index)"}}"#.utf8
                            )
                            let (data, response) = try await session.data(for: request)
                            return (
                                (response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self)
                            )
                        }
                    }
                    return try await group.reduce(into: []) { $0.append($1) }
                }
                let refused = answers.filter { $0.0 != 200 }
                #expect(refused.isEmpty, "\(refused.count) of 64 refused, first: \(refused.first?.1 ?? "")")
                // Each of the 64 events is in the newest session once: loaded fresh from PostgreSQL (while the
                // store still runs: it stops with the application).
                let stored = try #require(try await a.scaleOut?.store.sessions.load(userID: "shared-user"))
                #expect(stored.snapshot.eventNumber == 64)
            }
        }
        session.finishTasksAndInvalidate()
        let database = try #require(url.split(separator: "/").last.map(String.init))
        let titles = try await cluster.psql(
            "SELECT count(DISTINCT payload::jsonb -> 'properties' ->> 'title') FROM ck_records",
            database: database
        )
        #expect(titles == "64")
    }

    /// The real executable with a role that may not create the tables (PostgreSQL 15's default for `public`)
    /// and a password in the URL: `/ready` answers 503 naming `postgres_permission_denied`, an event is
    /// refused 503 `sessions_unavailable`, and no answer holds the URL, the password, the address or the
    /// server's words; the log says what to grant — for the lease connection too, not "lost its lease
    /// connection" — and never holds the password.
    @Test func aRoleWithoutPrivilegesIsReportedAsSuchAndNoAnswerHoldsTheURL() async throws {
        let cluster = try await PostgresTestCluster.start()
        defer { cluster.remove() }
        let url = try await cluster.createDatabase()
        let database = try #require(url.split(separator: "/").last.map(String.init))
        let role = "ck_limited_\(UUID().uuidString.prefix(8).lowercased())"
        try await cluster.psql("CREATE ROLE \(role) LOGIN PASSWORD 's3cret-pw'")
        try await cluster.psql("REVOKE CREATE ON SCHEMA public FROM PUBLIC", database: database)
        let limitedURL = "postgres://\(role):s3cret-pw@127.0.0.1:\(cluster.port)/\(database)"
        let fixture = try TestService()
        defer { fixture.remove() }
        let process = try ServiceProcess([
            "--containers", fixture.configuration.containersDirectory, "--queue", fixture.configuration.queueDirectory,
            "--postgres", limitedURL, "--postgres-timeout", "2", "--instance-name", "limited",
        ])
        try await process.waitUntilListening()
        let grant = "GRANT USAGE, CREATE ON SCHEMA public TO \(role)"
        // The lease connection's first failure, as a privilege to grant (maybe logged before `listening`).
        let leaseRefusal = "refuses the delivery's lease connection a privilege"
        var refusal = process.log.first { $0.contains(leaseRefusal) }
        if refusal == nil { refusal = await process.nextLine(containing: leaseRefusal) }
        #expect(refusal?.contains(grant) == true, "\(refusal ?? "no such line")")

        let (eventStatus, eventText) = try await process.post(
            "/v1/events",
            body: #"{"user_id": "u1", "event": "played song", "parameters": {"title": "t"}}"#
        )
        #expect(eventStatus == 503)
        #expect((eventText["error"] as? [String: Any])?["code"] as? String == "sessions_unavailable")
        // Asked after the refused load: by then the store has met the refusal itself (the lease's line above can
        // come first, from the lease connection alone).
        let (readyStatus, readyText) = try await process.getText("/ready")
        #expect(readyStatus == 503)
        let eventAnswer = String(describing: eventText)
        let (_, metricsText) = try await process.getText("/metrics")
        for (name, text) in [("/ready", readyText), ("the event's answer", eventAnswer), ("/metrics", metricsText)] {
            for secret in [limitedURL, "s3cret", "postgres://", "127.0.0.1", "\(cluster.port)", database, "sqlstate"] {
                #expect(!text.contains(secret), "\(name) holds '\(secret)': \(text)")
            }
        }
        let ready = try JSONSerialization.jsonObject(with: Data(readyText.utf8)) as? [String: Any]
        #expect(ready?["postgres_error"] as? String == "postgres_permission_denied", "\(readyText)")

        #expect(await process.stop(SIGTERM) == 0)
        #expect(!process.log.contains { $0.contains("s3cret") })
        #expect(!process.log.contains { $0.contains("lost its lease connection") })
        #expect(process.log.contains { $0.contains("cannot load a session") && $0.contains(grant) })
    }
}

extension ValueMap {
    /// The `error.code` of an error answer.
    fileprivate var errorCode: String? { self["error"]?.objectValue?["code"]?.stringValue }
}
