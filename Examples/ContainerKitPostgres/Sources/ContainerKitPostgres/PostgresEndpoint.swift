import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Where a PostgreSQL server is and how to log in: parsed from a `postgres://user:password@host:port/database`
/// URL (the form `psql` and libpq accept; `postgresql://` too).
///
/// ```swift
/// let endpoint = try PostgresEndpoint(url: "postgres://tags@127.0.0.1:5432/tags")
/// ```
public struct PostgresEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// The host name or address.
    public var host: String
    /// The TCP port (5432 unless the URL names one).
    public var port: Int
    /// The user to log in as.
    public var user: String
    /// The password, if the server asks for one.
    public var password: String?
    /// The database.
    public var database: String

    /// Creates an endpoint from its parts.
    public init(host: String, port: Int = 5432, user: String, password: String? = nil, database: String) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
    }

    /// Parses a `postgres://` URL.
    ///
    /// The one query parameter read is libpq's `sslmode`, and only its values that let a connection go without
    /// TLS (`disable`, `allow`, `prefer`): connections are never encrypted, so a URL that asks for TLS
    /// (`require`, `verify-ca`, `verify-full`) is refused rather than connected in the clear. Any other parameter
    /// is refused too, so none is silently ignored.
    /// - Throws: ``PostgresStoreError/Code/invalidConfiguration`` naming the URL (without its password) and what
    ///   is wrong with it.
    public init(url text: String) throws(PostgresStoreError) {
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql", let host = components.host, !host.isEmpty
        else {
            throw PostgresStoreError(
                .invalidConfiguration,
                "'\(Self.redacted(text))' is not a postgres://user@host:port/database url"
            )
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw PostgresStoreError(
                .invalidConfiguration,
                "'\(Self.redacted(text))': the port must be 1–65535, not \(port)"
            )
        }
        for item in components.queryItems ?? [] {
            if let problem = Self.problem(with: item) {
                throw PostgresStoreError(.invalidConfiguration, "'\(Self.redacted(text))': \(problem)")
            }
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let user = components.user ?? "postgres"
        self.init(
            host: host,
            port: components.port ?? 5432,
            user: user,
            password: components.password,
            database: path.isEmpty ? user : path
        )
    }

    /// Why the URL's query parameter `item` cannot be used; `nil` when it can.
    private static func problem(with item: URLQueryItem) -> String? {
        guard item.name == "sslmode" else {
            return
                "the url's parameter '\(item.name)' is not supported (the one read is sslmode=disable, allow or prefer)"
        }
        switch item.value ?? "" {
        case "disable", "allow", "prefer":
            return nil
        case "require", "verify-ca", "verify-full":
            return
                "sslmode=\(item.value ?? "") asks for TLS, which these connections do not use: reach PostgreSQL over "
                + "loopback or a private network (or a TLS tunnel beside the service) with sslmode=disable"
        default:
            return
                "sslmode must be disable, allow, prefer, require, verify-ca or verify-full, not '\(item.value ?? "")'"
        }
    }

    /// The URL without its password.
    public var description: String { "postgres://\(user)@\(host):\(port)/\(database)" }

    /// The postgres-nio connection configuration (no TLS: meant for a server on a private network or
    /// loopback; a deployment across networks puts TLS on the configuration itself).
    public var connectionConfiguration: PostgresConnection.Configuration {
        PostgresConnection.Configuration(
            host: host,
            port: port,
            username: user,
            password: password,
            database: database,
            tls: .disable
        )
    }

    private static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }
}

extension PostgresEndpoint {
    /// The configuration of a ``PostgresClient`` (postgres-nio's pool) for this endpoint, whose connections
    /// start with `parameters` (`application_name`, `statement_timeout`, …).
    func clientConfiguration(parameters: [(String, String)], maximumConnections: Int) -> PostgresClient.Configuration {
        var configuration = PostgresClient.Configuration(
            host: host,
            port: port,
            username: user,
            password: password,
            database: database,
            tls: .disable
        )
        configuration.options.additionalStartupParameters = parameters
        configuration.options.maximumConnections = max(1, maximumConnections)
        configuration.options.minimumConnections = 0
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }

    /// Opens one connection that starts with `parameters` (`application_name`, `statement_timeout`, …).
    /// - Throws: ``PostgresStoreError/Code/unavailable`` when the server cannot be reached (the message names
    ///   neither the URL nor the server's detail; `logger` gets them).
    func connect(logger: Logger, parameters: [(String, String)]) async throws(PostgresStoreError)
        -> PostgresConnection
    {
        var configuration = connectionConfiguration
        configuration.options.additionalStartupParameters = parameters
        configuration.options.connectTimeout = .seconds(5)
        do {
            return try await PostgresConnection.connect(
                configuration: configuration,
                id: Self.nextConnectionID(),
                logger: logger
            )
        } catch {
            logger.debug(
                "cannot connect to postgresql",
                metadata: ["postgres": "\(self)", "error": "\(PostgresStoreError.serverSummary(error))"]
            )
            throw PostgresStoreError.classify(error, operation: "the connection", role: user, timeout: .seconds(5))
        }
    }

    private static let counter = Counter()
    private static func nextConnectionID() -> Int { counter.next() }
}

/// A process-wide counter for connection ids (postgres-nio's log metadata).
final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int {
        value.withLock {
            $0 += 1; return $0
        }
    }
}
