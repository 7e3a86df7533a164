import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A minimal HTTP/1.1 server on 127.0.0.1 for container tests: an ephemeral port, one thread per
/// connection, and answers scripted by a closure — container bodies, slow answers, 304 with an entity tag,
/// any status, truncated bodies and garbage. Every request is recorded.
///
/// ```swift
/// let server = try ContainerTestServer { request in
///     request.query("id") == "GTM-K1T5" ? .container(ContainerTestServer.Fixtures.live()) : .status(404)
/// }
/// defer { server.stop() }
/// let source = try HTTPContainerSource(base: server.baseURL)
/// ```
public final class ContainerTestServer: Sendable {
    /// One request as the server read it.
    public struct Request: Sendable {
        /// `GET`, usually.
        public var method: String
        /// The request target: path and query, as sent.
        public var target: String
        /// The path, without the query.
        public var path: String
        /// The query parameters in order, percent-decoded.
        public var queryItems: [QueryItem]
        /// The headers, names lower-cased.
        public var headers: [String: String]

        /// The first value of query parameter `name`.
        public func query(_ name: String) -> String? { queryItems.first { $0.name == name }?.value }
    }

    /// One query parameter.
    public struct QueryItem: Sendable, Hashable {
        public var name: String
        public var value: String

        /// Creates a parameter.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// What the server answers.
    public indirect enum Response: Sendable {
        /// `200 OK` with a container body and, optionally, an `ETag`.
        case container([UInt8], etag: String? = nil)
        /// Any status with an optional body.
        case status(Int, body: [UInt8] = [])
        /// `304 Not Modified`.
        case notModified(etag: String? = nil)
        /// A redirect to `location`.
        case redirect(String)
        /// `200 OK` declaring `declaredLength` bytes but sending only `body`, then closing the connection.
        case truncated([UInt8], declaredLength: Int)
        /// Raw bytes that are not HTTP, then close.
        case garbage([UInt8])
        /// Another answer after `seconds` (cut short when the server stops).
        case delayed(TimeInterval, Response)
        /// No answer until the server stops.
        case hang
        /// `200 OK` with the `headers` lines (each ending in CRLF; no length is added), then `prefix`, then
        /// `chunk` again and again — one every `interval` seconds when given — until `limit` bytes were sent,
        /// the client goes away or the server stops. See ``ContainerTestServer/Hostile``.
        case stream(headers: String, prefix: [UInt8], chunk: [UInt8], interval: TimeInterval?, limit: Int)
    }

    private struct State {
        var bytesStreamed = 0
        var requests: [Request] = []
        var clients: Set<Int32> = []
        var stopped = false
    }

    /// The port the server listens on.
    public let port: UInt16
    private let listener: Int32
    private let handler: @Sendable (Request) -> Response
    private let state = Mutex(State())

