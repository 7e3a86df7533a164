import Logging
import PostgresNIO
import Synchronization

/// A few kept connections for short statements (session loads, health checks, figures): a call takes an idle
/// one or opens a new one, and gives it back unless it broke. Opening fails at once when the server is down,
/// so a caller learns it promptly instead of waiting in a queue.
final class PostgresConnectionPool: Sendable {
    private let endpoint: PostgresEndpoint
    private let applicationName: String
    private let maximumIdle: Int
    private let logger: Logger
    private let idle = Mutex<[PostgresConnection]>([])

    init(endpoint: PostgresEndpoint, applicationName: String, maximumIdle: Int = 8, logger: Logger) {
        self.endpoint = endpoint
        self.applicationName = applicationName
        self.maximumIdle = maximumIdle
        self.logger = logger
    }

    /// Runs `body` on a connection of the pool.
    func withConnection<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        var connection: PostgresConnection?
        while connection == nil, let kept = idle.withLock({ $0.popLast() }) {
            if !kept.isClosed { connection = kept }
        }
        let open: PostgresConnection
        if let connection {
            open = connection
        } else {
            open = try await endpoint.connect(logger: logger, applicationName: applicationName)
        }
        do {
            let result = try await body(open)
            let extra = idle.withLock { connections -> PostgresConnection? in
                guard connections.count < maximumIdle else { return open }
                connections.append(open)
                return nil
            }
            if let extra { try? await extra.close() }
            return result
        } catch {
            try? await open.close()
            throw error
        }
    }

    /// Closes the idle connections.
    func close() async {
        let connections = idle.withLock { connections in
            defer { connections = [] }
            return connections
        }
        for connection in connections { try? await connection.close() }
    }
}
