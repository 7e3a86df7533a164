import ContainerKit
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A minimal Braze `/users/track` stand-in on 127.0.0.1 for `make bench`, `make soak` and the example service's
/// load tests (the `users-track-stand-in` executable): counts the objects it accepts, and the `title` property of
/// each event object; HTTP/1.1 with `Content-Length` bodies, keep-alive; answers 201 `{"message":"success"}` to
/// a request with objects, and `GET /stats` with the counts as JSON. A `POST …/users/identify` request is read
/// as Braze's (`aliases_to_identify`: `external_id` and `user_alias`), each alias logged in order of arrival
/// (``identifications``) with the event titles that had arrived before it.
///
/// The initializer only binds the port (so ``port`` is known at once; connections wait in the backlog). The
/// threads belong to ``run()``: one accepts, one serves each connection, and ``run()`` returns once ``stop()``
/// was called (or its task was cancelled) and every one of them ended. ``withRunning(_:)`` runs a body beside it.
public final class UsersTrackStandIn: Sendable {
    /// What the stand-in has received so far.
    public struct Counts: Sendable, Equatable {
        /// Requests answered (`GET /stats` not counted).
        public var requests = 0
        /// Event objects received.
        public var events = 0
        /// Purchase objects received.
        public var purchases = 0
        /// Attribute objects received.
        public var attributes = 0
        /// Requests whose body was not a JSON object.
        public var unreadable = 0
        /// Aliases received in `/users/identify` requests (a repeated one counted again).
        public var identifiedAliases = 0
        /// Every object received.
        public var objects: Int { events + purchases + attributes }
    }

    /// One alias of a `/users/identify` request, as it arrived.
    public struct Identification: Sendable, Equatable {
        /// The `external_id` the alias is identified as.
        public var externalID: String
        /// The alias's `alias_name`.
        public var aliasName: String
        /// The alias's `alias_label`.
        public var aliasLabel: String
        /// The request's `merge_behavior`, if it said one.
        public var mergeBehavior: String?
        /// The `title` properties of the events that had arrived before this request (what Braze would have
        /// merged).
        public var titlesBefore: Set<String>
    }

    private struct State {
        var stopped = false
        var running = false
        var counts = Counts()
        var titles: [String: Int] = [:]
        var identifications: [Identification] = []
    }

    /// What tests await (``waitForTitles(_:)``, ``waitForIdentifications(_:)``), updated with the state.
    private struct Progress: Sendable {
        var titles = 0
        var identifications = 0
        var stopped = false
    }

    public let port: UInt16
    private let listenFD: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let state = Mutex(State())
    private let threads = DispatchGroup()

    /// Objects in every request answered so far.
    public var objectCount: Int { state.withLock { $0.counts.objects } }

    /// What the stand-in has received so far.
    public var counts: Counts { state.withLock { $0.counts } }

    /// How many times each `title` property arrived in an event object.
    public var deliveredTitles: [String: Int] { state.withLock { $0.titles } }

    /// Every alias of the `/users/identify` requests received, in their order of arrival (a retried request's
    /// aliases again).
    public var identifications: [Identification] { state.withLock { $0.identifications } }

    /// Returns once events with at least `count` distinct `title`s arrived (at once if they did), when the
    /// stand-in stops, or when the calling task is cancelled: what a test awaits instead of polling.
    public func waitForTitles(_ count: Int) async {
        await wait { $0.titles >= count }
    }

    /// Returns once at least `count` aliases were identified (at once if they were), when the stand-in stops,
    /// or when the calling task is cancelled.
    public func waitForIdentifications(_ count: Int) async {
        await wait { $0.identifications >= count }
    }

    private func wait(until condition: @escaping @Sendable (Progress) -> Bool) async {
        await progress.wait { $0.stopped || condition($0) }
    }

    /// Publishes the state's counts to the waiters.
    private func resumeWaiters() {
        let (titles, identifications, stopped) = state.withLock {
            ($0.titles.count, $0.identifications.count, $0.stopped)
        }
        // Counts only grow: of two publishers, the later-read counts win whichever updates last.
        progress.update {
            $0.titles = max($0.titles, titles)
            $0.identifications = max($0.identifications, identifications)
            $0.stopped = $0.stopped || stopped
        }
    }

