import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The built `TagService` executable run as a child process, for tests about what only a real process
/// shows: signals (`kill -9`, SIGTERM), exit codes, its log on standard error, file modes under its umask.
///
/// The log is read line by line as it is written (`nextLine(containing:)` awaits a line, it never polls);
/// the port comes from the `listening` line (the service is started with `--port 0`).
final class ServiceProcess: @unchecked Sendable {
    let process = Process()
    private let lines: AsyncStream<String>
    private var iterator: AsyncStream<String>.AsyncIterator
    /// Every line read so far.
    private(set) var log: [String] = []
    /// The port the service listens on, once ``waitUntilListening()`` returned.
    private(set) var port = 0

    /// The `TagService` executable beside the test bundle (`swift build --build-tests` builds both).
    static var executable: URL {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        while !FileManager.default.fileExists(atPath: directory.appendingPathComponent("TagService").path),
            directory.path != "/"
        {
            directory.deleteLastPathComponent()
        }
        return directory.appendingPathComponent("TagService")
    }

    /// Starts the service with `arguments` (and `--port 0`, `--log-level debug` unless given) and
    /// `environment` added to this process's; or, with `program`, another executable of the package built
    /// beside it (the `/users/track` stand-in: `--port 0` is added, it writes the same `listening` line).
    init(_ arguments: [String], environment: [String: String] = [:], program: String? = nil) throws {
        process.executableURL =
            program.map { Self.executable.deletingLastPathComponent().appendingPathComponent($0) } ?? Self.executable
        var arguments = arguments
        if !arguments.contains("--port") { arguments += ["--port", "0"] }
        if program == nil, !arguments.contains("--log-level") { arguments += ["--log-level", "debug"] }
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardError = pipe
        process.standardOutput = FileHandle.nullDevice
        let (stream, continuation) = AsyncStream<String>.makeStream()
        lines = stream
        iterator = stream.makeAsyncIterator()
        let buffer = LineBuffer()
        try process.run()
        // A thread of the fixture's own reads the log until the end of the pipe (the process exited and
        // closed it). FileHandle's `readabilityHandler` now and then never delivered that end here, and
        // `exit()`, which reads the log to its end, then waited forever.
        let log = pipe.fileHandleForReading
        Thread {
            var chunk = [UInt8](repeating: 0, count: 65_536)
            while true {
                let count = read(log.fileDescriptor, &chunk, chunk.count)
                if count > 0 {
                    for line in buffer.append(Data(chunk[0..<count])) { continuation.yield(line) }
                } else if count < 0, errno == EINTR {
                    continue
                } else {
                    break
                }
            }
            for line in buffer.finish() { continuation.yield(line) }
            continuation.finish()
            try? log.close()
        }
        .start()
    }

    /// The next log line that contains `text` (`nil` when the process closed its log first).
    @discardableResult
    func nextLine(containing text: String) async -> String? {
        while let line = await iterator.next() {
            log.append(line)
            if line.contains(text) { return line }
        }
        return nil
    }

    /// Waits for the `listening` line and reads the port from it.
    func waitUntilListening() async throws {
        let line = try #require(await nextLine(containing: "] listening"), "the service did not start: \(log)")
        let port = line.split(separator: " ").first { $0.hasPrefix("port=") }?.dropFirst(5)
        self.port = try #require(port.flatMap { Int($0) })
    }

    /// Sends `signal` and waits until the process exits; returns its exit status.
    @discardableResult
    func stop(_ signal: Int32) async -> Int32 {
        kill(process.processIdentifier, signal)
        return await exit()
    }

    /// Waits until the process exits (reading the rest of its log); returns its exit status.
    func exit() async -> Int32 {
        while let line = await iterator.next() { log.append(line) }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// `POST /v1/events` for `user`; the status and the body as JSON.
    func postEvent(user: String, event: String = "played song") async throws -> (Int, [String: Any]) {
        try await post("/v1/events", body: #"{"user_id": "\#(user)", "event": "\#(event)", "parameters": {"n": 1}}"#)
    }

    /// `POST path` with `body`; the status and the body as JSON.
    func post(_ path: String, body: String) async throws -> (Int, [String: Any]) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body.utf8)
        return try await send(request)
    }

    /// `POST path` with `body` and an `Authorization` header over a socket of its own (`Connection: close`);
    /// the whole answer as text. (FoundationNetworking's `URLSession` does not always return a `401` that
    /// carries a `WWW-Authenticate` challenge.)
    func rawPost(_ path: String, body: String, authorization: String?) async throws -> String {
        let fd = try ServingTests.connect(port)
        var request = "POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        if let authorization { request += "Authorization: \(authorization)\r\n" }
        request += "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)"
        ServingTests.send(fd, request)
        return await ServingTests.readUntilClosed(fd)
    }

    /// `GET path`; the status and the body as JSON.
    func get(_ path: String) async throws -> (Int, [String: Any]) {
        try await send(URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!))
    }

    /// `GET path`; the status and the body as text.
    func getText(_ path: String) async throws -> (Int, String) {
        let (data, response) = try await URLSession.shared.data(
            for: URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        )
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    private func send(_ request: URLRequest) async throws -> (Int, [String: Any]) {
        let (data, response) = try await URLSession.shared.data(for: request)
        let status = (response as? HTTPURLResponse)?.statusCode ?? 0
        let json = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
        return (status, json)
    }

    /// The names of the fired tags of an events answer.
    static func firedNames(_ answer: [String: Any]) -> [String] {
        (answer["fired"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
    }
}

/// Splits the bytes of a pipe into lines.
private final class LineBuffer: @unchecked Sendable {
    private let lock = NSLock()
    private var pending = Data()

    func append(_ data: Data) -> [String] {
        lock.lock()
        defer { lock.unlock() }
        pending.append(data)
        var lines: [String] = []
        while let newline = pending.firstIndex(of: 0x0A) {
            lines.append(String(decoding: pending[pending.startIndex..<newline], as: UTF8.self))
            pending = Data(pending[(newline + 1)...])
        }
        return lines
    }

    func finish() -> [String] {
        lock.lock()
        defer { lock.unlock() }
        defer { pending = Data() }
        return pending.isEmpty ? [] : [String(decoding: pending, as: UTF8.self)]
    }
}
