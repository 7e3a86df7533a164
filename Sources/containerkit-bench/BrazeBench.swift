import ContainerKit
import ContainerKitBraze
import Dispatch
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The Braze figures of `make bench`, measured in this process:
///
/// - `durable_enqueue_records_per_s`: records acknowledged as durable by a ``DurableQueue`` in a
///   temporary directory (many concurrent producers, each appending a batch and awaiting its `fsync`, so
///   group commit shares each `fsync`), with a destination that accepts everything; median of runs.
///   `durable_fsync_commits` is the number of group commits of the median run.
/// - `end_to_end_events_per_s`: events pushed into a `DataLayer` running the corpus Braze container, through
///   ``BrazeTagProvider`` → ``DurableQueue`` → ``BrazeUsersTrackDestination`` → a `/users/track` server on
///   127.0.0.1 in this process, counted until the server has accepted every record; median of runs.
enum BrazeBench {
    static let corpusContainer = "../shared/research/corpus/v5-mobile/Appboy__appboy-android-sdk__GTM-5HM9ZRX.json"
    static let fixtureContainer = "Containers/GTM-MUSIC01.json"

    static func run() async {
        do {
            try await durableEnqueue()
            try await endToEnd()
        } catch {
            print("notice: braze benchmark failed: \(error)")
        }
    }

    // MARK: Durable queue

    static func durableEnqueue() async throws {
        let recordsPerRun = 100_000
        let batchSize = 64
        let producers = 32
        let ids = AnalyticsRecordIDGenerator(prefix: "bench")
        let now = Date()
        let records = (0..<recordsPerRun).map { i in
            AnalyticsRecord(
                id: ids.next(),
                time: now,
                user: .externalID("user-\(i % 1000)"),
                payload: .customEvent(
                    name: "played song",
                    properties: ["genre": "jazz", "duration": .int(Int64(i % 600)), "liked": true, "rating": 4.5]
                )
            )
        }
        let batches = stride(from: 0, to: records.count, by: batchSize).map {
            Array(records[$0..<min($0 + batchSize, records.count)])
        }
        _ = try await durableRun(batches, producers: producers)  // warm-up
        var runs: [(rate: Double, commits: Int)] = []
        for _ in 0..<5 { runs.append(try await durableRun(batches, producers: producers)) }
        runs.sort { $0.rate < $1.rate }
        let median = runs[runs.count / 2]
        print("durable_enqueue_records=\(recordsPerRun) producers=\(producers) batch=\(batchSize) runs=\(runs.count)")
        print("durable_enqueue_records_per_s=\(Harness.format(median.rate))")
        print("durable_fsync_commits=\(median.commits)")
    }

    /// Appends every batch (each producer takes every `producers`-th one and awaits its durability) into a
    /// fresh queue; returns the acknowledged rate and the group commits it took.
    static func durableRun(_ batches: [[AnalyticsRecord]], producers: Int) async throws -> (rate: Double, commits: Int)
    {
        let directory = temporaryDirectory("durable")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let downstream = AcceptingDownstream()
        let queue = try DurableQueue(directory: directory, destination: downstream)
        let total = batches.reduce(0) { $0 + $1.count }
        var elapsed = 0.0
        try await running(queue) {
            let start = DispatchTime.now().uptimeNanoseconds
            try await withThrowingTaskGroup(of: Void.self) { group in
                for producer in 0..<producers {
                    group.addTask {
                        for index in stride(from: producer, to: batches.count, by: producers) {
                            try await queue.append(batches[index])
                        }
                    }
                }
                try await group.waitForAll()
            }
            elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            try await queue.flush()
        }
        let statistics = queue.statistics
        guard statistics.durableRecords == total, downstream.count == total else {
            throw BenchError(
                "durable queue made \(statistics.durableRecords) of \(total) records durable "
                    + "and delivered \(downstream.count)"
            )
        }
        return (Double(total) / max(elapsed, 1e-9), statistics.commits)
    }

    // MARK: End to end

    static func endToEnd() async throws {
        let usesCorpus = FileManager.default.fileExists(atPath: corpusContainer)
        let path = usesCorpus ? corpusContainer : fixtureContainer
        let events: [(name: String, parameters: ValueMap)] = (0..<4_000).map { i in
            if usesCorpus {
                return (
                    "logEvent",
                    [
                        "eventName": .string("played song \(i % 10)"), "boolParam": .bool(i % 2 == 0),
                        "doubleParam": .double(Double(i) + 0.5), "intParam": .int(Int64(i)),
                        "stringParam": .string("jazz"),
                    ]
                )
            }
            return ("played song", ["title": .string("Track \(i)"), "genre": "jazz", "duration": .int(545)])
        }

        let server = try BenchUsersTrackServer()
        defer { server.stop() }
        let directory = temporaryDirectory("end-to-end")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let braze = BrazeUsersTrackDestination(
            endpoint: URL(string: "http://127.0.0.1:\(server.port)")!,
            apiKey: "bench-rest-api-key"
        )
        let queue = try DurableQueue(directory: directory, destination: braze)
        let manager = TagManager(logger: StandardErrorLogger(minimumLevel: .error))
        manager.add(try await ContainerLoader().load(path: path))
        BrazeTagProvider(sink: queue).register(on: manager)
        let session = manager.makeDataLayer()
        BrazeTagProvider.setUser(.brazeID("bench-device"), on: session)

        /// Pushes `events`, then waits until the server has accepted every record they made.
        func pass(_ events: ArraySlice<(name: String, parameters: ValueMap)>) async throws -> Double {
            let before = server.objectCount
            let start = DispatchTime.now().uptimeNanoseconds
            for event in events { await session.push(event: event.name, parameters: event.parameters) }
            try await queue.flush()
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let accepted = server.objectCount - before
            guard accepted == events.count else {
                throw BenchError("the server accepted \(accepted) objects for \(events.count) events")
            }
            return Double(events.count) / max(elapsed, 1e-9)
        }

        var rates: [Double] = []
        try await running(queue) {
            _ = try await pass(events.prefix(500))  // warm-up: connection, code paths
            for _ in 0..<3 { rates.append(try await pass(events[...])) }
        }
        rates.sort()
        let statistics = braze.statistics
        print(
            "end_to_end_container=\(usesCorpus ? "GTM-5HM9ZRX" : "GTM-MUSIC01") end_to_end_events=\(events.count) "
                + "runs=\(rates.count) end_to_end_requests=\(statistics.acceptedRequests) "
                + "end_to_end_server_objects=\(server.objectCount)"
        )
        print("end_to_end_events_per_s=\(Harness.format(rates[rates.count / 2]))")
    }