    private let progress = AwaitableState(Progress())
    private let titlesFile: Mutex<FileHandle?>

    /// Binds a port on 127.0.0.1 and listens (nothing is accepted until ``run()``).
    /// - Parameters:
    ///   - requestedPort: the port; 0 (the default) picks a free one (see ``port``).
    ///   - titlesFile: a file the `title` property of every event received is appended to, one a line.
    public init(port requestedPort: UInt16 = 0, titlesFile: String? = nil) throws {
        self.titlesFile = Mutex(
            titlesFile.flatMap { path in
                FileManager.default.createFile(atPath: path, contents: nil) ? FileHandle(forWritingAtPath: path) : nil
            }
        )
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw StandInError("pipe failed: errno \(errno)") }
        stopPipe = (fds[0], fds[1])
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = requestedPort.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        var bound = fd >= 0
        if bound {
            var reuse: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &reuse, socklen_t(MemoryLayout<Int32>.size))
            bound =
                withUnsafePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
                } == 0
        }
        if bound { bound = listen(fd, 64) == 0 }
        if bound {
            bound =
                withUnsafeMutablePointer(to: &address) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
                } == 0
        }
        guard bound else {
            let code = errno
            if fd >= 0 { close(fd) }
            close(fds[0])
            close(fds[1])
            throw StandInError("listening on 127.0.0.1 failed: errno \(code)")
        }
        listenFD = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    /// Serves until ``stop()`` is called or the calling task is cancelled: accepts on a thread of its own and
    /// serves each connection on one more; returns once all of them ended.
    /// - Throws: ``StandInError`` when the stand-in already runs or was stopped.
    public func run() async throws {
        let startable = state.withLock { state -> Bool in
            guard !state.running, !state.stopped else { return false }
            state.running = true
            return true
        }
        guard startable else { throw StandInError("the stand-in already runs or was stopped") }
        threads.enter()
        Thread { [self] in
            acceptLoop()
            threads.leave()
        }
        .start()
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                threads.notify(queue: .global()) { continuation.resume() }
            }
        } onCancel: {
            signalStop()
        }
    }

    /// Runs `body` while ``run()`` serves beside it, then stops the stand-in and waits for ``run()`` to return.
    public func withRunning<R: Sendable>(_ body: () async throws -> R) async throws -> R {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.run() }
            let result: Result<R, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            signalStop()
            try await group.waitForAll()
            return try result.get()
        }
    }

    /// Tells the threads to end (without waiting for them); `false` when the stand-in was already stopped.
    @discardableResult
    private func signalStop() -> Bool {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return false }
        resumeWaiters()
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        return true
    }

    /// Stops accepting, closes every connection and waits for the server's threads (``run()`` then returns).
    public func stop() {
        signalStop()
        threads.wait()
    }

    deinit {
        // The threads hold the stand-in: they have ended by now.
        close(listenFD)
        close(stopPipe.read)
        close(stopPipe.write)
    }

    /// Waits until `fd` is readable; `false` when the server stops.
    private func waitReadable(_ fd: Int32) -> Bool {
        var fds = [
            pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
            pollfd(fd: stopPipe.read, events: Int16(POLLIN), revents: 0),
        ]
        while true {
            let n = poll(&fds, 2, -1)
            if n < 0 && errno == EINTR { continue }
            return n > 0 && fds[1].revents == 0
        }
    }

    private func acceptLoop() {
        while waitReadable(listenFD) {
            let client = accept(listenFD, nil, nil)
            guard client >= 0 else {
                if errno == EINTR || errno == ECONNABORTED || errno == EAGAIN { continue }
                return
            }
            var yes: Int32 = 1
            setsockopt(client, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            threads.enter()
            Thread { [self] in
                serve(client)
                close(client)
                threads.leave()
            }
            .start()
        }
    }

    /// Reads more bytes into `buffer` (through `chunk`, the connection's one receive buffer); `false` at the end
    /// of the stream, on an error or when stopping.
    private func fill(_ fd: Int32, _ buffer: inout [UInt8], _ chunk: inout [UInt8]) -> Bool {
        guard waitReadable(fd) else { return false }
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 && errno == EINTR { return true }
        guard n > 0 else { return false }
        chunk.withUnsafeBufferPointer { buffer.append(contentsOf: UnsafeBufferPointer(rebasing: $0[0..<n])) }
        return true
    }

    private func sendAll(_ fd: Int32, _ text: String) -> Bool {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n > 0 {
                offset += n
            } else if n < 0 && errno == EINTR {
                continue
            } else {
                return false
            }
        }
        return true
    }

    /// Where the header's blank line starts, searching from `from` (bytes before it were searched already).
    private static func headerEnd(_ buffer: [UInt8], from: Int) -> Int? {
        guard buffer.count >= 4 else { return nil }
        return buffer.withUnsafeBufferPointer { bytes -> Int? in
            for i in max(0, from - 3)...(bytes.count - 4)
            where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 {
                return i
            }
            return nil
        }
    }

    /// The request line and header fields of a request head (bytes up to its blank line).
    private struct Head {
        var isStats = false
        var isIdentify = false
        var length = 0
        var keepAlive = false
        var expectsContinue = false

        /// Reads the head as bytes (header names and values compared without case, values without the
        /// spaces and tabs around them): no strings are made per request.
        init(_ head: ArraySlice<UInt8>) {
            var lineStart = head.startIndex
            var first = true
            while lineStart < head.endIndex {
                let newline = head[lineStart...].firstIndex(of: 10) ?? head.endIndex
                var line = head[lineStart..<newline]
                if line.last == 13 { line = line.dropLast() }
                lineStart = newline < head.endIndex ? newline + 1 : head.endIndex
                if first {
                    first = false
                    isStats = line.starts(with: "GET /stats".utf8)
                    // `POST <path prefix>/users/identify HTTP/1.1`
                    isIdentify =
                        line.starts(with: "POST ".utf8)
                        && Self.containsIgnoringCase(line, "/users/identify ")
                    keepAlive = line.reversed().starts(with: "HTTP/1.1".utf8.reversed())
                    continue
                }
                guard let colon = line.firstIndex(of: 58) else { continue }
                let name = line[..<colon]
                var value = line[(colon + 1)...]
                while let byte = value.first, byte == 32 || byte == 9 { value = value.dropFirst() }
                while let byte = value.last, byte == 32 || byte == 9 { value = value.dropLast() }
                if Self.equalsIgnoringCase(name, "content-length") {
                    length = Self.decimal(value) ?? 0
                } else if Self.equalsIgnoringCase(name, "connection") {
                    keepAlive = !Self.containsIgnoringCase(value, "close")
                } else if Self.equalsIgnoringCase(name, "expect") {
                    expectsContinue = Self.equalsIgnoringCase(value, "100-continue")
                }
            }
        }

        private static func lowercased(_ byte: UInt8) -> UInt8 { byte >= 65 && byte <= 90 ? byte + 32 : byte }

        /// Whether `bytes` are `lowercase` (ASCII), ignoring case.
        private static func equalsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: StaticString) -> Bool {
            let expected = UnsafeBufferPointer(start: lowercase.utf8Start, count: lowercase.utf8CodeUnitCount)
            return bytes.count == expected.count && zip(bytes, expected).allSatisfy { lowercased($0) == $1 }
        }

        /// Whether `bytes` hold `lowercase` (ASCII) somewhere, ignoring case.
        private static func containsIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercase: StaticString) -> Bool {
            let count = lowercase.utf8CodeUnitCount
            guard bytes.count >= count else { return false }
            return (bytes.startIndex...(bytes.endIndex - count)).contains {
                equalsIgnoringCase(bytes[$0..<($0 + count)], lowercase)
            }
        }

        /// A non-negative decimal number of at most 18 digits, or `nil`.
        private static func decimal(_ bytes: ArraySlice<UInt8>) -> Int? {
            guard !bytes.isEmpty, bytes.count <= 18 else { return nil }
            var value = 0
            for byte in bytes {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
    }

    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            var searched = 0
            var end = Self.headerEnd(buffer, from: 0)
            while end == nil {
                searched = buffer.count
                guard buffer.count < 64 * 1024, fill(fd, &buffer, &chunk) else { return }
                end = Self.headerEnd(buffer, from: searched)
            }
            let request = Head(buffer[0..<end!])
            buffer.removeFirst(end! + 4)
            let length = request.length
            let keepAlive = request.keepAlive
            if request.expectsContinue && !sendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n") { return }
            while buffer.count < length {
                guard fill(fd, &buffer, &chunk) else { return }
            }
            if request.isStats {
                buffer.removeFirst(length)
                let current = counts
                let text = """
                    {"requests":\(current.requests),"events":\(current.events),"purchases":\(current.purchases),\
                    "attributes":\(current.attributes),"objects":\(current.objects),"unreadable":\(current.unreadable),\
                    "identified_aliases":\(current.identifiedAliases)}
                    """
                let head =
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(text.utf8.count)\r\n"
                    + "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
                guard sendAll(fd, head + text), keepAlive else { return }
                continue
            }
            if request.isIdentify {
                let body = Array(buffer[0..<length])
                buffer.removeFirst(length)
                guard answerIdentify(fd, body, keepAlive: keepAlive), keepAlive else { return }
                continue
            }
            var received = Counts(requests: 1)
            var titles: [String] = []
            // The whole body is read and checked (one well-formed JSON object), without building a value tree.
            let summary = buffer.withUnsafeBufferPointer {
                UsersTrackBodyScanner.scan(UnsafeBufferPointer(rebasing: $0[0..<length]))
            }
            buffer.removeFirst(length)
            if let summary {
                received.events = summary.events
                received.purchases = summary.purchases
                received.attributes = summary.attributes
                titles = summary.titles
            } else {
                received.unreadable = 1
            }
            let objects = received.objects
            state.withLock { state in
                state.counts.requests += received.requests
                state.counts.events += received.events
                state.counts.purchases += received.purchases
                state.counts.attributes += received.attributes
                state.counts.unreadable += received.unreadable
                for title in titles { state.titles[title, default: 0] += 1 }
            }
            if !titles.isEmpty { resumeWaiters() }
            if !titles.isEmpty {
                let lines = titles.joined(separator: "\n") + "\n"
                titlesFile.withLock { $0?.write(Data(lines.utf8)) }
            }
            let answer = objects > 0 ? #"{"message":"success"}"# : #"{"message":"no objects"}"#
            let status = objects > 0 ? "201 Created" : "400 Bad Request"
            let head =
                "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(answer.utf8.count)\r\n"
                + "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
            guard sendAll(fd, head + answer), keepAlive else { return }
        }
    }
}

