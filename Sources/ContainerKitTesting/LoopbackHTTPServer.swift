import ContainerKit
import Dispatch
public import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A small threaded HTTP/1.1 server on 127.0.0.1 for tests: one thread accepts, one thread serves each
/// connection (so an idle keep-alive connection never blocks another client).
///
/// It reads requests with `Content-Length` or chunked bodies (answering `Expect: 100-continue`), keeps
/// connections alive, sets `TCP_NODELAY`, and calls a `@Sendable` handler for each request. A response
/// can wait for the test to let it go (``Response/answerAfter``), or be replaced by a ``Fault`` to test
/// clients' error handling. Every request is recorded; ``waitForRequests(_:)`` returns once a number of them
/// arrived, without polling.
///
/// ```swift
/// let server = try LoopbackHTTPServer { request in
///     request.path == "/ping" ? .text("pong") : .text("not found", status: 404)
/// }
/// defer { server.stop() }
/// let (data, _) = try await URLSession.shared.data(from: server.baseURL.appendingPathComponent("ping"))
/// ```
///
/// ``stop()`` closes the listening socket and every connection and joins every thread before it
/// returns, so no server outlives its test.
public final class LoopbackHTTPServer: Sendable {
    /// Header fields, looked up case-insensitively, in the order they were sent.
    public struct Headers: Sendable, Hashable, Sequence {
        /// The fields as sent.
        public private(set) var fields: [(name: String, value: String)]

        /// Creates headers from fields.
        public init(_ fields: [(name: String, value: String)] = []) { self.fields = fields }

        /// The first value of `name` (any case).
        public subscript(name: String) -> String? {
            let lowered = name.lowercased()
            return fields.first { $0.name.lowercased() == lowered }?.value
        }

        /// Adds a field.
        public mutating func add(_ name: String, _ value: String) { fields.append((name, value)) }

        /// Iterates the fields.
        public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

        /// Equal when the same fields were sent in the same order.
        public static func == (lhs: Headers, rhs: Headers) -> Bool {
            lhs.fields.elementsEqual(rhs.fields) { $0.name == $1.name && $0.value == $1.value }
        }

        /// Hashes the fields in order.
        public func hash(into hasher: inout Hasher) {
            for field in fields {
                hasher.combine(field.name)
                hasher.combine(field.value)
            }
        }
    }

    /// One request as received.
    public struct Request: Sendable {
        /// `GET`, `POST`, ….
        public var method: String
        /// The path, without the query (`/users/track`).
        public var path: String
        /// The raw query after `?`, or `""`.
        public var query: String
        /// The header fields.
        public var headers: Headers
        /// The body (decoded from chunks when chunked).
        public var body: Data

        /// The value of query parameter `name` (percent-decoded), or `nil`.
        public func query(_ name: String) -> String? { queryItems[name] }

        /// The names of the query's parameters, percent-decoded, in the order they were sent.
        public var queryNames: [String] {
            query.split(separator: "&").map {
                let name = String($0.prefix { $0 != "=" }).replacingOccurrences(of: "+", with: " ")
                return name.removingPercentEncoding ?? name
            }
        }

        /// The query's `name=value` pairs, percent-decoded.
        public var queryItems: [String: String] {
            var items: [String: String] = [:]
            for pair in query.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
                }
                items[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
            return items
        }

        /// The body as UTF-8 text.
        public var bodyText: String { String(decoding: body, as: UTF8.self) }
    }

    /// Ways to misbehave instead of answering properly.
    public enum Fault: Sendable, Hashable {
        /// Close the connection without answering.
        case closeWithoutResponse
        /// Send the status line, headers with the full `Content-Length` and only half the body, then close.
        case truncatedBody
        /// Send the status line, headers declaring `declaredLength` body bytes, then the response's body (which
        /// is shorter), then close.
        case truncated(declaredLength: Int)
        /// Send these bytes instead of a response, then close.
        case garbage(Data)
        /// Never answer; hold the connection until the client closes it or the server stops.
        case hang
        /// Send the status line and headers (chunked, no length), then body bytes without end, until the
        /// client closes the connection or the server stops.
        case endlessBody
        /// Send the status line and headers without a length (the body runs to the end of the connection),
        /// then exactly this many body bytes at once, then hold the connection open without closing it
        /// until the client closes it or the server stops: a client with a smaller cap must give up when
        /// its cap is passed, however fast or slowly the bytes arrive.
        case oversizedBody(Int)
        /// Send the status line and headers (`Content-Length: 1000`), then one body byte per interval,
        /// until the client closes the connection or the server stops.
        case trickle(Duration)
        /// Send `200 OK` with `headers` (no length: the body runs to the end of the connection), then `prefix`,
        /// then `chunk` again and again until `limit` bytes were sent, the client goes away or the server
        /// stops. ``LoopbackHTTPServer/bytesStreamed`` counts the chunks sent.
        case stream(headers: Headers, prefix: Data, chunk: Data, limit: Int)
    }