    /// Runs `body` while `queue.run()` runs beside it; then cancels the queue (it drains) and waits for it.
    static func running(_ queue: DurableQueue, _ body: () async throws -> Void) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await queue.run() }
            do {
                try await body()
            } catch {
                group.cancelAll()
                throw error
            }
            group.cancelAll()
            try await group.waitForAll()
        }
    }

    static func temporaryDirectory(_ name: String) -> String {
        NSTemporaryDirectory() + "containerkit-bench-\(name)-\(UUID().uuidString)"
    }
}

/// A failed check of the benchmark itself.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A destination that accepts every delivery at once and only counts records.
final class AcceptingDownstream: AnalyticsDestination {
    private let delivered = Atomic<Int>(0)

    var count: Int { delivered.load(ordering: .relaxed) }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        delivered.add(records.count, ordering: .relaxed)
        return .accepted(records)
    }
}

/// A minimal Braze `/users/track` stand-in on 127.0.0.1 for the bench: HTTP/1.1 with `Content-Length`
/// bodies, keep-alive and `TCP_NODELAY`; answers every request 201 `{"message":"success"}` and counts the
/// objects in its `attributes`, `events` and `purchases`. One thread accepts, one serves each connection;
/// ``stop()`` closes everything and joins the threads.
final class BenchUsersTrackServer: Sendable {
    private struct State {
        var stopped = false
        var objects = 0
    }

    let port: UInt16
    private let listenFD: Int32
    private let stopPipe: (read: Int32, write: Int32)
    private let state = Mutex(State())
    private let threads = DispatchGroup()

    /// Objects in every request answered so far.
    var objectCount: Int { state.withLock { $0.objects } }

    init() throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw BenchError("pipe failed: errno \(errno)") }
        stopPipe = (fds[0], fds[1])
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        var bound = fd >= 0
        if bound {
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
            throw BenchError("listening on 127.0.0.1 failed: errno \(code)")
        }
        listenFD = fd
        port = UInt16(bigEndian: address.sin_port)
        threads.enter()
        Thread { [self] in
            acceptLoop()
            threads.leave()
        }
        .start()
    }

    /// Stops accepting, closes every connection and waits for the server's threads.
    func stop() {
        let first = state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        var byte: UInt8 = 1
        _ = write(stopPipe.write, &byte, 1)
        threads.wait()
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

    /// Reads more bytes into `buffer`; `false` at the end of the stream, on an error or when stopping.
    private func fill(_ fd: Int32, _ buffer: inout [UInt8]) -> Bool {
        guard waitReadable(fd) else { return false }
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n < 0 && errno == EINTR { return true }
        guard n > 0 else { return false }
        buffer.append(contentsOf: chunk[0..<n])
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

    private static func headerEnd(_ buffer: [UInt8]) -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4)
        where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }

    private func serve(_ fd: Int32) {
        var buffer: [UInt8] = []
        while true {
            var end = Self.headerEnd(buffer)
            while end == nil {
                guard buffer.count < 64 * 1024, fill(fd, &buffer) else { return }
                end = Self.headerEnd(buffer)
            }
            let lines = String(decoding: buffer[0..<end!], as: UTF8.self).components(separatedBy: "\r\n")
            buffer.removeFirst(end! + 4)
            var length = 0
            var keepAlive = lines.first?.hasSuffix("HTTP/1.1") ?? false
            var expectsContinue = false
            for line in lines.dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                let name = line[..<colon].lowercased()
                let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces).lowercased()
                switch name {
                case "content-length": length = Int(value) ?? 0
                case "connection": keepAlive = !value.contains("close")
                case "expect": expectsContinue = value == "100-continue"
                default: break
                }
            }
            if expectsContinue && !sendAll(fd, "HTTP/1.1 100 Continue\r\n\r\n") { return }
            while buffer.count < length {
                guard fill(fd, &buffer) else { return }
            }
            let body = String(decoding: buffer[0..<length], as: UTF8.self)
            buffer.removeFirst(length)
            var objects = 0
            if case .object(let map)? = try? Value(json: body) {
                for name in ["attributes", "events", "purchases"] {
                    if case .array(let list)? = map[name] { objects += list.count }
                }
            }
            state.withLock { $0.objects += objects }
            let answer = objects > 0 ? #"{"message":"success"}"# : #"{"message":"no objects"}"#
            let status = objects > 0 ? "201 Created" : "400 Bad Request"
            let head =
                "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(answer.utf8.count)\r\n"
                + "Connection: \(keepAlive ? "keep-alive" : "close")\r\n\r\n"
            guard sendAll(fd, head + answer), keepAlive else { return }
        }
    }
}
