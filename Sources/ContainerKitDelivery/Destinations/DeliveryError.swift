public import ContainerKit

/// The module's one error type: why a destination did not take records (the reason of a ``DeliveryResult``'s
/// rejected or retryable part), why a sink or store failed (``AnalyticsSinkError``) or why a record does not
/// read (``AnalyticsRecordError``). Those names are aliases that say which codes to expect. A stable code,
/// a lowercase message, and where it happened as far as known: the HTTP status and the server's `errors`
/// for an answer, the system error number for a failed system call. The code is extensible:
/// `extension DeliveryError.Code { static let … }`.
public struct DeliveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public struct Code: ErrorCode {
        /// The code as text.
        public var rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The destination refused the records for good (for Braze, a 400: the records themselves are
        /// invalid); retrying cannot help, so they are dropped.
        public static let rejected = Code(rawValue: "rejected")
        /// The destination refused the *request*, not its records (for Braze, 401 or 403 — a wrong,
        /// revoked or under-permitted key —, 404, or a redirect): the records are kept and delivery pauses
        /// for ``DeliveryError/retryAfter`` before trying again, until the answer changes. Logged as an
        /// error; never counted against a front's attempts.
        public static let requestRefused = Code(rawValue: "request_refused")
        /// The destination asked to slow down (HTTP 429); ``DeliveryError/retryAfter`` says for how long
        /// when it said.
        public static let rateLimited = Code(rawValue: "rate_limited")
        /// The destination failed (HTTP 5xx or 408); retryable.
        public static let serverError = Code(rawValue: "server_error")
        /// The request ran past its deadline; retryable.
        public static let timeout = Code(rawValue: "timeout")
        /// The connection failed, or the answer was unreadable or too large; retryable.
        public static let transport = Code(rawValue: "transport")
        /// A local write failed (a JSON-lines file); retryable.
        public static let io = Code(rawValue: "io_error")
        /// A front gave up on the records (attempts used up, or its drain deadline passed).
        public static let retriesExhausted = Code(rawValue: "retries_exhausted")
        /// The front or destination was shut down.
        public static let shutDown = Code(rawValue: "shut_down")
    }

    /// What kind of error this is.
    public var code: Code
    /// A lowercase message; for Braze's answers it quotes Braze's own `message`.
    public var message: String
    /// The HTTP status, when a server answered.
    public var status: Int?
    /// The server's `errors`, as compact JSON texts.
    public var errors: [String]
    /// How long the destination asked to wait before the next attempt (`Retry-After`), if it said.
    public var retryAfter: Duration?
    /// The `errno` behind the error, when a system call failed.
    public var errorNumber: Int32?

    /// Creates an error.
    public init(
        _ code: Code,
        _ message: String,
        status: Int? = nil,
        errors: [String] = [],
        retryAfter: Duration? = nil,
        errorNumber: Int32? = nil
    ) {
        self.code = code
        self.message = message
        self.status = status
        self.errors = errors
        self.retryAfter = retryAfter
        self.errorNumber = errorNumber
    }

    /// Whether a later attempt to deliver may succeed (for a destination's answer).
    public var isRetryable: Bool { code != .rejected && code != .shutDown && code != .retriesExhausted }

    /// `message (code)`.
    public var description: String { "\(message) (\(code.rawValue))" }

    /// The error as log metadata: `code`, `error` (the message) and, when a server answered, `status`.
    package var logMetadata: LogMetadata {
        var metadata: LogMetadata = ["code": code.rawValue, "error": message]
        if let status { metadata["status"] = String(status) }
        return metadata
    }
}
