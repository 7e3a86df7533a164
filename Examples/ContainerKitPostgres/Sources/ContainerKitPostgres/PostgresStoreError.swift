import ContainerKit

/// A failure of a PostgreSQL adapter's connection (the server cannot be reached) or configuration (a malformed
/// URL). What the pipeline sees of a commit is an ``AnalyticsSinkError``: `unavailable` (nothing of it
/// acknowledged) or `superseded` (a stale owner's session write was refused).
public struct PostgresStoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code as text.
        public var rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code as text.
        public var description: String { rawValue }

        /// PostgreSQL cannot be reached (no connection, or the connection was lost).
        public static let unavailable = Code(rawValue: "postgres_unavailable")
        /// A connection URL or setting is malformed.
        public static let invalidConfiguration = Code(rawValue: "invalid_configuration")
    }

    /// What kind of error this is.
    public var code: Code
    /// A lowercase message naming the offending value in quotes.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}
