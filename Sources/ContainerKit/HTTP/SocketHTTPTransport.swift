import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Plain `http://` for ``BoundedHTTPRequest``: HTTP/1.1 over one socket, on a thread of its own so that
/// blocking calls never hold a concurrency-pool thread. Every wait is a `poll` bounded by the time left before
/// the deadline and woken by cancellation; the body is read 16 KiB at a time into a buffer that never grows
/// past the limit. Without a pool each request has its own connection (`Connection: close`); with one, the
/// connection is taken from the pool and given back when the answer leaves it usable.
enum SocketHTTPTransport {
    static func send(
        _ request: BoundedHTTPRequest,
        pool: HTTPConnectionPool? = nil
    ) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        let exchange = try SocketExchange(request: request, end: .now + request.deadline, pool: pool)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<SocketExchange.Outcome, Never>) in
                let thread = Thread {
                    let outcome = exchange.run()
                    exchange.closeWakeup()
                    continuation.resume(returning: outcome)
                }
                thread.name = "containerkit.http"
                thread.start()
            }
        } onCancel: {
            exchange.cancel()
        }
        return try result.get()
    }
}

/// One request and answer over a socket.
final class SocketExchange: Sendable {
    typealias Outcome = Result<BoundedHTTPResponse, BoundedHTTPError>

    private let request: BoundedHTTPRequest
    private let end: ContinuousClock.Instant
    /// Where the connection comes from and goes back to; `nil`: a connection of its own, closed after it.
    private let pool: HTTPConnectionPool?
    /// Written to on cancellation; every `poll` watches the read end.
    private let wakeup: (read: Int32, write: Int32)
    /// Whether the wake-up pipe is closed (guards against writing to a reused descriptor).
    private let wakeupClosed = Mutex(false)

    static let headLimit = 64 * 1024
    static let step = 16 * 1024

