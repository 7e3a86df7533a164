import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What an operator relies on (the README's "Operating it"), checked on the real executable: real files,
/// real signals, real exit codes.
@Suite(.serialized) struct OperatingTests {
    /// The arguments of a service over `fixture`'s directories.
    static func arguments(_ fixture: TestService, _ extra: [String] = []) -> [String] {
        var arguments = [
            "--containers", fixture.configuration.containersDirectory,
            "--queue", fixture.configuration.queueDirectory,
        ]
        if let sessions = fixture.configuration.sessionsDirectory { arguments += ["--sessions", sessions] }
        return arguments + extra
    }

    @Test func sessionsSurviveKill9() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let arguments = Self.arguments(fixture)

        let first = try ServiceProcess(arguments)
        try await first.waitUntilListening()
        let (status, answer) = try await first.postEvent(user: "ada")
        #expect(status == 200)
        #expect(ServiceProcess.firedNames(answer) == ["Braze - played song", "Braze - first play"])
        // The answer came once the event's records and ada's session change were durable, in one append of the
        // queue's log; then the process is killed.
        #expect(await first.stop(SIGKILL) == SIGKILL)

        let second = try ServiceProcess(arguments)
        try await second.waitUntilListening()
        let (again, continued) = try await second.postEvent(user: "ada")
        #expect(again == 200)
        // The once-per-load tag does not fire again: the session came back.
        #expect(ServiceProcess.firedNames(continued) == ["Braze - played song"])
        #expect(await second.stop(SIGTERM) == 0)
    }

    /// An earlier version's sessions directory (`--sessions`) is imported into the queue once, at the first
    /// start, which says so in its log; ada's next event continues her session, also after `kill -9`; a later
    /// start does not import again.
    @Test func anEarlierVersionsSessionsAreImportedOnce() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        let now = Int64(Date().timeIntervalSince1970)
        let ada = StoredSession(
            snapshot: SessionSnapshot(sessionID: "ada", model: ["title": "So What"], eventNumber: 4),
            version: 3
        )
        try LegacySessionFileWriter.write(
            [LegacySessionFileWriter.line(for: ada, time: now), Array("torn".utf8)],
            segment: 1,
            in: fixture.legacySessionsDirectory
        )
        fixture.configuration.sessionsDirectory = fixture.legacySessionsDirectory

        let first = try ServiceProcess(Self.arguments(fixture))
        let imported = await first.nextLine(containing: "imported the session files of an earlier version")
        #expect(imported?.contains("imported=1") == true && imported?.contains("skipped_lines=1") == true)
        try await first.waitUntilListening()
        let (status, _) = try await first.postEvent(user: "ada")
        #expect(status == 200)
        #expect(await first.stop(SIGKILL) == SIGKILL)
        let marker = fixture.legacySessionsDirectory + "/IMPORTED-INTO-QUEUE"
        #expect(try Self.mode(marker) == 0o600)

        let second = try ServiceProcess(Self.arguments(fixture))
        try await second.waitUntilListening()
        #expect(await second.stop(SIGTERM) == 0)
        #expect(!second.log.contains { $0.contains("imported the session files") })
        // The queue holds ada's imported session and her event: version 3 + 1, her fifth event.
        let queue = try DeliveryPipeline.durable(
            directory: fixture.configuration.queueDirectory,
            destination: InMemoryAnalyticsSink()
        )
        let stored = try #require(try await queue.sessions.load(userID: "ada"))
        #expect(stored.version == 4 && stored.snapshot.eventNumber == 5)
        #expect(stored.snapshot.model["title"] == "So What")
    }

    @Test(arguments: [
        ("containers", "the containers directory (--containers)"),
        ("sessions", "the sessions directory (--sessions)"),
    ])
    func aBadPathIsRefusedAtStartWithANonZeroExit(missing: String, message: String) async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        if missing == "containers" {
            fixture.configuration.containersDirectory = fixture.root.appendingPathComponent("absent").path
        } else {
            // An earlier version's sessions directory that is a file: nothing could be imported.
            let path = fixture.root.appendingPathComponent("absent").path
            try Data("not a directory".utf8).write(to: URL(fileURLWithPath: path))
            fixture.configuration.sessionsDirectory = path
        }
        let service = try ServiceProcess(Self.arguments(fixture))
        #expect(await service.exit() == 1)
        #expect(service.log.contains { $0.contains(message) && $0.contains("absent") })
    }

    /// SIGHUP checks the containers now, as nginx and Prometheus reload on it: a version written into the
    /// directory is live at once, not after `--reload-interval` (an hour here); the service goes on, and stops
    /// gracefully as before. Without it the signal ended the process at once.
    @Test func sighupReloadsTheContainersDirectoryAtOnce() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try ServiceProcess(Self.arguments(fixture, ["--reload-interval", "3600"]))
        try await service.waitUntilListening()
        let file = fixture.configuration.containersDirectory + "/\(TestService.fixtureID).json"
        let text = try String(contentsOfFile: file, encoding: .utf8)
        // A new version, written beside the file and renamed over it, as the README asks.
        let newer = try #require(text.range(of: #""version""#)).lowerBound
        let edited = text.replacingCharacters(in: newer..<newer, with: #""ignored_by_the_test": 1, "#)
        try edited.write(toFile: file + ".tmp", atomically: false, encoding: .utf8)
        #expect(rename(file + ".tmp", file) == 0)
        kill(service.process.processIdentifier, SIGHUP)
        #expect(await service.nextLine(containing: "SIGHUP: checking the containers now") != nil)
        #expect(await service.nextLine(containing: "container reloaded") != nil, "\(service.log)")
        let (status, _) = try await service.postEvent(user: "ada")
        #expect(status == 200)
        #expect(await service.stop(SIGTERM) == 0)
    }

    /// With `--open`, SIGHUP fetches each opened container now, forced past the 15-minute limit on asked-for
    /// refreshes: an operator who just published a version does not wait for the 12-hour schedule.
    @Test func sighupRefreshesOpenedContainersFromTheNetworkAtOnce() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let file = fixture.configuration.containersDirectory + "/\(TestService.fixtureID).json"
        let container = try String(contentsOfFile: file, encoding: .utf8)
        let server = try LoopbackHTTPServer { _ in .json(container) }
        defer { server.stop() }
        let service = try ServiceProcess(
            Self.arguments(
                fixture,
                ["--open", TestService.fixtureID, "--container-url", server.baseURL.absoluteString]
            )
        )
        try await service.waitUntilListening()
        await server.waitForRequests(1)
        for refresh in 2...3 {
            kill(service.process.processIdentifier, SIGHUP)
            // A process the signal ended has no such line (and makes no request to wait for).
            try #require(await service.nextLine(containing: "SIGHUP: checking the containers now") != nil)
            await server.waitForRequests(refresh)
        }
        #expect(server.requests.allSatisfy { $0.path == "/r" && $0.query("id") == TestService.fixtureID })
        #expect(await service.stop(SIGTERM) == 0)
    }

    @Test func queueAndRecordFilesArePrivate() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let previous = umask(0o022)
        defer { umask(previous) }
        let service = try ServiceProcess(Self.arguments(fixture))
        try await service.waitUntilListening()
        _ = try await service.postEvent(user: "ada")  // its records and ada's session, in the queue's log
        #expect(await service.stop(SIGTERM) == 0)
        let queue = fixture.configuration.queueDirectory
        #expect(try Self.mode(queue) == 0o700)
        let queueFiles = try FileManager.default.contentsOfDirectory(atPath: queue)
        #expect(!queueFiles.isEmpty)
        for file in queueFiles { #expect(try Self.mode(queue + "/" + file) == 0o600, "\(file)") }
        #expect(try Self.mode(fixture.configuration.recordsFile) == 0o600)
    }

    static func mode(_ path: String) throws -> Int {
        try #require(FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int)
    }
}