    /// One response.
    public struct Response: Sendable {
        /// The status code.
        public var status: Int
        /// Header fields (`Content-Length` and `Connection` are added; `Connection: close` here closes the
        /// connection after the answer).
        public var headers: Headers
        /// The body.
        public var body: Data
        /// Awaited before answering (a ``Gate`` the test opens, say); when the server stops first, the
        /// connection closes without an answer.
        public var answerAfter: (@Sendable () async -> Void)?
        /// Misbehave instead of answering.
        public var fault: Fault?

        /// Creates a response.
        public init(
            status: Int = 200,
            headers: Headers = Headers(),
            body: Data = Data(),
            answerAfter: (@Sendable () async -> Void)? = nil,
            fault: Fault? = nil
        ) {
            self.status = status
            self.headers = headers
            self.body = body
            self.answerAfter = answerAfter
            self.fault = fault
        }

        /// A `text/plain` response.
        public static func text(_ text: String, status: Int = 200) -> Response {
            Response(
                status: status,
                headers: Headers([("Content-Type", "text/plain; charset=utf-8")]),
                body: Data(text.utf8)
            )
        }

        /// An `application/json` response with the given JSON text.
        public static func json(_ text: String, status: Int = 200, headers: [(String, String)] = []) -> Response {
            var fields = Headers([("Content-Type", "application/json")])
            for (name, value) in headers { fields.add(name, value) }
            return Response(status: status, headers: fields, body: Data(text.utf8))
        }

        /// A response that misbehaves (see ``Fault``).
        public static func fault(_ fault: Fault) -> Response { Response(fault: fault) }
    }

    /// Why the server could not start.
    public struct StartError: Error, Sendable, CustomStringConvertible {
        /// What failed, naming the system call.
        public var message: String
        /// The message.
        public var description: String { message }
    }

    /// The port the server listens on (chosen by the system when created with port 0).
    public let port: UInt16
    private let core: Core

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// Requests answered or faulted so far.
    public var requestCount: Int { core.requests.value.count }

    /// Every request answered or faulted so far, in order.
    public var requests: [Request] { core.requests.value }

    /// Body bytes sent so far by ``Fault/stream(headers:prefix:chunk:limit:)`` answers (their chunks).
    public var bytesStreamed: Int { core.state.withLock { $0.bytesStreamed } }

    /// Returns once at least `count` requests were answered or faulted (at once if they were), or when the
    /// calling task is cancelled.
    public func waitForRequests(_ count: Int) async {
        await core.requests.wait { $0.count >= count }
    }

    /// Connections accepted so far.
    public var connectionCount: Int { core.state.withLock { $0.connectionCount } }

    /// Starts listening on 127.0.0.1.
    /// - Parameters:
    ///   - port: the port, or 0 for one the system picks.
    ///   - handler: answers each request (called on the connection's thread).
    public init(port: UInt16 = 0, handler: @escaping @Sendable (Request) -> Response) throws(StartError) {
        core = try Core(port: port, handler: handler)
        self.port = core.port
    }

    /// Stops accepting, closes every connection and waits for every server thread to finish.
    /// Also done when the server is released.
    public func stop() { core.stop() }

    deinit {
        core.stop()
    }

    /// Runs `body` with a server, stopping it afterwards even if `body` throws.
    public static func with<T>(
        handler: @escaping @Sendable (Request) -> Response,
        _ body: (LoopbackHTTPServer) async throws -> T
    ) async throws -> T {
        let server = try LoopbackHTTPServer(handler: handler)
        defer { server.stop() }
        return try await body(server)
    }
}

