import ContainerKit
import ContainerKitDelivery

/// A failure of a PostgreSQL adapter's call (the server cannot be reached, did not answer in time, refused the
/// store's role a privilege) or configuration (a malformed URL). What the pipeline sees of a commit is an
/// ``AnalyticsSinkError``: `timeout` for a call past its deadline, `unavailable` for every other failure (nothing of
/// it acknowledged either way; its message starts with this error's code), or `superseded` (a stale owner's session
/// write was refused).
///
/// Messages are safe to show: they never hold the database URL, its password, SQL text or the server's detail
/// (the log has the server's message and SQLSTATE).
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
        /// A call ran past its deadline (``PostgresRecordStore/Configuration/callTimeout``, or the server's
        /// `statement_timeout` / `lock_timeout` derived from it): a table locked by someone else, a server too
        /// busy to answer.
        public static let timeout = Code(rawValue: "postgres_timeout")
        /// The store's role lacks a privilege it needs; the message names what to grant.
        public static let permissionDenied = Code(rawValue: "postgres_permission_denied")
        /// The server refused a statement for another reason (the log has its message and SQLSTATE).
        public static let refused = Code(rawValue: "postgres_error")
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

    /// Whether the error says the server cannot be used now (unreachable, too slow, or refusing the role): the
    /// store is then unavailable until a later call succeeds.
    var makesUnavailable: Bool { code == .unavailable || code == .timeout || code == .permissionDenied }

    /// The code a failed commit reports to the pipeline: `timeout` when the deadline passed, `unavailable`
    /// otherwise (nothing of it was acknowledged either way).
    var sinkCode: AnalyticsSinkError.Code { code == .timeout ? .timeout : .unavailable }
}