    /// Starts a server that answers every request with `handler`.
    public init(_ handler: @escaping @Sendable (Request) -> Response) throws {
        self.handler = handler
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ServerError("socket() failed: errno \(errno)") }
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw ServerError("bind/listen on 127.0.0.1 failed: errno \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.listener = fd
        self.port = UInt16(bigEndian: address.sin_port)
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    deinit { stop() }

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    /// How many bytes ``Response/stream(headers:prefix:chunk:interval:limit:)`` answers have sent so far.
    public var bytesStreamed: Int { state.withLock { $0.bytesStreamed } }

    /// Every request received so far, oldest first.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// Stops listening and closes every open connection (hanging and delayed answers end at once).
    public func stop() {
        // Descriptors are only shut down here, under the lock; the threads that own them close them, so a
        // number is never reused while another thread may still use it.
        state.withLock { state in
            guard !state.stopped else { return }
            state.stopped = true
            shutdown(listener, Int32(SHUT_RDWR))
            for client in state.clients { shutdown(client, Int32(SHUT_RDWR)) }
        }
    }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    // MARK: Connections

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR && !isStopped { continue }
                close(listener)
                return
            }
            let accepted = state.withLock { state -> Bool in
                guard !state.stopped else { return false }
                state.clients.insert(client)
                return true
            }
            guard accepted else {
                close(client)
                close(listener)
                return
            }
            Thread.detachNewThread { [self] in
                serve(client)
                state.withLock { state in
                    state.clients.remove(client)
                    close(client)
                }
            }
        }
    }

    private func serve(_ client: Int32) {
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        guard let request = readRequest(client) else { return }
        state.withLock { $0.requests.append(request) }
        respond(handler(request), to: client)
        shutdown(client, Int32(SHUT_WR))
        // Drain what the client still sends so that closing does not reset the connection.
        var scratch = [UInt8](repeating: 0, count: 1024)
        while recv(client, &scratch, scratch.count, 0) > 0 {}
    }

    private func readRequest(_ client: Int32) -> Request? {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let terminator: [UInt8] = [13, 10, 13, 10]
        while buffer.count < 64 * 1024 {
            let n = recv(client, &chunk, chunk.count, 0)
            guard n > 0 else { return nil }
            buffer.append(contentsOf: chunk[0..<n])
            if let end = buffer.firstRange(of: terminator) {
                return Self.parse(String(decoding: buffer[..<end.lowerBound], as: UTF8.self))
            }
        }
        return nil
    }

    private static func parse(_ head: String) -> Request? {
        let lines = head.components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ")
        guard parts.count == 3 else { return nil }
        let target = String(parts[1])
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].lowercased()
            headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let path = String(target.prefix { $0 != "?" })
        var items: [QueryItem] = []
        if let question = target.firstIndex(of: "?") {
            for pair in target[target.index(after: question)...].split(separator: "&") {
                let name = pair.prefix { $0 != "=" }
                let value = pair.dropFirst(name.count + 1)
                items.append(
                    QueryItem(
                        name: String(name).removingPercentEncoding ?? String(name),
                        value: String(value).removingPercentEncoding ?? String(value)
                    )
                )
            }
        }
        return Request(method: String(parts[0]), target: target, path: path, queryItems: items, headers: headers)
    }

    private func respond(_ response: Response, to client: Int32) {
        switch response {
        case .container(let body, let etag):
            var extra = "Content-Type: application/json\r\n"
            if let etag { extra += "ETag: \(etag)\r\n" }
            transmit(head(200, extra: extra, length: body.count) + body, to: client)
        case .status(let code, let body):
            transmit(head(code, extra: "", length: body.count) + body, to: client)
        case .notModified(let etag):
            transmit(head(304, extra: etag.map { "ETag: \($0)\r\n" } ?? "", length: nil), to: client)
        case .redirect(let location):
            transmit(head(302, extra: "Location: \(location)\r\n", length: 0), to: client)
        case .truncated(let body, let declared):
            transmit(head(200, extra: "Content-Type: application/json\r\n", length: declared) + body, to: client)
        case .garbage(let bytes):
            transmit(bytes, to: client)
        case .delayed(let seconds, let next):
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline && !isStopped { usleep(5_000) }
            if !isStopped { respond(next, to: client) }
        case .hang:
            while !isStopped { usleep(5_000) }
        case .stream(let headers, let prefix, let chunk, let interval, let limit):
            var sent = 0
            guard transmit(Array("HTTP/1.1 200 OK\r\n\(headers)Connection: close\r\n\r\n".utf8) + prefix, to: client)
            else { return }
            sent += prefix.count
            while sent < limit && !isStopped {
                if let interval { usleep(useconds_t(interval * 1_000_000)) }
                guard transmit(chunk, to: client) else { break }
                sent += chunk.count
                state.withLock { $0.bytesStreamed += chunk.count }
            }
        }
    }

    private func head(_ status: Int, extra: String, length: Int?) -> [UInt8] {
        let reasons = [200: "OK", 302: "Found", 304: "Not Modified", 403: "Forbidden", 404: "Not Found"]
        var text = "HTTP/1.1 \(status) \(reasons[status] ?? "Status")\r\n\(extra)"
        if let length { text += "Content-Length: \(length)\r\n" }
        text += "Connection: close\r\n\r\n"
        return Array(text.utf8)
    }

    @discardableResult
    private func transmit(_ bytes: [UInt8], to client: Int32) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            offset += n
        }
        return true
    }

    /// Why the server could not start.
    public struct ServerError: Error, CustomStringConvertible {
        public var description: String
        init(_ description: String) { self.description = description }
    }
}

extension ContainerTestServer {
    /// Answers from hostile servers: bodies that inflate without end, never end, or arrive a byte at a time.
    public enum Hostile {
        /// A gzip-encoded answer whose body inflates to zeros without end (about 160 bytes of zeros per
        /// compressed byte), `limit` compressed bytes in all.
        public static func gzipBomb(limit: Int = 256 << 20) -> Response {
            let (prefix, period) = deflatedZeros()
            return .stream(
                headers: "Content-Type: application/json\r\nContent-Encoding: gzip\r\n",
                prefix: [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF] + prefix,
                chunk: Array(repeating: period, count: 1260).flatMap { $0 },
                interval: nil,
                limit: limit
            )
        }

        /// A body without a length that never ends (`limit` bytes in all), 16 KiB of spaces at a time.
        public static func endless(limit: Int = 256 << 20) -> Response {
            .stream(
                headers: "Content-Type: application/json\r\n",
                prefix: [],
                chunk: [UInt8](repeating: 32, count: 16 * 1024),
                interval: nil,
                limit: limit
            )
        }

        /// Headers declaring a 100000-byte body, then one byte every `interval` seconds (`limit` bytes in all).
        public static func drip(interval: TimeInterval = 0.02, limit: Int = 500) -> Response {
            .stream(
                headers: "Content-Type: application/json\r\nContent-Length: 100000\r\n",
                prefix: [],
                chunk: [32],
                interval: interval,
                limit: limit
            )
        }