/// The sockets and threads of a ``LoopbackHTTPServer``; threads hold this, not the server, so releasing
/// the server stops them.
private final class Core: Sendable {
    typealias Request = LoopbackHTTPServer.Request
    typealias Response = LoopbackHTTPServer.Response
    typealias Headers = LoopbackHTTPServer.Headers
    typealias StartError = LoopbackHTTPServer.StartError

    struct State {
        var connections: Set<Int32> = []
        var stopped = false
        var bytesStreamed = 0
        var connectionCount = 0
    }

    let port: UInt16
    private let listenFD: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let handler: @Sendable (Request) -> Response
    let state = Mutex(State())
    let requests = AwaitableState<[Request]>([])
    private let threads = DispatchGroup()

    init(port: UInt16, handler: @escaping @Sendable (Request) -> Response) throws(StartError) {
        self.handler = handler
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw StartError(message: "pipe failed: errno \(errno)") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        stopPipe = (fds[0], fds[1])
        // Close-on-exec everywhere, so child processes that tests start never inherit the server's sockets.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else {
            let code = errno
            close(fds[0])
            close(fds[1])
            throw StartError(message: "socket failed: errno \(code)")
        }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            let code = errno
            close(fd)
            close(fds[0])
            close(fds[1])
            throw StartError(message: "bind or listen on 127.0.0.1:\(port) failed: errno \(code)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.port = UInt16(bigEndian: address.sin_port)
        self.listenFD = fd
        threads.enter()
        let thread = Thread { [self] in
            acceptLoop()
            threads.leave()
        }
        thread.name = "loopback-http.accept"
        thread.start()
    }

    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else {
            threads.wait()
            return
        }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        threads.wait()
        close(listenFD)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    // MARK: Threads

