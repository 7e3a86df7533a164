import ContainerKit
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

@Suite struct OperationsEndpointTests {
    @Test func healthAnswersWhileAlive() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            try await client.execute(uri: "/health", method: .get) { response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer["status"] == "ok")
            }
        }
    }

    @Test func readyOnceAContainerIsLiveAndTheQueueIsWritable() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .ok)
                let body = try response.json
                #expect(body["ready"] == true)
                #expect(body["containers"] == .array([.string(TestService.fixtureID)]))
                #expect(body["queue_writable"] == true)
            }
        }
    }

    /// Uptime checkers and load balancers that probe with `HEAD` get the status `GET` would, with no body; a method
    /// no route takes is still not found.
    @Test func headAnswersLikeGetWithoutTheBody() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.live) { client in
            for path in ["/health", "/ready", "/metrics"] {
                let get = try await client.execute(uri: path, method: .get)
                try await client.execute(uri: path, method: .head) { response in
                    #expect(response.status == get.status, "\(path)")
                    #expect(response.body.readableBytes == 0, "\(path)")
                    #expect(response.headers[.contentType] == get.headers[.contentType], "\(path)")
                }
            }
            try await client.execute(uri: "/v1/events", method: .head) { response in
                #expect(response.status == .notFound)
            }
        }
    }

    /// A session store that cannot load (the queue's segments that hold the session moved away) makes `/ready`
    /// 503 with `sessions_healthy: false`, and the service ready again once a load works (issue 38).
    @Test func notReadyWhileTheSessionStoreCannotLoad() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            _ = try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada"))
        }
        // A restarted service holds no session in memory: ada's is loaded from the queue's log, whose segments
        // are away for a moment (a disk that fails, an operator's mistake).
        let service = try await fixture.make()
        let directory = fixture.configuration.queueDirectory
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory).filter {
            $0.hasPrefix("segment-")
        }
        #expect(!segments.isEmpty)
        try await service.application.test(.router) { client in
            for segment in segments {
                try FileManager.default.moveItem(
                    atPath: directory + "/" + segment,
                    toPath: directory + "/away-" + segment
                )
            }
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                #expect(response.status == .serviceUnavailable)
                let body = try response.json
                #expect(body["error"]?.objectValue?["code"] == "sessions_unavailable")
            }
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let body = try response.json
                #expect(body["sessions_healthy"] == false)
            }
            for segment in segments {
                try FileManager.default.moveItem(
                    atPath: directory + "/away-" + segment,
                    toPath: directory + "/" + segment
                )
            }
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                #expect(response.status == .ok)
            }
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .ok)
                let body = try response.json
                #expect(body["sessions_healthy"] == true)
            }
        }
        #expect(service.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 2)
    }

    @Test func notReadyWithoutAContainer() async throws {
        let fixture = try TestService(containers: false)
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            try await client.execute(uri: "/ready", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let answer = try response.json
                #expect(answer["ready"] == false)
            }
        }
    }

    @Test func withOpenEveryOpenedContainerMustBeLive() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        // The bundled default of GTM-TAGSVC1 is in the containers directory; GTM-ABSENT1 is nowhere (no
        // network source), so the tag manager never makes it live.
        fixture.configuration.openIDs = [TestService.fixtureID, "GTM-ABSENT1"]
        fixture.configuration.openTimeout = .milliseconds(500)
        let service = try await fixture.make()
        #expect(service.manager.container(id: TestService.fixtureID) != nil)
        try await service.application.test(.router) { client in
            try await client.execute(uri: "/ready?wait=0.05", method: .get) { response in
                #expect(response.status == .serviceUnavailable)
                let answer = try response.json
                #expect(answer["containers"] == .array([.string(TestService.fixtureID)]))
                #expect(answer["missing"] == .array(["GTM-ABSENT1"]))
            }
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                #expect(response.status == .ok)
                let answer = try response.json
                #expect(answer.firedNames == ["Braze - played song", "Braze - first play"])
            }
        }
    }

    @Test func aReadyWaitThatIsNotANumberOfSecondsIsRefusedNotReadAsNoWait() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            for wait in ["10s", "-1", "nan", ""] {
                try await client.execute(uri: "/ready?wait=\(wait)", method: .get) { response in
                    #expect(response.status == .badRequest, "wait=\(wait)")
                    let answer = try response.json
                    let error = try #require(answer["error"]?.objectValue)
                    #expect(error["code"] == "invalid_parameter")
                    #expect(error["message"] == .string("'wait' must be a number of seconds from 0, not '\(wait)'"))
                }
            }
            try await client.execute(uri: "/ready?wait=0", method: .get) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func metricsCountEventsTagsRecordsAndSessions() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "a"))
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "a"))
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: ByteBuffer(string: "{"))
            try await client.execute(uri: "/metrics", method: .get) { response in
                #expect(response.status == .ok)
                #expect(response.headers[.contentType]?.hasPrefix("text/plain") == true)
                let lines = Set(String(buffer: response.body).split(separator: "\n").map(String.init))
                #expect(lines.contains("tagservice_events_total 2"))
                #expect(lines.contains(#"tagservice_tags_total{status="fired"} 3"#))
                #expect(lines.contains(#"tagservice_requests_total{route="/v1/events",status="400"} 1"#))
                #expect(lines.contains(#"tagservice_requests_total{route="/v1/events",status="200"} 2"#))
                #expect(lines.contains("tagservice_records_enqueued_total 3"))
                #expect(lines.contains("tagservice_records_durable_total 3"))
                #expect(lines.contains("tagservice_sessions_live 1.0"))
                #expect(lines.contains { $0.hasPrefix("tagservice_sessions_unsaved ") })
                #expect(lines.contains("tagservice_containers_live 1.0"))
                #expect(lines.contains { $0.hasPrefix("tagservice_queue_backlog_records ") })
                #expect(lines.contains { $0.hasPrefix("tagservice_records_delivered_total ") })
            }
        }
    }
}
