import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A throw-away PostgreSQL cluster for tests: `initdb` into a temporary directory, a server listening on
/// 127.0.0.1 and a free port (its unix socket in the same directory), `fsync` on, stopped and removed by
/// ``remove()``.
///
/// PostgreSQL refuses to run as root, so when the test process is root the server's programs run as the
/// `postgres` user (or `nobody`) through `runuser`, and the directory is handed to that user.
///
/// ```swift
/// let cluster = try await PostgresTestCluster.start()
/// defer { cluster.remove() }
/// let url = cluster.url            // postgres://postgres@127.0.0.1:PORT/postgres
/// try await cluster.crash()        // what kill -9 of the server looks like to its clients
/// try await cluster.startServer()  // recovery from the write-ahead log
/// ```
public final class PostgresTestCluster: Sendable {
    /// A failure to set up or drive the cluster, with the program's output.
    public struct Failure: Error, CustomStringConvertible, Sendable {
        /// What failed, in words, with the program's output.
        public var description: String
    }

    /// The cluster's directory (data, socket and log).
    public let directory: String
    /// The TCP port on 127.0.0.1.
    public let port: Int
    /// The database user (a superuser, trust authentication on loopback).
    public let user = "postgres"
    /// The server's programs (`initdb`, `pg_ctl`, `postgres`).
    public let binDirectory: String
    let runAs: String?

    /// A connection URL for `database`.
    public func url(database: String = "postgres") -> String {
        "postgres://\(user)@127.0.0.1:\(port)/\(database)"
    }

    /// The URL of the default database.
    public var url: String { url() }

    private init(directory: String, port: Int, binDirectory: String, runAs: String?) {
        self.directory = directory
        self.port = port
        self.binDirectory = binDirectory
        self.runAs = runAs
    }

    /// Where the PostgreSQL server programs are: `POSTGRES_BIN` if set, else the newest
    /// `/usr/lib/postgresql/<version>/bin`.
    public static func findBinDirectory() -> String? {
        if let explicit = ProcessInfo.processInfo.environment["POSTGRES_BIN"] { return explicit }
        let base = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: base)) ?? []
        let sorted = versions.compactMap { Int($0) }.sorted(by: >)
        for version in sorted where FileManager.default.fileExists(atPath: "\(base)/\(version)/bin/initdb") {
            return "\(base)/\(version)/bin"
        }
        return nil
    }

    /// Creates a cluster in a new temporary directory and starts its server.
    /// - Parameter settings: extra `postgresql.conf` settings (`name = value` lines).
    public static func start(settings: [String: String] = [:]) async throws -> PostgresTestCluster {
        guard let bin = findBinDirectory() else {
            throw Failure(
                description: "no PostgreSQL server programs in /usr/lib/postgresql (apt-get install postgresql)"
            )
        }
        var template = Array("/tmp/ck-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp failed: errno \(errno)") }
        let directory = String(cString: made)
        let runAs: String? = getuid() == 0 ? (userExists("postgres") ? "postgres" : "nobody") : nil
        if let runAs {
            try await run("/bin/chown", ["-R", runAs, directory])
        }
        let cluster = PostgresTestCluster(
            directory: directory,
            port: try freePort(),
            binDirectory: bin,
            runAs: runAs
        )
        try await cluster.runServerProgram(
            "initdb",
            ["-D", "\(directory)/data", "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-locale"]
        )
        var conf = [
            "listen_addresses = '127.0.0.1'",
            "port = \(cluster.port)",
            "unix_socket_directories = '\(directory)'",
            "fsync = on",
            "max_connections = 200",
            "shared_buffers = 64MB",
            "logging_collector = off",
        ]
        for (name, value) in settings.sorted(by: { $0.key < $1.key }) { conf.append("\(name) = \(value)") }
        let confPath = "\(directory)/data/postgresql.auto.conf"
        let existing = (try? String(contentsOfFile: confPath, encoding: .utf8)) ?? ""
        try (existing + conf.joined(separator: "\n") + "\n").write(toFile: confPath, atomically: false, encoding: .utf8)
        try await cluster.startServer()
        return cluster
    }

    /// Starts (or restarts) the server and returns once it accepts connections.
    public func startServer() async throws {
        try await runServerProgram(
            "pg_ctl",
            ["-D", "\(directory)/data", "-l", "\(directory)/server.log", "-w", "-t", "60", "start"]
        )
    }

    /// Stops the server cleanly (`pg_ctl stop -m fast`).
    public func stopServer() async throws {
        try await runServerProgram("pg_ctl", ["-D", "\(directory)/data", "-m", "fast", "-w", "stop"])
    }

    /// Stops the server the way a crash does (`pg_ctl stop -m immediate`: no checkpoint, recovery from the
    /// write-ahead log at the next start); its clients see their connections dropped.
    public func crash() async throws {
        try await runServerProgram("pg_ctl", ["-D", "\(directory)/data", "-m", "immediate", "-w", "stop"])
    }

    /// Runs `sql` with `psql` against `database` and returns its unaligned, tuples-only output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") async throws -> String {
        try await Self.run(
            "\(binDirectory)/psql",
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", user,
                "-d", database, "-c", sql,
            ]
        )
    }

    /// Creates a fresh database and returns its URL.
    public func createDatabase() async throws -> String {
        let name = "t_\(UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16))"
        try await psql("CREATE DATABASE \(name)")
        return url(database: name)
    }

    /// Stops the server at once and removes the directory (blocking: also usable from `atexit`).
    public func remove() {
        let stop = "\(binDirectory)/pg_ctl -D '\(directory)/data' -m immediate -w stop > /dev/null 2>&1"
        if let runAs {
            _ = system("/usr/sbin/runuser -u \(runAs) -- \(stop)")
        } else {
            _ = system(stop)
        }
        try? FileManager.default.removeItem(atPath: directory)
    }

    func runServerProgram(_ program: String, _ arguments: [String]) async throws {
        if let runAs {
            try await Self.run("/usr/sbin/runuser", ["-u", runAs, "--", "\(binDirectory)/\(program)"] + arguments)
        } else {
            try await Self.run("\(binDirectory)/\(program)", arguments)
        }
    }

    /// Runs a program to its end (spawned, and waited for on a thread of its own); throws with its output when
    /// it fails. The output goes to a file: a server the program starts may keep a pipe open long after.
    @discardableResult
    static func run(_ path: String, _ arguments: [String]) async throws -> String {
        let outputPath = "/tmp/ck-pg-output-\(UUID().uuidString)"
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        guard spawned == 0 else { throw Failure(description: "cannot run \(path): error \(spawned)") }
        let status = await wait(for: pid)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited && code == 0 else {
            throw Failure(description: "\(path) \(arguments.joined(separator: " ")) failed (status \(status)): \(text)")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    private static func userExists(_ name: String) -> Bool { getpwnam(name) != nil }

    /// A TCP port on 127.0.0.1 that nothing listens on right now (for other loopback servers a test starts too).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw Failure(description: "bind failed: errno \(errno)") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname failed: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
