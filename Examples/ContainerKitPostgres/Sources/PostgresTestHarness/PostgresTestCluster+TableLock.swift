import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension PostgresTestCluster {
    /// A table held in `ACCESS EXCLUSIVE` mode by a `psql` session of its own, as a migration or a `VACUUM FULL`
    /// holds it, until ``release()``: every statement on the table waits (or fails past its `lock_timeout`).
    ///
    /// ```swift
    /// let lock = try await cluster.lock(table: "ck_session_changes", database: database)
    /// // … requests time out …
    /// try await lock.release()
    /// ```
    public final class TableLock: Sendable {
        /// The `psql` session's standard input (where the rollback goes), its output, and its process.
        private let session: (input: Int32, output: Int32, process: pid_t)

        fileprivate init(_ session: (input: Int32, output: Int32, process: pid_t)) { self.session = session }

        /// Rolls the holding transaction back (the lock goes with it) and waits for the `psql` session to end.
        /// Call it once.
        public func release() async throws {
            let command = Array("ROLLBACK;\n".utf8)
            _ = command.withUnsafeBytes { write(session.input, $0.baseAddress, $0.count) }
            close(session.input)
            let status = await PostgresTestCluster.wait(for: session.process)
            close(session.output)
            guard status & 0x7f == 0, (status >> 8) & 0xff == 0 else {
                throw Failure(description: "the psql session holding the lock ended with status \(status)")
            }
        }
    }

    /// Takes `table` of `database` in `ACCESS EXCLUSIVE` mode in a transaction of a `psql` session of its own,
    /// and returns once the lock is granted (psql has answered the `LOCK TABLE`).
    public func lock(table: String, database: String) async throws -> TableLock {
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else {
            throw Failure(description: "pipe failed: errno \(errno)")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 2)
        for descriptor in toChild + fromChild { posix_spawn_file_actions_addclose(&actions, descriptor) }
        let path = "\(binDirectory)/psql"
        let arguments = [
            path, "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", user,
            "-d", database,
        ]
        let argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        close(toChild[0])
        close(fromChild[1])
        guard spawned == 0 else {
            close(toChild[1])
            close(fromChild[0])
            throw Failure(description: "cannot run \(path): error \(spawned)")
        }
        let script = Array("BEGIN;\nLOCK TABLE \(table) IN ACCESS EXCLUSIVE MODE;\n\\echo ck-locked\n".utf8)
        _ = script.withUnsafeBytes { write(toChild[1], $0.baseAddress, $0.count) }
        // psql answers the `\echo` only after the LOCK returned; an error (ON_ERROR_STOP) ends it instead.
        let output = fromChild[0]
        let answer: String = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var text = ""
                var chunk = [UInt8](repeating: 0, count: 4096)
                while !text.contains("ck-locked") {
                    let count = chunk.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
                    if count < 0 && errno == EINTR { continue }
                    if count <= 0 { break }
                    text += String(decoding: chunk[0..<count], as: UTF8.self)
                }
                continuation.resume(returning: text)
            }
        }
        let lock = TableLock((input: toChild[1], output: output, process: pid))
        guard answer.contains("ck-locked") else {
            try? await lock.release()
            throw Failure(description: "cannot lock \(table): \(answer)")
        }
        return lock
    }

    /// Waits (on a thread of its own) for `process` to end and returns its status.
    static func wait(for process: pid_t) async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var status: Int32 = 0
                while waitpid(process, &status, 0) < 0 && errno == EINTR {}
                continuation.resume(returning: status)
            }
        }
    }
}
