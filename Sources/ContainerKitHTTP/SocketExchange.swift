import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One plain `http://` request and answer over a non-blocking socket, driven by ``HTTPClient``'s I/O
/// thread (and confined to it): ``start(buffer:)`` takes a kept connection or begins to connect, and the
/// loop calls ``ready(buffer:)`` whenever the socket is ready for ``events``. Nothing here blocks or waits:
/// the loop's `poll` waits, bounded by the request's one deadline, which the loop keeps.
///
/// HTTP/1.1: a request whose client keeps connections takes a kept one from the pool and leaves its
/// connection there when the answer makes it reusable; otherwise it asks `Connection: close`. A kept
/// connection whose first write fails with nothing written (the server closed it while idle) is replaced by
/// a new one: nothing of the request reached the server.
final class SocketExchange {
    typealias Outcome = Result<BoundedHTTPResponse, BoundedHTTPError>

    /// A request handed to the loop, and how its caller learns the outcome.
    struct Submission: Sendable {
        var request: BoundedHTTPRequest
        /// The request's one deadline, kept by the loop (`nil`: kept on the request's own clock, by its caller).
        var end: ContinuousClock.Instant?
        /// Whether the connection may be kept for the next request.
        var keep: Bool
        /// Resumes the caller (called once, on the loop's thread).
        var resume: @Sendable (Outcome) -> Void
    }

    private enum Phase {
        case connecting
        case sending
        case receiving
    }

    /// The `recv` step: the body is read at most this much past the limit.
    static let step = 16 * 1024

    let submission: Submission
    private let pool: HTTPConnectionPool
    private let key: String
    private let bytes: [UInt8]
    private var parser: HTTPResponseParser
    /// The socket, or -1.
    private(set) var descriptor: Int32 = -1
    private var phase = Phase.connecting
    private var written = 0
    private var reused = false
    /// Addresses not tried yet, and the last connect error.
    private var addresses: [Address] = []
    private var lastErrno: Int32 = 0

    /// A resolved address: family and the `sockaddr` bytes.
    private struct Address {
        var family: Int32
        var bytes: [UInt8]
    }

    init(_ submission: Submission, pool: HTTPConnectionPool) {
        self.submission = submission
        self.pool = pool
        let target = Self.target(of: submission.request.url)
        key = "\(target.host):\(target.port)"
        bytes = Self.requestBytes(submission.request, hostHeader: target.header, keepAlive: submission.keep)
        parser = HTTPResponseParser(method: submission.request.method, limit: submission.request.maximumResponseBytes)
    }

    /// What the loop's `poll` waits for on ``descriptor``.
    var events: Int16 {
        switch phase {
        case .connecting, .sending: return Int16(POLLOUT)
        case .receiving: return Int16(POLLIN)
        }
    }

    /// Starts the exchange; its outcome when it ended at once.
    func start(buffer: inout [UInt8]) -> Outcome? {
        do throws(BoundedHTTPError) {
            if submission.keep, let kept = pool.takeIdle(for: key) {
                descriptor = kept
                reused = true
                phase = .sending
                return try proceed(buffer: &buffer)
            }
            try resolve()
            try connectNext()
            return try proceed(buffer: &buffer)
        } catch {
            abandon()
            return .failure(error)
        }
    }

    /// Moves the exchange on after ``descriptor`` became ready; its outcome when it ended.
    func ready(buffer: inout [UInt8]) -> Outcome? {
        do throws(BoundedHTTPError) {
            if phase == .connecting {
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
                if error != 0 {
                    lastErrno = error
                    closeSocket()
                    try connectNext()
                    return try proceed(buffer: &buffer)
                }
                pool.countOpened()
                phase = .sending
            }
            return try proceed(buffer: &buffer)
        } catch {
            abandon()
            return .failure(error)
        }
    }

    /// Closes the socket of an exchange that ends unfinished.
    func abandon() { closeSocket() }

    private func closeSocket() {
        if descriptor >= 0 { close(descriptor) }
        descriptor = -1
    }

    // MARK: Steps

    /// Sends and receives as far as the socket allows without waiting.
    private func proceed(buffer: inout [UInt8]) throws(BoundedHTTPError) -> Outcome? {
        if phase == .sending {
            guard try writeRequest() else { return nil }
            phase = .receiving
        }
        guard phase == .receiving else { return nil }
        return try readAnswer(buffer: &buffer)
    }

