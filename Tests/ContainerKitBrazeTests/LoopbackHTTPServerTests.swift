import ContainerKit
import ContainerKitHTTP
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Sends raw bytes to 127.0.0.1:`port` and reads until the server closes the connection.
func rawExchange(port: UInt16, _ text: String) -> String? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = port.bigEndian
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { return nil }
    let bytes = Array(text.utf8)
    guard bytes.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == bytes.count else {
        return nil
    }
    var received: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        received += chunk[0..<n]
    }
    return String(decoding: received, as: UTF8.self)
}

/// Runs blocking `body` on its own thread, so it never occupies one of the (few) cooperative threads.
func onThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

@Suite struct LoopbackHTTPServerTests {
    @Test func answersRequestsWithTheirPartsAndKeepsConnectionsAlive() async throws {
        let seen = Mutex<[LoopbackHTTPServer.Request]>([])
        let server = try LoopbackHTTPServer { request in
            seen.withLock { $0.append(request) }
            return .json(#"{"echo":"\#(request.bodyText)"}"#, status: 201, headers: [("X-Test", "yes")])
        }
        defer { server.stop() }
        // The package's client, not FoundationNetworking: `URLSession.data(for:)` waits on the cooperative
        // pool for FoundationNetworking's work queue, which another test's endless answer can hold.
        let client = HTTPClient()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            await client.started()
            defer { group.cancelAll() }
            for i in 0..<20 {
                var request = BoundedHTTPRequest(
                    url: URL(string: "\(server.baseURL.absoluteString)/path/\(i)?a=1&b=two%20words")!,
                    maximumResponseBytes: 1 << 16,
                    deadline: .seconds(3600)
                )
                request.method = "POST"
                request.headers = [("Content-Type", "text/plain")]
                request.body = Array("body\(i)".utf8)
                let response = try await request.send(through: client)
                #expect(response.status == 201)
                #expect(response.header("x-test") == "yes")
                #expect(String(decoding: response.body, as: UTF8.self) == #"{"echo":"body\#(i)"}"#)
            }
        }
        let requests = seen.withLock { $0 }
        #expect(requests.count == 20)
        #expect(requests[3].method == "POST" && requests[3].path == "/path/3")
        #expect(requests[3].queryItems == ["a": "1", "b": "two words"])
        #expect(requests[3].headers["content-type"] == "text/plain")
        #expect(server.requestCount == 20)
        #expect(server.connectionCount < 20)
    }

    @Test func readsChunkedBodiesAndAnswersExpectContinue() throws {
        let server = try LoopbackHTTPServer { request in .text(request.bodyText) }
        defer { server.stop() }
        let chunked =
            "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            + "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nTrailer: t\r\n\r\n"
        let answer = try #require(rawExchange(port: server.port, chunked))
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(answer.hasSuffix("\r\n\r\nhello, world"))

        let expecting =
            "POST /e HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc"
        let continued = try #require(rawExchange(port: server.port, expecting))
        #expect(continued.hasPrefix("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"))
        #expect(continued.hasSuffix("abc"))
    }

    @Test func faultsBreakTheExchange() throws {
        let fault = Mutex<LoopbackHTTPServer.Fault?>(nil)
        let server = try LoopbackHTTPServer { _ in
            fault.withLock { $0 }.map { .fault($0) } ?? .text("fine")
        }
        defer { server.stop() }
        let request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        fault.withLock { $0 = .closeWithoutResponse }
        #expect(rawExchange(port: server.port, request) == "")
        fault.withLock { $0 = .truncatedBody }
        let truncated = try #require(rawExchange(port: server.port, request))
        #expect(truncated.contains("Content-Length: 2\r\n") && truncated.hasSuffix("\r\n\r\n{"))
        fault.withLock { $0 = .garbage(Data("\u{0}junk".utf8)) }
        #expect(rawExchange(port: server.port, request) == "\u{0}junk")
    }

    @Test func heldAndHangingAnswersEndWhenTheServerStops() async throws {
        let never = Gate()
        let server = try LoopbackHTTPServer { request in
            if request.path == "/hang" { return .fault(.hang) }
            return LoopbackHTTPServer.Response(body: Data("late".utf8), answerAfter: { await never.wait() })
        }
        let port = server.port
        async let hung = onThread { rawExchange(port: port, "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n") }
        async let delayed = onThread { rawExchange(port: port, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n") }
        await server.waitForRequests(2)
        server.stop()
        #expect(await hung == "")
        #expect(await delayed == "")
        // Refused (or, if a parallel test's server got the port meanwhile, answered by that one).
        #expect(rawExchange(port: port, "GET /slow HTTP/1.1\r\n\r\n")?.contains("late") != true)
    }

    @Test func aHeldAnswerIsSentOnceItsGateOpens() async throws {
        let gate = Gate()
        let server = try LoopbackHTTPServer { _ in
            LoopbackHTTPServer.Response(body: Data("released".utf8), answerAfter: { await gate.wait() })
        }
        defer { server.stop() }
        let port = server.port
        async let answer = onThread { rawExchange(port: port, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n") }
        await server.waitForRequests(1)
        gate.open()
        #expect(await answer?.hasSuffix("\r\n\r\nreleased") == true)
        #expect(server.requests.map(\.path) == ["/"])
    }

    @Test func withStopsTheServerAfterTheBody() async throws {
        let marker = UUID().uuidString
        let port = try await LoopbackHTTPServer.with(handler: { _ in .text(marker) }) { server in
            #expect(
                rawExchange(port: server.port, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n")?.hasSuffix(marker) == true
            )
            return server.port
        }
        let after = rawExchange(port: port, "GET / HTTP/1.1\r\nConnection: close\r\n\r\n")
        #expect(after?.contains(marker) != true)
    }
}