    init(
        request: BoundedHTTPRequest,
        end: ContinuousClock.Instant,
        pool: HTTPConnectionPool? = nil
    ) throws(BoundedHTTPError) {
        self.request = request
        self.end = end
        self.pool = pool
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BoundedHTTPError(.connectionFailed, "pipe failed: errno \(errno)") }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        wakeup = (fds[0], fds[1])
    }

    func cancel() {
        wakeupClosed.withLock { closed in
            guard !closed else { return }
            var byte: UInt8 = 1
            _ = write(wakeup.write, &byte, 1)
        }
    }

    func closeWakeup() {
        wakeupClosed.withLock { closed in
            guard !closed else { return }
            closed = true
            close(wakeup.read)
            close(wakeup.write)
        }
    }

    // MARK: The exchange

    func run() -> Outcome {
        let key = "\(hostAndPort.host):\(hostAndPort.port)"
        let bytes = requestBytes()
        var fd: Int32 = -1
        do throws(BoundedHTTPError) {
            if let kept = pool?.takeIdle(for: key) {
                fd = kept
                // A kept connection the server closed after the idle check fails the first write: nothing of
                // the request reached the server, so it is sent once more on a new connection.
                var written = 0
                do throws(BoundedHTTPError) {
                    try sendAll(fd, bytes, written: &written)
                } catch {
                    guard written == 0, error.kind == .connectionFailed else { throw error }
                    close(fd)
                    fd = -1
                }
            }
            if fd < 0 {
                fd = try connectSocket()
                pool?.countOpened()
                var written = 0
                try sendAll(fd, bytes, written: &written)
            }
            let (response, reusable) = try readResponse(fd)
            if reusable, let pool {
                pool.keepIdle(fd, for: key)
            } else {
                close(fd)
            }
            return .success(response)
        } catch {
            if fd >= 0 { close(fd) }
            return .failure(error)
        }
    }

    private var hostAndPort: (host: String, port: Int, header: String) {
        var host = request.url.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = request.url.port ?? 80
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return (host, port, request.url.port.map { "\(shownHost):\($0)" } ?? shownHost)
    }

    private func requestBytes() -> [UInt8] {
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: false)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        var head = "\(request.method) \(target) HTTP/1.1\r\nHost: \(hostAndPort.header)\r\n"
        for field in request.callerHeaders {
            // Header injection is the caller's bug; still, never send a line break inside a field.
            let name = field.name.filter { $0 != "\r" && $0 != "\n" }
            let value = field.value.filter { $0 != "\r" && $0 != "\n" }
            head += "\(name): \(value)\r\n"
        }
        head += pool == nil ? "Accept-Encoding: identity\r\nConnection: close\r\n" : "Accept-Encoding: identity\r\n"
        if !request.body.isEmpty || request.method != "GET" { head += "Content-Length: \(request.body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + request.body
    }

    // MARK: Waiting

    /// Waits for `events` on `fd` until the deadline; throws on the deadline or cancellation.
    private func wait(_ fd: Int32, for events: Int16) throws(BoundedHTTPError) {
        while true {
            let left = end - .now
            guard left > .zero else { throw BoundedHTTPError(.deadlineExceeded) }
            let (seconds, attoseconds) = left.components
            let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
            var fds = [
                pollfd(fd: fd, events: events, revents: 0), pollfd(fd: wakeup.read, events: Int16(POLLIN), revents: 0),
            ]
            let n = poll(&fds, 2, Int32(clamping: max(1, milliseconds)))
            if n < 0 {
                if errno == EINTR { continue }
                throw BoundedHTTPError(.connectionFailed, "poll failed: errno \(errno)")
            }
            if fds[1].revents != 0 { throw BoundedHTTPError(.cancelled) }
            if n > 0 && fds[0].revents != 0 { return }
        }
    }

    private func connectSocket() throws(BoundedHTTPError) -> Int32 {
        let (host, port, _) = hostAndPort
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw BoundedHTTPError(.cannotConnect, "cannot resolve the host (getaddrinfo \(status))")
        }
        defer { freeaddrinfo(first) }
        var lastErrno: Int32 = 0
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            let fd = socket(
                address.pointee.ai_family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                0
            )
            guard fd >= 0 else {
                lastErrno = errno
                continue
            }
            if connect(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 { return fd }
            guard errno == EINPROGRESS else {
                lastErrno = errno
                close(fd)
                continue
            }
            do throws(BoundedHTTPError) {
                try wait(fd, for: Int16(POLLOUT))
            } catch {
                close(fd)
                throw error
            }
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error == 0 { return fd }
            lastErrno = error
            close(fd)
        }
        throw BoundedHTTPError(.cannotConnect, "errno \(lastErrno)")
    }

    /// Sends `bytes`; `written` counts what the socket took, also when it fails part way.
    private func sendAll(_ fd: Int32, _ bytes: [UInt8], written offset: inout Int) throws(BoundedHTTPError) {
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                try wait(fd, for: Int16(POLLOUT))
            } else {
                throw BoundedHTTPError(.connectionFailed, "send failed: errno \(errno)")
            }
        }
    }

    // MARK: Reading

    /// Bytes read but not yet consumed, and whether the server closed its side.
    private struct Input {
        var bytes: [UInt8] = []
        var start = 0
        var closed = false
        var available: Int { bytes.count - start }

        mutating func take(_ count: Int) -> ArraySlice<UInt8> {
            defer { start += count }
            return bytes[start..<(start + count)]
        }

        mutating func compact() {
            if start > 0 {
                bytes.removeSubrange(0..<start)
                start = 0
            }
        }
    }

    /// Reads up to one step more; sets `closed` at the end of the stream.
    private func fill(_ fd: Int32, _ input: inout Input) throws(BoundedHTTPError) {
        input.compact()
        var chunk = [UInt8](repeating: 0, count: Self.step)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                input.bytes.append(contentsOf: chunk[0..<n])
                return
            }
            if n == 0 {
                input.closed = true
                return
            }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR {
                try wait(fd, for: Int16(POLLIN))
                continue
            }
            throw BoundedHTTPError(.connectionFailed, "recv failed: errno \(errno)")
        }
    }

    /// Reads one line (for chunk sizes and trailers), at most `limit` bytes, without its CRLF.
    private func readLine(_ fd: Int32, _ input: inout Input, limit: Int) throws(BoundedHTTPError) -> [UInt8] {
        var searched = 0
        while true {
            let window = input.bytes[(input.start + searched)...]
            if let newline = window.firstIndex(of: 10) {
                var line = Array(input.take(newline - input.start + 1).dropLast())
                if line.last == 13 { line.removeLast() }
                return line
            }
            searched = input.available
            guard input.available <= limit else { throw BoundedHTTPError(.badResponse, "a line is too long") }
            guard !input.closed else { throw BoundedHTTPError(.truncated(received: 0, expected: 1), "cut short") }
            try fill(fd, &input)
        }
    }

    /// Reads the answer; `reusable` when the connection can carry another request: an HTTP/1.1 answer
    /// without `Connection: close` whose body had a known end, read to it, with nothing after it.
    private func readResponse(_ fd: Int32) throws(BoundedHTTPError) -> (BoundedHTTPResponse, reusable: Bool) {
        var input = Input()
        var head: Head
        repeat {
            head = try readHead(fd, &input)
        } while (100..<200).contains(head.status) && head.status != 101
        let status = head.status
        let headers = head.headers
        let keepsAlive =
            head.minorVersion == 1 && status != 101
            && !(headers["connection"]?.lowercased().split(separator: ",").contains {
                $0.trimmingCharacters(in: .whitespaces) == "close"
            } ?? false)
        func delimited(_ response: BoundedHTTPResponse) -> (BoundedHTTPResponse, reusable: Bool) {
            (response, keepsAlive && input.available == 0 && !input.closed)
        }
        if let encoding = headers["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased(),
            !encoding.isEmpty, encoding != "identity"
        {
            throw BoundedHTTPError(.unsupportedEncoding(encoding))
        }
        let limit = request.maximumResponseBytes
        if request.method == "HEAD" || status == 204 || status == 304 {
            return delimited(BoundedHTTPResponse(status: status, headers: headers, body: []))
        }
        if let transfer = headers["transfer-encoding"]?.lowercased() {
            let codings = transfer.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard codings == ["chunked"] else { throw BoundedHTTPError(.unsupportedEncoding(transfer)) }
            let body = try readChunked(fd, &input)
            return delimited(BoundedHTTPResponse(status: status, headers: headers, body: body))
        }
        if let declared = headers["content-length"] {
            guard let length = Int64(declared.trimmingCharacters(in: .whitespaces)), length >= 0 else {
                throw BoundedHTTPError(.badResponse, "invalid content-length '\(declared)'")
            }
            guard length <= Int64(limit) else { throw BoundedHTTPError(.tooLarge(declared: length)) }
            let expected = Int(length)
            var body: [UInt8] = []
            body.reserveCapacity(expected)
            while body.count < expected {
                if input.available == 0 {
                    guard !input.closed else {
                        throw BoundedHTTPError(.truncated(received: body.count, expected: expected))
                    }
                    try fill(fd, &input)
                    continue
                }
                body += input.take(min(input.available, expected - body.count))
            }
            return delimited(BoundedHTTPResponse(status: status, headers: headers, body: body))
        }
        // No length: the body runs to the end of the connection.
        var body: [UInt8] = []
        while true {
            if input.available > 0 {
                guard body.count + input.available <= limit else { throw BoundedHTTPError(.tooLarge(declared: nil)) }
                body += input.take(input.available)
            }
            if input.closed { return (BoundedHTTPResponse(status: status, headers: headers, body: body), false) }
            try fill(fd, &input)
        }
    }

    /// A status line and header fields: `HTTP/1.<minorVersion> <status>`, names lower-cased.
    private struct Head {
        var minorVersion: Int
        var status: Int
        var headers: [String: String]
    }

    private func readHead(_ fd: Int32, _ input: inout Input) throws(BoundedHTTPError) -> Head {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var searched = 0
        var headEnd: Int
        while true {
            let from = input.start + max(0, searched - 3)
            if let range = input.bytes[from...].firstRange(of: terminator) {
                headEnd = range.upperBound
                break
            }
            searched = input.available
            guard input.available <= Self.headLimit else {
                throw BoundedHTTPError(.badResponse, "the header is longer than \(Self.headLimit) bytes")
            }
            guard !input.closed else {
                if input.available == 0 { throw BoundedHTTPError(.connectionFailed, "closed without an answer") }
                throw BoundedHTTPError(.badResponse, "the answer ends inside its header")
            }
            try fill(fd, &input)
        }
        let text = String(decoding: input.take(headEnd - input.start).dropLast(4), as: UTF8.self)
        var lines = text.split(separator: "\r\n", omittingEmptySubsequences: false)
        let statusLine = lines.removeFirst().split(separator: " ", maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].hasPrefix("HTTP/1."), statusLine[1].count == 3,
            let status = Int(statusLine[1]), status >= 100
        else { throw BoundedHTTPError(.badResponse, "not an http status line") }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { throw BoundedHTTPError(.badResponse, "bad header line") }
            let name = line[..<colon].lowercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if name == "content-length", let previous = headers[name], previous != value {
                throw BoundedHTTPError(.badResponse, "conflicting content-length")
            }
            if let previous = headers[name], name != "content-length" {
                headers[name] = previous + ", " + value
            } else {
                headers[name] = value
            }
        }
        return Head(minorVersion: statusLine[0] == "HTTP/1.1" ? 1 : 0, status: status, headers: headers)
    }

    private func readChunked(_ fd: Int32, _ input: inout Input) throws(BoundedHTTPError) -> [UInt8] {
        let limit = request.maximumResponseBytes
        var body: [UInt8] = []
        while true {
            let line = try readLine(fd, &input, limit: 1024)
            let digits = line.prefix { $0 != 59 && $0 != 32 && $0 != 9 }  // up to ';' or blanks
            guard !digits.isEmpty, digits.count <= 15,
                let size = Int(String(decoding: digits, as: UTF8.self), radix: 16)
            else { throw BoundedHTTPError(.badResponse, "invalid chunk size") }
            if size == 0 {
                // Trailer fields, up to an empty line.
                var trailerBytes = 0
                while true {
                    let trailer = try readLine(fd, &input, limit: Self.headLimit)
                    trailerBytes += trailer.count
                    guard trailerBytes <= Self.headLimit else {
                        throw BoundedHTTPError(.badResponse, "trailer too long")
                    }
                    if trailer.isEmpty { return body }
                }
            }
            guard body.count + size <= limit else { throw BoundedHTTPError(.tooLarge(declared: nil)) }
            var left = size
            while left > 0 {
                if input.available == 0 {
                    guard !input.closed else {
                        throw BoundedHTTPError(.truncated(received: body.count, expected: body.count + left))
                    }
                    try fill(fd, &input)
                    continue
                }
                let taken = min(left, input.available)
                body += input.take(taken)
                left -= taken
            }
            guard try readLine(fd, &input, limit: 2).isEmpty else {
                throw BoundedHTTPError(.badResponse, "chunk data is longer than its size")
            }
        }
    }
}
