import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird
import Testing

@testable import TagServiceCore

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// Issue 22: a host whose record queue's `run()` is not running (an embedding that forgot to start it)
/// must answer at once and stop on SIGTERM, not hang every request and the shutdown behind them.
@Suite(.serialized) struct QueueNotRunningTests {
    @Test(.timeLimit(.minutes(1))) func aServiceWhoseQueueDoesNotRunAnswers503AndStopsOnSIGTERM() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let (ports, listening) = AsyncStream<Int>.makeStream()
        let service = try await TagServiceApplication(
            configuration: fixture.configuration,
            logger: TestService.logger,
            onServerRunning: { port in listening.yield(port) }
        )
        var withoutQueue = service.application
        withoutQueue.services.removeAll { $0 is RecordQueueService }
        #expect(withoutQueue.services.count == service.application.services.count - 1)
        let application = withoutQueue

        try await withThrowingTaskGroup(of: Void.self) { group in
            // The application's own service group, with its SIGTERM handler, as in `main.swift`.
            group.addTask { try await application.runService() }
            var iterator = ports.makeAsyncIterator()
            let port = try #require(await iterator.next())

            let (status, answer) = try await Self.send(
                port,
                "/v1/events",
                #"{"user_id": "ada", "event": "played song", "parameters": {"title": "t"}}"#
            )
            #expect(status == 503)
            let error = try #require(answer["error"] as? [String: Any])
            #expect(error["code"] as? String == "queue_not_running")

            // A batch waits once, and every pushed event is refused the same way.
            let (batchStatus, batch) = try await Self.send(
                port,
                "/v1/batch",
                #"{"events": [{"user_id": "ada", "event": "played song", "parameters": {"title": "a"}},"#
                    + #"{"user_id": "bob", "event": "played song", "parameters": {"title": "b"}}]}"#
            )
            #expect(batchStatus == 200)
            let codes = (batch["results"] as? [[String: Any]] ?? []).map {
                ($0["error"] as? [String: Any])?["code"] as? String
            }
            #expect(codes == ["queue_not_running", "queue_not_running"])

            let (readyStatus, _) = try await Self.send(port, "/ready", nil)
            #expect(readyStatus == 503)

            // SIGTERM still stops it: no request waits for a queue that never ran.
            kill(getpid(), SIGTERM)
            try await group.waitForAll()
        }
        // Nothing was committed, nothing was lost: the records were never taken by a running queue.
        #expect(service.queue?.statistics.durableRecords == 0)
    }

    /// `POST path` with `body` (a `GET` without one); the status and the body as JSON.
    static func send(_ port: Int, _ path: String, _ body: String?) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        if let body {
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, json)
    }
}