extension UsersTrackStandIn {
    /// Logs the aliases of a `/users/identify` body and answers it: 201 with aliases, 400 without (Braze
    /// requires `aliases_to_identify`); `false` when the answer could not be sent.
    private func answerIdentify(_ fd: Int32, _ body: [UInt8], keepAlive: Bool) -> Bool {
        var aliases: [(externalID: String, name: String, label: String)] = []
        var mergeBehavior: String?
        var readable = false
        if case .object(let map)? = try? Value(jsonBytes: body, maximumDepth: 16) {
            readable = true
            mergeBehavior = map["merge_behavior"]?.stringValue
            if case .array(let items)? = map["aliases_to_identify"] {
                for case .object(let item) in items {
                    guard case .string(let externalID)? = item["external_id"],
                        case .object(let alias)? = item["user_alias"],
                        case .string(let name)? = alias["alias_name"], case .string(let label)? = alias["alias_label"]
                    else { continue }
                    aliases.append((externalID, name, label))
                }
            }
        }
        state.withLock { state in
            state.counts.requests += 1
            if !readable { state.counts.unreadable += 1 }
            state.counts.identifiedAliases += aliases.count
            guard !aliases.isEmpty else { return }
            let before = Set(state.titles.keys)
            for alias in aliases {
                state.identifications.append(
                    Identification(
                        externalID: alias.externalID,
                        aliasName: alias.name,
                        aliasLabel: alias.label,
                        mergeBehavior: mergeBehavior,
                        titlesBefore: before
                    )
                )
            }
        }
        resumeWaiters()
        let answer = aliases.isEmpty ? #"{"message":"aliases_to_identify is required"}"# : #"{"message":"success"}"#
        let status = aliases.isEmpty ? "400 Bad Request" : "201 Created"
        let head =
            "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(answer.utf8.count)\r\n"
            + "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
        return sendAll(fd, head + answer)
    }
}

/// A failure to start the stand-in.
public struct StandInError: Error, Sendable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
