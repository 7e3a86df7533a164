import ContainerKit

/// A failure of a PostgreSQL adapter: the server cannot be reached, a commit failed (nothing of it was
/// acknowledged), a stale owner's session write was refused, or a URL is malformed.
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
        /// The transaction failed; nothing of it was acknowledged (it may or may not have committed when the
        /// connection broke during `COMMIT`, so its records may still be delivered: at least once).
        public static let commitFailed = Code(rawValue: "commit_failed")
        /// A session write was refused: PostgreSQL holds a newer version of the session, written by the
        /// instance that owns the user now. The session must be loaded again.
        public static let fenced = Code(rawValue: "session_fenced")
        /// The store was stopped before the write was committed.
        public static let closed = Code(rawValue: "closed")
        /// A stored row cannot be read back (a snapshot or record that does not parse).
        public static let corruptRow = Code(rawValue: "corrupt_row")
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
