import Logging
import PostgresNIO
import Synchronization

extension PostgresConnection {
    /// Runs `query` and hands its rows to `collect`, failing as soon as the connection closes.
    ///
    /// A statement sent on a connection that has just closed can wait for an answer forever (nothing fails its
    /// promise); a delivery or writer stuck there would never notice that its lease or its transaction is gone.
    /// So the statement runs in a task of its own, and the caller resumes with an error when the connection's
    /// close future fires first.
    func guarded<T: Sendable>(
        _ query: PostgresQuery,
        logger: Logger,
        _ collect: @escaping @Sendable (PostgresRowSequence) async throws -> T
    ) async throws -> T {
        if isClosed { throw PostgresStoreError(.unavailable, "the connection is closed") }
        return try await withCheckedThrowingContinuation { continuation in
            let once = ResumeOnce(continuation)
            closeFuture.whenComplete { _ in
                once.resume(with: .failure(PostgresStoreError(.unavailable, "the connection closed")))
            }
            Task {
                do {
                    let rows = try await self.query(query, logger: logger)
                    once.resume(with: .success(try await collect(rows)))
                } catch {
                    once.resume(with: .failure(error))
                }
            }
        }
    }

    /// Runs `query`, discarding its rows; fails as soon as the connection closes.
    func execute(_ query: PostgresQuery, logger: Logger) async throws {
        try await guarded(query, logger: logger) { _ in () }
    }

    /// Runs `query` and returns its rows (which fail, as a stream, if the connection closes while they
    /// arrive); fails as soon as the connection closes before the answer starts.
    func rows(_ query: PostgresQuery, logger: Logger) async throws -> PostgresRowSequence {
        try await guarded(query, logger: logger) { $0 }
    }

    /// Runs `query` and decodes its single column; fails as soon as the connection closes.
    func values<T: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: T.Type, logger: Logger)
        async throws -> [T]
    {
        try await guarded(query, logger: logger) { rows in
            var values: [T] = []
            for try await value in rows.decode(T.self) { values.append(value) }
            return values
        }
    }
}

/// A continuation resumed by the first of several racers.
private final class ResumeOnce<T: Sendable>: Sendable {
    private let continuation: Mutex<CheckedContinuation<T, any Error>?>

    init(_ continuation: CheckedContinuation<T, any Error>) { self.continuation = Mutex(continuation) }

    func resume(with result: Result<T, any Error>) {
        let taken = continuation.withLock { slot in
            defer { slot = nil }
            return slot
        }
        taken?.resume(with: result)
    }
}