    /// Writes what the socket takes; `true` once the whole request is written.
    private func writeRequest() throws(BoundedHTTPError) -> Bool {
        while written < bytes.count {
            let n = bytes.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + written, $0.count - written, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                written += n
                continue
            }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return false }
            let failure = errno
            guard reused, written == 0 else {
                throw BoundedHTTPError(.connectionFailed, "send failed: errno \(failure)")
            }
            // A kept connection the server closed after the idle check: send once more on a new one.
            reused = false
            closeSocket()
            try resolve()
            try connectNext()
            return phase == .sending ? try writeRequest() : false
        }
        return true
    }

    /// Reads what has arrived; the outcome once the answer is complete.
    private func readAnswer(buffer: inout [UInt8]) throws(BoundedHTTPError) -> Outcome? {
        while true {
            let n = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.withUnsafeBytes { parser.feed(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            } else if n == 0 {
                parser.endOfStream()
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                return nil
            } else {
                throw BoundedHTTPError(.connectionFailed, "recv failed: errno \(errno)")
            }
            switch try parser.advance() {
            case .complete(let response, let reusable):
                if reusable && submission.keep {
                    pool.keepIdle(descriptor, for: key)
                    descriptor = -1
                } else {
                    closeSocket()
                }
                return .success(response)
            case .needMore:
                guard n > 0 else { throw BoundedHTTPError(.connectionFailed, "closed without an answer") }
            }
        }
    }

    // MARK: Connecting

    private func resolve() throws(BoundedHTTPError) {
        let target = Self.target(of: submission.request.url)
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(target.host, String(target.port), &hints, &list)
        guard status == 0, let first = list else {
            throw BoundedHTTPError(.cannotConnect, "cannot resolve the host (getaddrinfo \(status))")
        }
        defer { freeaddrinfo(first) }
        addresses = []
        var entry: UnsafeMutablePointer<addrinfo>? = first
        while let address = entry {
            entry = address.pointee.ai_next
            guard let pointer = address.pointee.ai_addr else { continue }
            let raw = UnsafeRawBufferPointer(start: pointer, count: Int(address.pointee.ai_addrlen))
            addresses.append(Address(family: address.pointee.ai_family, bytes: Array(raw)))
        }
    }

    /// Connects to the next address: ``phase`` is `.sending` when it connected at once, `.connecting` while
    /// the connection is being made.
    private func connectNext() throws(BoundedHTTPError) {
        while !addresses.isEmpty {
            let address = addresses.removeFirst()
            let fd = socket(
                address.family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue),
                0
            )
            guard fd >= 0 else {
                lastErrno = errno
                continue
            }
            let result = address.bytes.withUnsafeBytes {
                connect(fd, $0.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t($0.count))
            }
            if result == 0 {
                descriptor = fd
                pool.countOpened()
                phase = .sending
                return
            }
            guard errno == EINPROGRESS else {
                lastErrno = errno
                close(fd)
                continue
            }
            descriptor = fd
            phase = .connecting
            return
        }
        throw BoundedHTTPError(.cannotConnect, "errno \(lastErrno)")
    }

    // MARK: The request

    /// Host, port and `Host` header of `url`.
    static func target(of url: URL) -> (host: String, port: Int, header: String) {
        var host = url.host ?? ""
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = url.port ?? 80
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return (host, port, url.port.map { "\(shownHost):\($0)" } ?? shownHost)
    }

    static func requestBytes(_ request: BoundedHTTPRequest, hostHeader: String, keepAlive: Bool) -> [UInt8] {
        var target = request.url.path(percentEncoded: true)
        if target.isEmpty { target = "/" }
        if let query = request.url.query(percentEncoded: true) { target += "?" + query }
        var head = "\(request.method) \(target) HTTP/1.1\r\nHost: \(hostHeader)\r\n"
        /// Header injection is the caller's bug; still, never send a line break inside a field.
        func withoutLineBreaks(_ text: String) -> String {
            guard text.utf8.contains(where: { $0 == 13 || $0 == 10 }) else { return text }
            return String(String.UnicodeScalarView(text.unicodeScalars.filter { $0 != "\r" && $0 != "\n" }))
        }
        for field in request.callerHeaders {
            head += "\(withoutLineBreaks(field.name)): \(withoutLineBreaks(field.value))\r\n"
        }
        head += keepAlive ? "Accept-Encoding: identity\r\n" : "Accept-Encoding: identity\r\nConnection: close\r\n"
        if !request.body.isEmpty || request.method != "GET" { head += "Content-Length: \(request.body.count)\r\n" }
        head += "\r\n"
        return Array(head.utf8) + request.body
    }
}