    /// Whether ``stop()`` was called.
    private var stopping: Bool {
        var stop = pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0)
        return poll(&stop, 1, 0) > 0
    }

    /// Waits until `fd` has `events` or the server stops; returns `false` when stopping (or on timeout).
    private func wait(for fd: Int32, events: Int16, timeoutMilliseconds: Int32 = -1) -> Bool {
        var fds = [
            pollfd(fd: fd, events: events, revents: 0),
            pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let n = poll(&fds, 2, timeoutMilliseconds)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            if fds[1].revents != 0 { return false }
            return fds[0].revents != 0
        }
    }

    private func acceptLoop() {
        while wait(for: listenFD, events: Int16(POLLIN)) {
            let client = accept(listenFD, nil, nil)
            guard client >= 0 else {
                if errno == EINTR || errno == ECONNABORTED || errno == EAGAIN { continue }
                return
            }
            _ = fcntl(client, F_SETFD, FD_CLOEXEC)
            var yes: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.connections.insert(client)
                state.connectionCount += 1
                return true
            }
            guard accepted else {
                close(client)
                return
            }
            threads.enter()
            let thread = Thread { [self] in
                serve(client)
                state.withLock { _ = $0.connections.remove(client) }
                close(client)
                threads.leave()
            }
            thread.name = "loopback-http.connection"
            thread.start()
        }
    }

    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        while true {
            guard let (request, keepAlive) = readRequest(fd, &buffer) else { return }
            let response = handler(request)
            requests.update { $0.append(request) }
            if let answerAfter = response.answerAfter, !awaitUnlessStopped(answerAfter) { return }
            if let fault = response.fault {
                switch fault {
                case .closeWithoutResponse:
                    return
                case .truncatedBody:
                    var head = statusLine(response.status) + "Content-Length: \(max(response.body.count, 2))\r\n"
                    head += "Connection: close\r\n\r\n"
                    let half = response.body.isEmpty ? Data("{".utf8) : response.body.prefix(response.body.count / 2)
                    _ = sendAll(fd, Data(head.utf8) + half)
                    return
                case .truncated(let declaredLength):
                    var head = statusLine(response.status) + "Content-Length: \(declaredLength)\r\n"
                    head += "Connection: close\r\n\r\n"
                    _ = sendAll(fd, Data(head.utf8) + response.body)
                    return
                case .garbage(let bytes):
                    _ = sendAll(fd, bytes)
                    return
                case .hang:
                    // Returns when the client closes (POLLRDHUP/POLLHUP) or the server stops.
                    _ = wait(for: fd, events: 0x2000)  // POLLRDHUP (glibc hides it behind _GNU_SOURCE)
                    return
                case .endlessBody:
                    let head =
                        statusLine(response.status) + "Content-Type: application/json\r\n"
                        + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                    guard sendAll(fd, Data(head.utf8)) else { return }
                    let chunk = Data("1000\r\n".utf8) + Data(repeating: 0x20, count: 4096) + Data("\r\n".utf8)
                    while sendAll(fd, chunk) {
                        if wait(for: fd, events: 0x2000, timeoutMilliseconds: 0) || stopping { return }
                    }
                    return
                case .oversizedBody(let count):
                    let head =
                        statusLine(response.status) + "Content-Type: application/json\r\n"
                        + "Connection: close\r\n\r\n"
                    guard sendAll(fd, Data(head.utf8) + Data(repeating: 0x20, count: max(0, count))) else { return }
                    _ = wait(for: fd, events: 0x2000)  // POLLRDHUP: until the client closes or the server stops
                    return
                case .trickle(let interval):
                    let head =
                        statusLine(response.status) + "Content-Type: application/json\r\n"
                        + "Content-Length: 1000\r\nConnection: close\r\n\r\n"
                    guard sendAll(fd, Data(head.utf8)) else { return }
                    let milliseconds = Int32(
                        clamping: interval.components.seconds * 1000 + interval.components.attoseconds
                            / 1_000_000_000_000_000
                    )
                    for _ in 0..<1000 {
                        guard sendAll(fd, Data(" ".utf8)) else { return }
                        if wait(for: fd, events: 0x2000, timeoutMilliseconds: milliseconds) || stopping { return }
                    }
                    return
                case .stream(let headers, let prefix, let chunk, let limit):
                    var head = statusLine(200)
                    for field in headers { head += "\(field.name): \(field.value)\r\n" }
                    head += "Connection: close\r\n\r\n"
                    guard sendAll(fd, Data(head.utf8) + prefix) else { return }
                    var sent = prefix.count
                    while sent < limit, !chunk.isEmpty, sendAll(fd, chunk) {
                        sent += chunk.count
                        state.withLock { $0.bytesStreamed += chunk.count }
                        if wait(for: fd, events: 0x2000, timeoutMilliseconds: 0) || stopping { return }
                    }
                    return
                }
            }
            var head = statusLine(response.status)
            for field in response.headers
            where field.name.lowercased() != "content-length" && field.name.lowercased() != "connection" {
                head += "\(field.name): \(field.value)\r\n"
            }
            head += "Content-Length: \(response.body.count)\r\n"
            let keepsAlive = keepAlive && response.headers["Connection"]?.lowercased() != "close"
            head += keepsAlive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n"
            guard sendAll(fd, Data(head.utf8) + response.body), keepsAlive else { return }
        }
    }

    /// Runs `body` in a task and waits for it on this thread; `false` (and the task cancelled) when the server
    /// stops first.
    ///
    /// A stopping server does not wait for the task: the task may need a thread of the cooperative pool, and
    /// ``stop()`` may be holding one (it is called from tests' `defer`) — waiting would let a few stops starve
    /// the pool. The task signals through `done`, which is emptied before the pipe is closed, so a task that
    /// ends later never writes to a closed (or reused) descriptor.
    private func awaitUnlessStopped(_ body: @escaping @Sendable () async -> Void) -> Bool {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { return false }
        let done = Mutex<Int32?>(fds[1])
        defer {
            done.withLock { $0 = nil }
            close(fds[0])
            close(fds[1])
        }
        let task = Task {
            await body()
            done.withLock { fd in
                guard let fd else { return }
                var byte: UInt8 = 1
                _ = write(fd, &byte, 1)
            }
        }
        let answered = wait(for: fds[0], events: Int16(POLLIN))
        if !answered { task.cancel() }
        return answered
    }

    private func statusLine(_ status: Int) -> String {
        let reasons = [
            100: "Continue", 200: "OK", 201: "Created", 202: "Accepted", 204: "No Content", 400: "Bad Request",
            401: "Unauthorized", 403: "Forbidden", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
            413: "Payload Too Large", 429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
            503: "Service Unavailable", 504: "Gateway Timeout",
        ]
        return "HTTP/1.1 \(status) \(reasons[status] ?? "Status")\r\n"
    }

    /// Sends all of `data`; `false` when the client went away or the server stops. It never blocks in
    /// `send`: a client that stops reading (an endless answer it gave up on) cannot hold ``stop()``.
    private func sendAll(_ fd: Int32, _ data: Data) -> Bool {
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Bool in
            var offset = 0
            while offset < raw.count {
                let n = send(fd, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
                if n > 0 {
                    offset += n
                } else if n < 0 && errno == EINTR {
                    continue
                } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                    guard wait(for: fd, events: Int16(POLLOUT)) else { return false }
                } else {
                    return false
                }
            }
            return true
        }
    }

    /// Reads more bytes into `buffer`; `false` at end of stream, on error, or when the server stops.
    private func fill(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        guard wait(for: fd, events: Int16(POLLIN)) else { return false }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 && errno == EINTR { return true }
        guard n > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<n])
        return true
    }

    private static let headerEnd: [UInt8] = [13, 10, 13, 10]
    private static let lineEnd: [UInt8] = [13, 10]

    private static func find(_ pattern: [UInt8], in buffer: [UInt8], from start: Int = 0) -> Int? {
        guard buffer.count >= pattern.count + start else { return nil }
        var i = start
        while i <= buffer.count - pattern.count {
            if buffer[i] == pattern[0] && Array(buffer[i..<i + pattern.count]) == pattern { return i }
            i += 1
        }
        return nil
    }

    /// Reads one request from `fd` (leaving extra bytes in `buffer`); `nil` when the connection ends or
    /// the request is malformed (the connection is then closed).
    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> (Request, Bool)? {
        var headerEnd: Int?
        while true {
            headerEnd = Self.find(Self.headerEnd, in: buffer)
            if headerEnd != nil { break }
            guard buffer.count < 64 * 1024, fill(fd, &buffer) else { return nil }
        }
        let headText = String(decoding: buffer[0..<headerEnd!], as: UTF8.self)
        buffer.removeFirst(headerEnd! + 4)
        var lines = headText.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count == 3 else { return nil }
        var headers = Headers()
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.add(
                String(line[..<colon]).trimmingCharacters(in: .whitespaces),
                String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces)
            )
        }
        if headers["Expect"]?.lowercased() == "100-continue" {
            guard sendAll(fd, Data("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return nil }
        }
        var body: [UInt8] = []
        if headers["Transfer-Encoding"]?.lowercased().contains("chunked") == true {
            while true {
                var lineEnd = Self.find(Self.lineEnd, in: buffer)
                while lineEnd == nil {
                    guard fill(fd, &buffer) else { return nil }
                    lineEnd = Self.find(Self.lineEnd, in: buffer)
                }
                let sizeText = String(decoding: buffer[0..<lineEnd!], as: UTF8.self).split(separator: ";").first ?? ""
                guard let size = Int(sizeText.trimmingCharacters(in: .whitespaces), radix: 16), size >= 0 else {
                    return nil
                }
                buffer.removeFirst(lineEnd! + 2)
                if size == 0 {
                    // Trailer fields, then an empty line.
                    while true {
                        var end = Self.find(Self.lineEnd, in: buffer)
                        while end == nil {
                            guard fill(fd, &buffer) else { return nil }
                            end = Self.find(Self.lineEnd, in: buffer)
                        }
                        buffer.removeFirst(end! + 2)
                        if end == 0 { break }
                    }
                    break
                }
                while buffer.count < size + 2 {
                    guard body.count + size <= 64 << 20, fill(fd, &buffer) else { return nil }
                }
                body.append(contentsOf: buffer[0..<size])
                buffer.removeFirst(size + 2)
            }
        } else if let lengthText = headers["Content-Length"] {
            guard let length = Int(lengthText), length >= 0, length <= 64 << 20 else { return nil }
            while buffer.count < length {
                guard fill(fd, &buffer) else { return nil }
            }
            body = Array(buffer[0..<length])
            buffer.removeFirst(length)
        }
        let version = String(requestLine[2])
        let connection = headers["Connection"]?.lowercased() ?? ""
        let keepAlive = version == "HTTP/1.1" ? !connection.contains("close") : connection.contains("keep-alive")
        let target = String(requestLine[1])
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        let request = Request(
            method: String(requestLine[0]),
            path: String(parts[0]),
            query: parts.count > 1 ? String(parts[1]) : "",
            headers: headers,
            body: Data(body)
        )
        return (request, keepAlive)
    }
}
