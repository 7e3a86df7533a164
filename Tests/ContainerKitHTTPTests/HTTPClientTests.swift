import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ContainerKitHTTP

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The client and its kept connections: requests sent through a running ``HTTPClient`` reuse a connection
/// the last answer left usable, and never one that the answer, a failure or the server ended; its `run()`
/// owns the I/O thread and ends what is in flight when cancelled.
@Suite struct HTTPClientTests {
    static func post(_ url: URL, _ body: String = "{}") -> BoundedHTTPRequest {
        var request = BoundedHTTPRequest(url: url, maximumResponseBytes: 64 << 10, deadline: .seconds(30))
        request.method = "POST"
        request.body = Array(body.utf8)
        return request
    }

    /// A client whose connections do not expire while a test runs on a starved machine.
    static func client(maximumIdlePerHost: Int = 4) -> HTTPClient {
        var configuration = HTTPClient.Configuration()
        configuration.idleTimeout = .seconds(3600)
        configuration.maximumIdlePerHost = maximumIdlePerHost
        return HTTPClient(configuration: configuration)
    }

    /// Runs `client` while `body` runs; `run()` is cancelled (and has returned) when this returns.
    static func whileRunning<T>(_ client: HTTPClient, _ body: () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await client.run() }
            await client.started()
            defer { group.cancelAll() }
            return try await body()
        }
    }

    /// How sending `request` failed, or `nil` when it was answered.
    static func failure(of request: BoundedHTTPRequest, through client: HTTPClient) async -> BoundedHTTPError? {
        do throws(BoundedHTTPError) {
            _ = try await request.send(through: client)
            return nil
        } catch {
            return error
        }
    }

    /// A connected pair of local sockets: `kept` stands for a kept connection, `server` for its other end.
    static func socketPair() throws -> (kept: Int32, server: Int32) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (fds[0], fds[1])
    }

    @Test func aKeptConnectionCarriesTheNextRequests() async throws {
        let server = try LoopbackHTTPServer { request in .text("echo \(request.bodyText)") }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            for index in 1...3 {
                let response = try await Self.post(server.baseURL.appendingPathComponent("track"), "\(index)")
                    .send(through: client)
                #expect(response.status == 200)
                #expect(String(decoding: response.body, as: UTF8.self) == "echo \(index)")
            }
            #expect(client.idleCount == 1)
        }
        #expect(server.connectionCount == 1)
        #expect(server.requestCount == 3)
        #expect(client.statistics == .init(connectionsOpened: 1, connectionsReused: 2, idleConnectionsDropped: 0))
    }

    @Test func withoutARunningClientEveryRequestHasItsOwnConnectionAndAsksToCloseIt() async throws {
        let connectionHeaders = Mutex<[String?]>([])
        let server = try LoopbackHTTPServer { request in
            connectionHeaders.withLock { $0.append(request.headers["Connection"]) }
            return .text("ok")
        }
        defer { server.stop() }
        let notRunning = Self.client()
        _ = try await Self.post(server.baseURL).send()
        _ = try await Self.post(server.baseURL).send(through: notRunning)
        #expect(server.connectionCount == 2)
        #expect(connectionHeaders.withLock { $0 } == ["close", "close"])
        #expect(notRunning.statistics.connectionsOpened == 0)
    }

    /// A request sent with no running client starts its I/O at once on a thread of its own, never waiting for
    /// a thread of the cooperative pool: it reaches the server even while the thread that sent it — here the
    /// only thread of its executor, standing for a pool busy with CPU-bound work — is held until the server
    /// has it. (The hold is bounded only so that a client that waits for the pool fails instead of hanging.)
    @Test func aRequestWithoutARunningClientIsSentWhileEveryThreadOfItsExecutorIsHeld() async throws {
        let arrived = DispatchSemaphore(value: 0)
        let server = try LoopbackHTTPServer { _ in
            arrived.signal()
            return .text("ok")
        }
        defer { server.stop() }
        let request = Self.post(server.baseURL)
        let (received, failure) = await SmallTaskExecutor.run(threads: 1) { executor in
            // Queued behind this task: it takes the executor's one thread as soon as the send suspends.
            let holder = Task(executorPreference: executor) { arrived.wait(timeout: .now() + 60) == .success }
            let failure = await Self.failure(of: request, through: HTTPClient())
            return (await holder.value, failure)
        }
        #expect(received)
        #expect(failure == nil)
    }

    @Test func anAnswerThatClosesItsConnectionIsNotKept() async throws {
        let server = try LoopbackHTTPServer { _ in .json("{}", headers: [("Connection", "close")]) }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            for _ in 1...2 {
                let response = try await Self.post(server.baseURL).send(through: client)
                #expect(response.body == Array("{}".utf8))
            }
            #expect(client.idleCount == 0)
        }
        #expect(client.statistics.connectionsOpened == 2)
        #expect(client.statistics.connectionsReused == 0)
    }

    @Test(arguments: [
        // The body runs to the end of the connection.
        "HTTP/1.1 200 OK\r\n\r\nbody",
        // HTTP/1.0 closes after each answer.
        "HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nbody",
        // Bytes after the answer: the connection is out of step.
        "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbodyHTTP/1.1 200 OK\r\n",
    ])
    func anAnswerWithoutAKnownEndOrWithBytesAfterItIsNotKept(answer: String) async throws {
        let server = try LoopbackHTTPServer { _ in .garbage(Array(answer.utf8)) }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            let response = try await Self.post(server.baseURL).send(through: client)
            #expect(response.body == Array("body".utf8))
            #expect(client.idleCount == 0)
        }
    }

    @Test func aFailedExchangeNeverLeavesItsConnection() async throws {
        let server = try LoopbackHTTPServer { _ in .fault(.truncatedBody) }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            await #expect(throws: BoundedHTTPError.self) { try await Self.post(server.baseURL).send(through: client) }
            #expect(client.idleCount == 0)
        }
    }

    @Test func aKeptConnectionTheServerClosedIsDroppedUnused() async throws {
        let server = try LoopbackHTTPServer { _ in .text("fresh") }
        defer { server.stop() }
        let client = Self.client()
        let (kept, other) = try Self.socketPair()
        client.pool.keepIdle(kept, for: "127.0.0.1:\(server.port)")
        close(other)  // the server went away while the connection was idle: it reads as the end of the stream
        try await Self.whileRunning(client) {
            let response = try await Self.post(server.baseURL).send(through: client)
            #expect(String(decoding: response.body, as: UTF8.self) == "fresh")
        }
        #expect(client.statistics == .init(connectionsOpened: 1, connectionsReused: 0, idleConnectionsDropped: 1))
    }

    @Test func aRequestWhoseKeptConnectionRefusesTheFirstWriteIsSentOnANewOne() async throws {
        let server = try LoopbackHTTPServer { request in .text("got \(request.bodyText)") }
        defer { server.stop() }
        let client = Self.client()
        let (kept, other) = try Self.socketPair()
        defer { close(other) }
        // Quiet while idle (nothing to read), but closed for writing: the first write fails with nothing sent.
        shutdown(kept, Int32(SHUT_WR))
        client.pool.keepIdle(kept, for: "127.0.0.1:\(server.port)")
        try await Self.whileRunning(client) {
            let response = try await Self.post(server.baseURL, "once").send(through: client)
            #expect(String(decoding: response.body, as: UTF8.self) == "got once")
        }
        #expect(server.requestCount == 1)
        #expect(client.statistics == .init(connectionsOpened: 1, connectionsReused: 1, idleConnectionsDropped: 0))
    }

    @Test func anExpiredConnectionIsNotReused() async throws {
        let server = try LoopbackHTTPServer { _ in .text("ok") }
        defer { server.stop() }
        var configuration = HTTPClient.Configuration()
        configuration.idleTimeout = .zero  // every kept connection has expired by the next request
        let client = HTTPClient(configuration: configuration)
        try await Self.whileRunning(client) {
            for _ in 1...2 { _ = try await Self.post(server.baseURL).send(through: client) }
        }
        #expect(server.connectionCount == 2)
        #expect(client.statistics == .init(connectionsOpened: 2, connectionsReused: 0, idleConnectionsDropped: 1))
    }

    @Test func keepingAConnectionClosesTheExpiredOnesBeforeIt() throws {
        var configuration = HTTPConnectionPool.Configuration()
        configuration.idleTimeout = .zero  // every kept connection has expired by the next one
        let pool = HTTPConnectionPool(configuration: configuration)
        let (first, firstPeer) = try Self.socketPair()
        let (second, secondPeer) = try Self.socketPair()
        defer { for peer in [firstPeer, secondPeer] { close(peer) } }
        pool.keepIdle(first, for: "h:1")
        pool.keepIdle(second, for: "h:1")
        #expect(pool.idleCount == 1)
        #expect(pool.statistics.idleConnectionsDropped == 1)
        // The first one was closed: its peer reads the end of the stream.
        var byte: UInt8 = 0
        #expect(read(firstPeer, &byte, 1) == 0)
    }

    @Test func concurrentRequestsOpenConnectionsOfTheirOwnAndAtMostTheLimitIsKept() async throws {
        // No answer leaves before all four requests arrived, so each needs a connection of its own.
        let arrived = ProgressCounter()
        let server = try LoopbackHTTPServer { _ in
            arrived.advance()
            return LoopbackHTTPServer.Response(
                status: 200,
                body: Data("ok".utf8),
                answerAfter: { await arrived.reach(4) }
            )
        }
        defer { server.stop() }
        let client = Self.client(maximumIdlePerHost: 2)
        try await Self.whileRunning(client) {
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 1...4 { group.addTask { try await Self.post(server.baseURL).send(through: client).status } }
                for try await status in group { #expect(status == 200) }
            }
            #expect(client.idleCount == 2)
        }
        #expect(server.requestCount == 4)
        #expect(client.statistics.connectionsOpened + client.statistics.connectionsReused == 4)
    }

    @Test func stoppingTheClientClosesItsIdleConnectionsAndLaterRequestsConnectAlone() async throws {
        let server = try LoopbackHTTPServer { _ in .text("ok") }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            _ = try await Self.post(server.baseURL).send(through: client)
            #expect(client.idleCount == 1)
        }
        #expect(client.idleCount == 0)
        _ = try await Self.post(server.baseURL).send(through: client)
        #expect(client.idleCount == 0)
        #expect(server.connectionCount == 2)
    }

    @Test func cancellingRunEndsTheRequestsInFlight() async throws {
        let (arrived, arrival) = AsyncStream<Void>.makeStream()
        let server = try LoopbackHTTPServer { _ in
            arrival.yield()
            return .fault(.hang)
        }
        defer { server.stop() }
        let client = Self.client()
        let outcome = try await withThrowingTaskGroup(of: BoundedHTTPError?.self) { group in
            group.addTask {
                try await client.run()
                return nil
            }
            await client.started()
            group.addTask {
                do throws(BoundedHTTPError) {
                    _ = try await Self.post(server.baseURL).send(through: client)
                    return nil
                } catch {
                    return error
                }
            }
            var iterator = arrived.makeAsyncIterator()
            await iterator.next()
            // The request is on the wire and the server holds it: stop the client.
            group.cancelAll()
            var failure: BoundedHTTPError?
            for try await result in group { failure = failure ?? result }
            return failure
        }
        #expect(outcome?.kind == .cancelled)
    }

    @Test func aRequestsOneDeadlineEndsAnAnswerThatNeverCompletes() async throws {
        let server = try LoopbackHTTPServer { _ in .fault(.trickle(.milliseconds(100))) }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            var request = Self.post(server.baseURL)
            request.deadline = .milliseconds(300)
            await #expect(throws: BoundedHTTPError(.deadlineExceeded)) { try await request.send(through: client) }
            #expect(client.idleCount == 0)
        }
    }

    /// A request whose deadline runs on a test's clock ends when that clock passes it, with or without a
    /// running client, and never on the wall clock (the deadline is an hour): the test drives it.
    @Test(arguments: [true, false])
    func aRequestsDeadlineOnItsOwnClockEndsTheExchangeWhenThatClockPassesIt(running: Bool) async throws {
        let server = try LoopbackHTTPServer { _ in .fault(.hang) }
        defer { server.stop() }
        let clock = ManualClock()
        var request = Self.post(server.baseURL)
        request.deadline = .seconds(3600)
        request.deadlineClock = BoundedHTTPRequest.DeadlineClock(clock)
        let client = Self.client()
        let prepared = request
        let send = { () async -> BoundedHTTPError? in
            async let failure = Self.failure(of: prepared, through: client)
            await server.waitForRequests(1)
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(3600))
            return await failure
        }
        let failure = running ? try await Self.whileRunning(client) { await send() } : await send()
        #expect(failure?.kind == .deadlineExceeded)
        #expect(client.idleCount == 0)
    }

    @Test func httpsRequestsShareOneSessionThatKeepsItsConnections() async throws {
        // FoundationNetworking serves `http` and `https` alike; no TLS server runs on loopback, so the shared
        // session is driven over `http` here.
        let server = try LoopbackHTTPServer { request in .text("echo \(request.bodyText)") }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            for index in 1...3 {
                let response = try await URLSessionHTTPTransport.send(
                    Self.post(server.baseURL, "\(index)"),
                    client: client
                )
                #expect(String(decoding: response.body, as: UTF8.self) == "echo \(index)")
            }
        }
        #expect(server.requestCount == 3)
        #expect(server.connectionCount == 1)
    }

    @Test func anHTTPSRequestEndsAtItsDeadlineKeptByTheClientsLoop() async throws {
        let server = try LoopbackHTTPServer { _ in .fault(.hang) }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            var request = Self.post(server.baseURL)
            request.deadline = .milliseconds(300)
            await #expect(throws: BoundedHTTPError(.deadlineExceeded)) {
                try await URLSessionHTTPTransport.send(request, client: client)
            }
        }
    }

    @Test func aSharedSessionFollowsNoRedirect() async throws {
        let server = try LoopbackHTTPServer { request in
            request.path == "/moved"
                ? LoopbackHTTPServer.Response(status: 302, headers: .init([("Location", "/elsewhere")]))
                : .text("followed")
        }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            let response = try await URLSessionHTTPTransport.send(
                Self.post(server.baseURL.appendingPathComponent("moved")),
                client: client
            )
            #expect(response.status == 302)
        }
        #expect(server.requestCount == 1)
    }

    @Test func aSharedSessionKeepsEachRequestsLimits() async throws {
        let server = try LoopbackHTTPServer { request in
            request.path == "/big" ? .text(String(repeating: "x", count: 4096)) : .text("small")
        }
        defer { server.stop() }
        let client = Self.client()
        try await Self.whileRunning(client) {
            var big = Self.post(server.baseURL.appendingPathComponent("big"))
            big.maximumResponseBytes = 1024
            await #expect(throws: BoundedHTTPError(.tooLarge(declared: 4096))) {
                try await URLSessionHTTPTransport.send(big, client: client)
            }
            let small = try await URLSessionHTTPTransport.send(Self.post(server.baseURL), client: client)
            #expect(small.body == Array("small".utf8))
        }
    }
}
