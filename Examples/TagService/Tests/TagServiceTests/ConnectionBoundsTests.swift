import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Issue 38: slow clients on the real executable. 48 connections sending a body a byte every 2 s kept `/health`
/// from being answered with `--max-connections 32`, and SIGTERM did not end the process: each part of a body
/// started Hummingbird's idle timer again, and nothing bounded a whole request, nor the shutdown's wait.
@Suite(.serialized, .timeLimit(.minutes(2))) struct ConnectionBoundsTests {
    /// A `POST /v1/events` whose body never arrives whole.
    static let slowHead =
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{"

    @Test func bodiesSentAByteAtATimeAreCutAtTheRequestDeadlineAndHealthIsAnswered() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        // Every connection is taken by a dripper; each drip comes well within the idle timeout.
        let service = try ServiceProcess(
            OperatingTests.arguments(
                fixture,
                ["--max-connections", "2", "--request-timeout", "1", "--idle-timeout", "5"]
            )
        )
        try await service.waitUntilListening()
        let drippers = try (0..<2).map { _ in try SlowClient(port: service.port, first: Self.slowHead) }
        async let first = drippers[0].dripUntilClosed()
        async let second = drippers[1].dripUntilClosed()
        // Accepted once a dripper's connection is closed: it waits behind them in the listen backlog.
        let health = try SlowClient(
            port: service.port,
            first: "GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        )
        let healthAnswer = await health.dripUntilClosed(drips: 0)
        for answer in [await first, await second] {
            #expect(answer.hasPrefix("HTTP/1.1 408 "), "\(answer)")
            #expect(answer.contains(#""code":"request_timeout""#))
            #expect(answer.lowercased().contains("connection: close"))
        }
        #expect(healthAnswer.hasPrefix("HTTP/1.1 200 "))
        #expect(healthAnswer.contains(#"{"status":"ok"}"#))
        let (_, metrics) = try await service.getText("/metrics")
        #expect(metrics.contains(#"tagservice_connections_cut_total{reason="request_timeout"} 2"#))
        #expect(await service.stop(SIGTERM) == 0)
    }

    @Test func sigtermCutsWhatIsStillInFlightAfterTheShutdownTimeoutAndKeepsWhatWasAcknowledged() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        // Neither the request deadline nor the idle timeout would end the dripper's request before the test's time
        // limit: only the shutdown's bound does.
        let service = try ServiceProcess(
            OperatingTests.arguments(
                fixture,
                ["--request-timeout", "600", "--idle-timeout", "600", "--shutdown-timeout", "0.5"]
            )
        )
        try await service.waitUntilListening()
        let (status, answer) = try await service.postEvent(user: "ada")
        #expect(status == 200)
        #expect(ServiceProcess.firedNames(answer).count == 2)
        // The dripper's connection is served first (so it is accepted and read), with its slow request's head
        // pipelined behind in the same bytes: once the health answer is back, the server has read that head and
        // the request is in progress, so SIGTERM finds it there (sent after the answer instead, the head could
        // still be in the socket when the server closed its idle connections: 1 run in 4 failed so).
        let dripper = try SlowClient(
            port: service.port,
            first: "GET /health HTTP/1.1\r\nHost: x\r\n\r\n" + Self.slowHead
        )
        #expect(await dripper.read(until: #"{"status":"ok"}"#))
        async let cut = dripper.dripUntilClosed()
        kill(service.process.processIdentifier, SIGTERM)
        let rest = await cut
        #expect(rest.contains("HTTP/1.1 503 "), "\(rest)")
        #expect(rest.contains(#""code":"shutting_down""#))
        #expect(await service.exit() == 0)
        // The acknowledged event's records were drained into the records file before the exit.
        #expect(try fixture.deliveredRecords().count == 2)
    }
}

/// A client on a socket of its own that sends its first bytes, then one byte now and then until the server
/// closes the connection, collecting what the server sends. It drips with `poll`'s timeout on one thread, so no
/// byte is ever written to a descriptor closed meanwhile.
final class SlowClient: @unchecked Sendable {
    private let fd: Int32
    private var received: [UInt8] = []

    init(port: Int, first: String) throws {
        fd = try ServingTests.connect(port)
        send(first)
    }

    deinit { close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        _ = Glibc.send(fd, bytes, bytes.count, Int32(MSG_NOSIGNAL))
    }

    /// Reads until `text` arrived; `false` if the connection closed first. What was read is kept.
    func read(until text: String) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: self.received, as: UTF8.self).contains(text) {
                    let count = Glibc.read(self.fd, &buffer, buffer.count)
                    if count <= 0 { return continuation.resume(returning: false) }
                    self.received += buffer[0..<count]
                }
                self.received = []
                continuation.resume(returning: true)
            }.start()
        }
    }

    /// Sends a space every `interval` seconds, `drips` at most, and reads until the server closes the connection;
    /// returns what it sent.
    func dripUntilClosed(drips: Int = 200, interval: Double = 0.2) async -> String {
        await withCheckedContinuation { continuation in
            Thread {
                var left = drips
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    var descriptor = pollfd(fd: self.fd, events: Int16(POLLIN), revents: 0)
                    let ready = poll(&descriptor, 1, left > 0 ? Int32(interval * 1000) : -1)
                    if ready > 0 {
                        let count = Glibc.read(self.fd, &buffer, buffer.count)
                        if count <= 0 { break }
                        self.received += buffer[0..<count]
                    } else if ready == 0 {
                        left -= 1
                        self.send(" ")
                    } else if errno != EINTR {
                        break
                    }
                }
                continuation.resume(returning: String(decoding: self.received, as: UTF8.self))
            }.start()
        }
    }
}
