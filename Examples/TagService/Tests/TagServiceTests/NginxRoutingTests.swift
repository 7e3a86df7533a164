import Foundation
import Glibc
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import PostgresTestHarness
import Testing

/// The shipped nginx configuration (`deploy/nginx-consistent-hash.conf`), run by the nginx of Debian's package
/// on 127.0.0.1 in front of three stand-in instances that answer their own name.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct NginxRoutingTests {
    /// The configuration as shipped, beside the tests.
    static let shipped = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("deploy/nginx-consistent-hash.conf")

    @Test func theShippedConfigurationPassesNginxsOwnCheck() async throws {
        // The placeholders filled as its header says (no instance needs to listen for the check).
        var configuration = try String(contentsOf: Self.shipped, encoding: .utf8)
        for placeholder in ["@INSTANCE_1@", "@INSTANCE_2@", "@INSTANCE_3@"] {
            #expect(configuration.contains("server \(placeholder) "))
            configuration = configuration.replacingOccurrences(
                of: placeholder,
                with: "127.0.0.1:\(try PostgresTestCluster.freePort())"
            )
        }
        let nginx = try NginxRun(configuration: configuration)
        defer { nginx.remove() }
        let output = try await runProgram(try NginxRun.program, ["-t"] + nginx.arguments)
        #expect(output.contains("test is successful"))
    }

    /// nginx cannot read a JSON body: a user's id comes in the `X-User-ID` header or in the path, and every
    /// form of a user's request (one event or a batch) must reach the one instance that holds the user.
    ///
    /// Every request names its authority: HummingbirdTesting's client sends no `Host` header of its own, and nginx
    /// answers an HTTP/1.1 request without one with 400 and closes the connection.
    @Test func aUsersRequestsReachOneInstanceWhetherTheIdIsInTheHeaderOrThePath() async throws {
        try await withInstances(["a", "b", "c"]) { ports in
            var configuration = try String(contentsOf: Self.shipped, encoding: .utf8)
            for (placeholder, port) in zip(["@INSTANCE_1@", "@INSTANCE_2@", "@INSTANCE_3@"], ports) {
                #expect(configuration.contains("server \(placeholder) "))
                configuration = configuration.replacingOccurrences(of: placeholder, with: "127.0.0.1:\(port)")
            }
            let nginx = try NginxRun(configuration: configuration)
            defer { nginx.remove() }
            try await nginx.start()
            defer { nginx.stop() }
            let header = HTTPField.Name("X-User-ID")!
            let owners = try await TestClient.withClient(host: "127.0.0.1", port: nginx.port) { client in
                var owners: [String: String] = [:]
                for index in 0..<40 {
                    let user = "user-\(index)"
                    owners[user] = try await Self.instance(
                        answering: [
                            ("/v1/events", [header: user]), ("/v1/users/\(user)/events", [:]),
                            ("/v1/batch", [header: user]), ("/v1/users/\(user)/batch", [:]),
                        ],
                        user: user,
                        client: client,
                        port: nginx.port
                    )
                }
                return owners
            }
            // The users are spread over the instances (not all hashed to one).
            #expect(Set(owners.values).count > 1)
            // A user whose id is not ASCII: nginx hashes the header's bytes and the percent-decoded path ($uri),
            // in either case of the hex digits — the bytes TagService reads from each (issue 38).
            try await TestClient.withClient(host: "127.0.0.1", port: nginx.port) { client in
                for index in 0..<12 {
                    let user = "caf\u{E9}-\(index)"
                    let encoded = user.utf8.map { byte in
                        byte < 0x80 ? String(UnicodeScalar(byte)) : "%" + String(byte, radix: 16, uppercase: true)
                    }.joined()
                    _ = try await Self.instance(
                        answering: [
                            ("/v1/events", [header: user]), ("/v1/users/\(encoded)/events", [:]),
                            ("/v1/users/\(encoded.lowercased())/batch", [:]), ("/v1/batch", [header: user]),
                        ],
                        user: user,
                        client: client,
                        port: nginx.port
                    )
                }
            }
        }
    }

    /// Posts an event to each of `routes` (path and headers) through nginx on `port`: each must be answered 200,
    /// all by the same instance, whose name (the stand-in's answer) it returns.
    private static func instance(
        answering routes: [(path: String, headers: HTTPFields)],
        user: String,
        client: TestClient,
        port: Int
    ) async throws -> String? {
        var seen: [String] = []
        for (path, headers) in routes {
            let response = try await client.execute(
                TestClient.Request(
                    path,
                    method: .post,
                    authority: "127.0.0.1:\(port)",
                    headers: headers,
                    body: ByteBuffer(string: #"{"event": "played song"}"#)
                )
            )
            #expect(response.status == .ok, "\(path)")
            seen.append(response.body.map { String(buffer: $0) } ?? "")
        }
        #expect(Set(seen).count == 1, "\(user): \(seen)")
        return seen.first
    }

    /// Runs `body` with one stand-in instance per name on 127.0.0.1, each answering every event request with
    /// its name; `body` gets their ports.
    private func withInstances(
        _ names: [String],
        _ body: @escaping @Sendable ([Int]) async throws -> Void
    ) async throws {
        @Sendable func nest(_ index: Int, _ ports: [Int]) async throws {
            guard index < names.count else { return try await body(ports) }
            let router = Router()
            let name = names[index]
            for path in ["v1/events", "v1/batch", "v1/users/:user_id/events", "v1/users/:user_id/batch"] {
                router.post(RouterPath(path)) { _, _ in name }
            }
            let application = Application(
                router: router,
                configuration: .init(address: .hostname("127.0.0.1", port: 0))
            )
            try await application.test(.live) { client in
                try await nest(index + 1, ports + [try #require(client.port)])
            }
        }
        try await nest(0, [])
    }
}

/// One nginx master of the configuration `configuration` (its `listen` port replaced by a free one on 127.0.0.1,
/// one worker) in a temporary prefix directory; stopped by its own pid file.
struct NginxRun {
    /// Debian's nginx.
    static var program: String {
        get throws {
            guard let path = ["/usr/sbin/nginx", "/usr/bin/nginx"].first(where: FileManager.default.fileExists)
            else { throw ProgramFailure(description: "nginx is not installed (apt-get install nginx)") }
            return path
        }
    }

    let directory: URL
    let port: Int

    init(configuration: String) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("nginx-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        port = try PostgresTestCluster.freePort()
        let text =
            configuration
            .replacingOccurrences(of: "listen @LISTEN@;", with: "listen 127.0.0.1:\(port);")
            .replacingOccurrences(of: "worker_processes auto;", with: "worker_processes 1;")
        try text.write(to: directory.appendingPathComponent("nginx.conf"), atomically: true, encoding: .utf8)
    }

    /// `-c` and `-p` of this run; errors on standard error (not the system's log directory).
    var arguments: [String] {
        ["-e", "stderr", "-c", directory.appendingPathComponent("nginx.conf").path, "-p", directory.path]
    }

    /// Starts nginx; it listens once the command returned (it opens its sockets before it detaches).
    func start() async throws {
        try await runProgram(try Self.program, arguments)
    }

    /// Stops this run's nginx (by its pid file).
    func stop() {
        guard let program = try? Self.program else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = ["-s", "stop"] + arguments
        try? process.run()
        process.waitUntilExit()
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }
}

/// Runs `program` to its end; returns its standard output and error, or throws them if it failed.
///
/// Spawned with `posix_spawn` and reaped with `waitpid` on a thread of its own rather than through Foundation's
/// `Process`: on Linux, `Process` learns of the end through a descriptor the child inherits, so a program that
/// daemonizes (nginx's master keeps it) would never be seen to end.
@discardableResult
func runProgram(_ program: String, _ arguments: [String]) async throws -> String {
    let output = FileManager.default.temporaryDirectory.appendingPathComponent("program-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: output) }
    let status: Int32 = try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            defer { posix_spawn_file_actions_destroy(&actions) }
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 1, output.path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
            let argv: [UnsafeMutablePointer<CChar>?] = ([program] + arguments).map { strdup($0) } + [nil]
            defer { for pointer in argv { free(pointer) } }
            var pid: pid_t = 0
            let spawned = posix_spawn(&pid, program, &actions, nil, argv, environ)
            guard spawned == 0 else {
                continuation.resume(
                    throwing: ProgramFailure(description: "\(program) could not be started (errno \(spawned))")
                )
                return
            }
            var status: Int32 = 0
            while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
            // WIFEXITED / WEXITSTATUS: the low 7 bits are the signal, the next 8 the exit status.
            continuation.resume(returning: status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f))
        }
    }
    let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
    guard status == 0 else {
        throw ProgramFailure(description: "\(program) \(arguments.joined(separator: " ")) failed (\(status)): \(text)")
    }
    return text
}

struct ProgramFailure: Error, CustomStringConvertible {
    var description: String
}
