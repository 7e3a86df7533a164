import Foundation
import Logging
import PostgresNIO
import Synchronization

/// Where a PostgreSQL server is, how to log in and whether to use TLS: parsed from a
/// `postgres://user:password@host:port/database?sslmode=…` URL (the form `psql` and libpq accept; `postgresql://`
/// too).
///
/// ```swift
/// let endpoint = try PostgresEndpoint(url: "postgres://tags@db.internal:5432/tags?sslmode=verify-full")
/// ```
public struct PostgresEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// Whether connections use TLS, and what they check of the server's certificate: libpq's `sslmode`.
    public enum TLSMode: String, Sendable, Hashable, CaseIterable {
        /// Never TLS.
        case disable
        /// TLS when the server offers it, else in the clear (libpq tries the clear first; here TLS is asked for
        /// first, as with `prefer`); no certificate check.
        case allow
        /// TLS when the server offers it, else in the clear; no certificate check. libpq's default.
        case prefer
        /// TLS or no connection; the certificate is not checked (unless a root certificate is given: then as
        /// ``verifyCA``, as libpq does).
        case require
        /// TLS or no connection; the server's certificate must chain to a trusted root.
        case verifyCA = "verify-ca"
        /// TLS or no connection; the certificate must chain to a trusted root and name the host.
        case verifyFull = "verify-full"
    }

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
    /// Whether connections use TLS (`sslmode`; ``TLSMode/prefer`` when the URL says nothing, as with libpq).
    public var tls: TLSMode
    /// The PEM file of the roots a server certificate must chain to (`sslrootcert`); `nil`: the system's.
    public var rootCertificatePath: String?
    /// The certificate and key presented when the server asks for one (`sslcert`, `sslkey`); `nil`: none.
    public var clientCertificate: ClientCertificate?

    /// Creates an endpoint from its parts.
    public init(
        host: String,
        port: Int = 5432,
        user: String,
        password: String? = nil,
        database: String,
        tls: TLSMode = .prefer,
        rootCertificatePath: String? = nil,
        clientCertificate: ClientCertificate? = nil
    ) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.tls = tls
        self.rootCertificatePath = rootCertificatePath
        self.clientCertificate = clientCertificate
    }

    /// Parses a `postgres://` URL.
    ///
    /// The query parameters read are libpq's:
    /// - `sslmode` (``TLSMode``; `prefer` when absent);
    /// - `sslrootcert`: a PEM file of trusted roots (`system`, the default: the system's roots);
    /// - `sslcert` and `sslkey`: the client's certificate and private key, PEM files, given together (libpq's
    ///   default files under `~/.postgresql` are not looked for), and `sslpassword`, the key's passphrase when it is
    ///   encrypted. See ``ClientCertificate``.
    ///
    /// The files are read here, so a path that cannot be read or holds no certificate or key is refused now, not at
    /// the first connection. Any other parameter is refused, so none is silently ignored.
    /// - Throws: ``PostgresStoreError/Code/invalidConfiguration`` naming the URL (without its password) and what
    ///   is wrong with it.
    public init(url given: String) throws(PostgresStoreError) {
        // A URL from a secret made from a file ends with a line break.
        let text = given.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let components = URLComponents(string: text), let scheme = components.scheme,
            scheme == "postgres" || scheme == "postgresql", let host = components.host, !host.isEmpty
        else {
            throw PostgresStoreError(
                .invalidConfiguration,
                "'\(Self.redacted(text))' is not a postgres://user@host:port/database url"
            )
        }
        func refuse(_ problem: String) -> PostgresStoreError {
            PostgresStoreError(.invalidConfiguration, "'\(Self.redacted(text))': \(problem)")
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw refuse("the port must be 1–65535, not \(port)")
        }
        var tls = TLSMode.prefer
        var rootCertificatePath: String?
        var certificatePath: String?
        var keyPath: String?
        var keyPassword: String?
        for item in components.queryItems ?? [] {
            let value = item.value ?? ""
            switch item.name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    let modes = TLSMode.allCases.map(\.rawValue).joined(separator: ", ")
                    throw refuse("sslmode must be one of \(modes), not '\(value)'")
                }
                tls = mode
            case "sslrootcert":
                guard value != "system" else {
                    rootCertificatePath = nil
                    continue
                }
                guard !value.isEmpty, FileManager.default.isReadableFile(atPath: value) else {
                    throw refuse("sslrootcert '\(value)' is not a file that can be read")
                }
                do {
                    _ = try NIOSSLCertificate.fromPEMFile(value)
                } catch {
                    throw refuse("sslrootcert '\(value)' holds no pem certificate")
                }
                rootCertificatePath = value
            case "sslcert":
                certificatePath = value
            case "sslkey":
                keyPath = value
            case "sslpassword":
                keyPassword = value
            default:
                throw refuse(
                    "the url's parameter '\(item.name)' is not supported (the ones read are sslmode, sslrootcert, "
                        + "sslcert, sslkey and sslpassword)"
                )
            }
        }
        var clientCertificate: ClientCertificate?
        switch (certificatePath, keyPath) {
        case (nil, nil):
            if keyPassword != nil { throw refuse("sslpassword is given without sslcert and sslkey") }
        case (let certificate?, let key?):
            do {
                clientCertificate = try ClientCertificate(
                    certificatePath: certificate,
                    keyPath: key,
                    keyPassword: keyPassword
                )
            } catch {
                throw refuse(error.message)
            }
        case (nil, _?):
            throw refuse("sslkey is given without sslcert, the certificate it goes with")
        case (_?, nil):
            throw refuse("sslcert is given without sslkey, its private key")
        }
        let path = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : components.path
        let user = components.user ?? "postgres"
        self.init(
            host: host,
            port: components.port ?? 5432,
            user: user,
            password: components.password,
            database: path.isEmpty ? user : path,
            tls: tls,
            rootCertificatePath: rootCertificatePath,
            clientCertificate: clientCertificate
        )
    }

    /// The URL without its password (with its `sslmode` when it is not libpq's default).
    public var description: String {
        "postgres://\(user)@\(host):\(port)/\(database)" + (tls == .prefer ? "" : "?sslmode=\(tls.rawValue)")
    }

    /// The postgres-nio connection configuration, with TLS as ``tls`` asks.
    /// - Throws: ``PostgresStoreError/Code/invalidConfiguration`` when the root certificates cannot be read.
    public var connectionConfiguration: PostgresConnection.Configuration {
        get throws(PostgresStoreError) {
            let mode: PostgresConnection.Configuration.TLS
            if let tlsConfiguration {
                let context: NIOSSLContext
                do {
                    context = try NIOSSLContext(configuration: tlsConfiguration)
                } catch {
                    throw PostgresStoreError(
                        .invalidConfiguration,
                        "the TLS settings cannot be used (sslrootcert '\(rootCertificatePath ?? "system")'): \(error)"
                    )
                }
                mode = enforcesTLS ? .require(context) : .prefer(context)
            } else {
                mode = .disable
            }
            return PostgresConnection.Configuration(
                host: host,
                port: port,
                username: user,
                password: password,
                database: database,
                tls: mode
            )
        }
    }

    /// Whether a connection without TLS is refused.
    var enforcesTLS: Bool { tls == .require || tls == .verifyCA || tls == .verifyFull }

    /// The TLS client settings ``tls`` asks for; `nil` for ``TLSMode/disable``.
    var tlsConfiguration: TLSConfiguration? {
        guard tls != .disable else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        switch tls {
        case .verifyFull: configuration.certificateVerification = .fullVerification
        case .verifyCA: configuration.certificateVerification = .noHostnameVerification
        case .require where rootCertificatePath != nil: configuration.certificateVerification = .noHostnameVerification
        default: configuration.certificateVerification = .none
        }
        if let rootCertificatePath { configuration.trustRoots = .file(rootCertificatePath) }
        if let clientCertificate {
            configuration.certificateChain = clientCertificate.chain.map { .certificate($0) }
            configuration.privateKey = .privateKey(clientCertificate.key)
        }
        return configuration
    }

    /// `text` without its password, nor the key's (`sslpassword`).
    private static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text) else { return text }
        let keyPassword = components.queryItems?.contains { $0.name == "sslpassword" } ?? false
        guard components.password != nil || keyPassword else { return text }
        if components.password != nil { components.password = "***" }
        if keyPassword {
            components.queryItems = components.queryItems?.map {
                $0.name == "sslpassword" ? URLQueryItem(name: $0.name, value: "***") : $0
            }
        }
        return components.string ?? text
    }
}

extension PostgresEndpoint {
    /// The configuration of a ``PostgresClient`` (postgres-nio's pool) for this endpoint, whose connections
    /// start with `parameters` (`application_name`, `statement_timeout`, …).
    func clientConfiguration(parameters: [(String, String)], maximumConnections: Int) -> PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS =
            tlsConfiguration.map { enforcesTLS ? .require($0) : .prefer($0) } ?? .disable
        var configuration = PostgresClient.Configuration(
            host: host,
            port: port,
            username: user,
            password: password,
            database: database,
            tls: tls
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
        var configuration = try connectionConfiguration
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