        /// A raw deflate stream of zeros with fixed Huffman codes: a literal 0, then "copy 258 bytes from 1
        /// back" (13 bits) forever. From bit 11 on, the stream repeats every 104 bits (13 bytes), so it is
        /// the first 2 bytes, then one 13-byte period again and again.
        static func deflatedZeros() -> (prefix: [UInt8], period: [UInt8]) {
            var bytes: [UInt8] = []
            var bitCount = 0
            func put(_ value: Int, bits: Int, reversed: Bool) {
                for k in 0..<bits {
                    let bit = reversed ? (value >> (bits - 1 - k)) & 1 : (value >> k) & 1
                    if bitCount % 8 == 0 { bytes.append(0) }
                    bytes[bytes.count - 1] |= UInt8(bit) << UInt8(bitCount % 8)
                    bitCount += 1
                }
            }
            put(0, bits: 1, reversed: false)  // not the last block
            put(1, bits: 2, reversed: false)  // fixed Huffman codes
            put(0x30, bits: 8, reversed: true)  // literal 0
            for _ in 0..<16 {
                put(0b1100_0101, bits: 8, reversed: true)  // length 258 (code 285)
                put(0, bits: 5, reversed: true)  // distance 1 (code 0)
            }
            return (Array(bytes[0..<2]), Array(bytes[2..<15]))
        }
    }

    /// Container files for lifecycle and preview tests (compiled-resource JSON).
    public enum Fixtures {
        /// The container ID of the fixtures.
        public static let containerID = "GTM-K1T5"

        /// The live container: tag 1 'Played song' fires on `played`, tag 2 'Shared song' on `shared`.
        public static func live(version: String = "1") -> [UInt8] {
            Array(
                """
                {"resource": {"version": "\(version)",
                  "macros": [
                    {"function": "__e", "instance_name": "Event Name"},
                    {"function": "__md", "instance_name": "Song", "vtp_key": "song"}],
                  "tags": [
                    {"function": "__funct", "instance_name": "Played song", "tag_id": 1,
                     "vtp_classPath": "com.example.Played",
                     "vtp_functionArgument": ["list", ["map", "key", "song", "value", ["macro", 1]]]},
                    {"function": "__funct", "instance_name": "Shared song", "tag_id": 2,
                     "vtp_classPath": "com.example.Shared",
                     "vtp_functionArgument": ["list", ["map", "key", "song", "value", ["macro", 1]]]}],
                  "predicates": [
                    {"function": "_eq", "arg0": ["macro", 0], "arg1": "played"},
                    {"function": "_eq", "arg0": ["macro", 0], "arg1": "shared"}],
                  "rules": [[["if", 0], ["add", 0]], [["if", 1], ["add", 1]]]},
                 "runtime": []}
                """.utf8
            )
        }

        /// The draft (version 7): tag 1 'Played song' on `played`; tag 3 'Played jazz' on `played` when the
        /// pushed `genre` is `jazz`; tag 4 'Skipped' on `skipped`, blocked when `genre` is `jazz`.
        public static func draft(version: String = "7") -> [UInt8] {
            Array(
                """
                {"resource": {"version": "\(version)",
                  "macros": [
                    {"function": "__e", "instance_name": "Event Name"},
                    {"function": "__md", "instance_name": "Song", "vtp_key": "song"},
                    {"function": "__md", "instance_name": "Genre", "vtp_key": "genre"}],
                  "tags": [
                    {"function": "__funct", "instance_name": "Played song", "tag_id": 1,
                     "vtp_classPath": "com.example.Played",
                     "vtp_functionArgument": ["list", ["map", "key", "song", "value", ["macro", 1]]]},
                    {"function": "__funct", "instance_name": "Played jazz", "tag_id": 3,
                     "vtp_classPath": "com.example.Jazz",
                     "vtp_functionArgument": ["list", ["map", "key", "genre", "value", ["macro", 2]]]},
                    {"function": "__funct", "instance_name": "Skipped", "tag_id": 4,
                     "vtp_classPath": "com.example.Skipped",
                     "vtp_functionArgument": ["list", ["map", "key", "song", "value", ["macro", 1]]]}],
                  "predicates": [
                    {"function": "_eq", "arg0": ["macro", 0], "arg1": "played"},
                    {"function": "_eq", "arg0": ["macro", 2], "arg1": "jazz"},
                    {"function": "_eq", "arg0": ["macro", 0], "arg1": "skipped"}],
                  "rules": [
                    [["if", 0], ["add", 0]],
                    [["if", 0, 1], ["add", 1]],
                    [["if", 2], ["add", 2]],
                    [["if", 1], ["block", 2]]]},
                 "runtime": []}
                """.utf8
            )
        }

        /// Writes `files` (name → bytes) into a new temporary directory and returns its path.
        public static func directory(_ files: [String: [UInt8]]) throws -> String {
            let path = NSTemporaryDirectory() + "containerkit-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            for (name, bytes) in files {
                try Data(bytes).write(to: URL(fileURLWithPath: path + "/" + name))
            }
            return path
        }
    }
}