/// Connections, errors and readiness on the real executable.
@Suite(.serialized) struct ServingTests {
    /// Connects a TCP socket to 127.0.0.1:`port`.
    static func connect(_ port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        try #require(result == 0)
        return fd
    }

    /// Waits (on a thread of its own) until the server closes `fd`; returns what it sent before.
    static func readUntilClosed(_ fd: Int32) async -> String {
        await withCheckedContinuation { continuation in
            Thread {
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = Glibc.read(fd, &buffer, buffer.count)
                    if n <= 0 { break }
                    received += buffer[0..<n]
                }
                close(fd)
                continuation.resume(returning: String(decoding: received, as: UTF8.self))
            }.start()
        }
    }

    @Test func idleConnectionsAndUnfinishedHeadersAreClosed() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try ServiceProcess(OperatingTests.arguments(fixture, ["--idle-timeout", "0.2"]))
        try await service.waitUntilListening()
        let idle = try Self.connect(service.port)
        #expect(await Self.readUntilClosed(idle) == "")
        // A slowloris: headers begun, never finished.
        let slow = try Self.connect(service.port)
        let partial = Array("GET /health HTTP/1.1\r\nHost: x\r\n".utf8)
        #expect(write(slow, partial, partial.count) == partial.count)
        #expect(await Self.readUntilClosed(slow) == "")
        // The service still answers.
        #expect(try await service.get("/health").0 == 200)
        #expect(await service.stop(SIGTERM) == 0)
    }

    /// Reads from `fd` (on a thread of its own) until `text` arrived; `nil` if the connection closed first.
    static func read(_ fd: Int32, until text: String) async -> String? {
        await withCheckedContinuation { continuation in
            Thread {
                var received: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !String(decoding: received, as: UTF8.self).contains(text) {
                    let n = Glibc.read(fd, &buffer, buffer.count)
                    if n <= 0 { return continuation.resume(returning: nil) }
                    received += buffer[0..<n]
                }
                continuation.resume(returning: String(decoding: received, as: UTF8.self))
            }.start()
        }
    }

    static func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = write(fd, bytes, bytes.count)
    }

    @Test func aConnectionBeyondTheLimitWaitsUntilOneCloses() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try ServiceProcess(OperatingTests.arguments(fixture, ["--max-connections", "1"]))
        try await service.waitUntilListening()
        let request = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
        let first = try Self.connect(service.port)
        Self.send(first, request)
        #expect(await Self.read(first, until: #"{"status":"ok"}"#) != nil)
        // A second connection: its request is sent, but it is not accepted while the first is open.
        let second = try Self.connect(service.port)
        Self.send(second, request)
        let firstClosed = Mutex(false)
        async let secondAnswer = Self.read(second, until: #"{"status":"ok"}"#)
        // The first connection is served meanwhile (its request was sent after the second's).
        Self.send(first, request)
        #expect(await Self.read(first, until: #"{"status":"ok"}"#) != nil)
        firstClosed.withLock { $0 = true }
        close(first)
        #expect(await secondAnswer != nil)
        #expect(firstClosed.withLock { $0 })
        close(second)
        #expect(await service.stop(SIGTERM) == 0)
    }

    @Test func theBacklogGaugeCountsWhatAPreviousRunLeft() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        // Braze cannot be reached: the records stay in the queue.
        let environment = ["BRAZE_REST_ENDPOINT": "http://127.0.0.1:1", "BRAZE_REST_API_KEY": "key-for-the-test"]
        let first = try ServiceProcess(OperatingTests.arguments(fixture), environment: environment)
        try await first.waitUntilListening()
        for user in ["a", "b", "c"] { #expect(try await first.postEvent(user: user).0 == 200) }  // 2 records each
        #expect(await first.stop(SIGKILL) == SIGKILL)

        let second = try ServiceProcess(OperatingTests.arguments(fixture), environment: environment)
        try await second.waitUntilListening()
        let (status, page) = try await second.getText("/metrics")
        #expect(status == 200)
        let backlog = page.split(separator: "\n").first { $0.hasPrefix("tagservice_queue_backlog_records ") }
        #expect(backlog.flatMap { Double($0.split(separator: " ")[1]) } == 6)
        #expect(await second.stop(SIGKILL) == SIGKILL)
    }

    @Test func unknownPathsAreAnsweredWithJSON() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try ServiceProcess(OperatingTests.arguments(fixture))
        try await service.waitUntilListening()
        let (status, body) = try await service.get("/no/such/path")
        #expect(status == 404)
        #expect((body["error"] as? [String: Any])?["code"] as? String == "not_found")
        #expect(await service.stop(SIGTERM) == 0)
    }

    /// Mounts a 1 MiB tmpfs at `path` (root only); `false` when it cannot.
    static func mountSmallDisk(_ path: String) -> Bool {
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return mount("tmpfs", path, "tmpfs", 0, "size=1m") == 0
    }

    @Test func aFullDiskMakesTheServiceUnreadyWithoutPathsInAnswersOrFloodsInTheLog() async throws {
        var fixture = try TestService()
        defer { fixture.remove() }
        let disk = fixture.root.appendingPathComponent("disk").path
        try #require(Self.mountSmallDisk(disk), "needs root to mount a tmpfs")
        defer { umount2(disk, Int32(MNT_DETACH)) }
        fixture.configuration.queueDirectory = disk + "/queue"
        let service = try ServiceProcess(OperatingTests.arguments(fixture, ["--log-level", "info"]))
        try await service.waitUntilListening()
        #expect(try await service.postEvent(user: "ada").0 == 200)
        #expect(try await service.get("/ready").0 == 200)

        // Fill the disk.
        #expect(FileManager.default.createFile(atPath: disk + "/filler", contents: nil))
        let filler = try #require(FileHandle(forWritingAtPath: disk + "/filler"))
        let chunk = Data(count: 64 * 1024)
        while (try? filler.write(contentsOf: chunk)) != nil {}
        try? filler.close()

        // The segment's last page may still take a few records; then every commit fails.
        var accepted = 0
        while try await service.postEvent(user: "filling").0 == 200, accepted < 10_000 { accepted += 1 }
        for index in 0..<20 {
            let (status, body) = try await service.postEvent(user: index == 0 ? #"x\nforged"# : "user-\(index)")
            #expect(status == 503)
            let message = (body["error"] as? [String: Any])?["message"] as? String ?? ""
            #expect(!message.contains(disk) && !message.contains("/"), "\(message)")
        }
        let (notReady, readiness) = try await service.get("/ready")
        #expect(notReady == 503)
        #expect(readiness["last_commit"] as? String == "failed")

        try FileManager.default.removeItem(atPath: disk + "/filler")
        #expect(try await service.get("/ready").0 == 200)
        #expect(try await service.postEvent(user: "ada").0 == 200)
        #expect(await service.stop(SIGTERM) == 0)
        // One line for twenty failures, and no line forged by the user ID's newline.
        #expect(service.log.count { $0.contains("records not durable") } <= 2)
        #expect(!service.log.contains { $0.hasPrefix("forged") })
    }
}
