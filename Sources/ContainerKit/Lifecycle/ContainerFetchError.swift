/// Why a container source could not deliver a container: a stable code, a lowercase message naming the
/// offending value in quotes and, for HTTP answers, the status code. Messages never contain an auth token.
public struct ContainerFetchError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code. Extensible: sources may add their own.
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The server could not be reached: connection refused, unknown host, no network.
        public static let noNetwork = Code(rawValue: "no_network")
        /// The connection failed part way: a timeout, a truncated body, a dropped connection.
        public static let networkError = Code(rawValue: "network_error")
        /// The server answered with a status other than 200 (or 304 to a conditional request).
        public static let httpStatus = Code(rawValue: "http_status")
        /// The server's answer is not HTTP, or not what was asked for.
        public static let badResponse = Code(rawValue: "bad_response")
        /// The answer is larger than the source's limit.
        public static let tooLarge = Code(rawValue: "too_large")
        /// The source has no container with that ID (a directory without the file).
        public static let notFound = Code(rawValue: "not_found")
        /// A file could not be read or written.
        public static let io = Code(rawValue: "io_error")
        /// The requested ID breaks the `GTM-XXXX` pattern; nothing was fetched.
        public static let invalidContainerID = Code(rawValue: "invalid_container_id")
        /// The bytes arrived but do not compile into a container.
        public static let invalidContainer = Code(rawValue: "invalid_container")
        /// A source was configured with a URL it cannot use (not http or https, no host, no `{id}`).
        public static let invalidURL = Code(rawValue: "invalid_url")
        /// The tag manager has no source of this kind configured (for example no preview source).
        public static let notConfigured = Code(rawValue: "not_configured")
        /// Anything else.
        public static let unknown = Code(rawValue: "unknown")
    }

    /// What kind of error this is.
    public var code: Code
    /// A lowercase message naming the offending value in quotes.
    public var message: String
    /// The HTTP status, for ``Code/httpStatus``.
    public var status: Int?

    /// Creates an error.
    public init(_ code: Code, _ message: String, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
    }

    /// The refresh failure a ``ContainerCallback`` reports for this error.
    public var refreshFailure: RefreshFailure {
        switch code {
        case .noNetwork: return .noNetwork
        case .networkError: return .networkError
        case .httpStatus, .badResponse, .tooLarge, .notFound, .invalidContainer: return .serverError
        case .io: return .ioError
        default: return .unknownError
        }
    }

    /// Whether the server refused the request as unauthorised or unknown (HTTP 401, 403 or 404, or no
    /// such file in a directory source) — for a preview, the auth token was refused.
    public var isRefusal: Bool {
        code == .notFound || (code == .httpStatus && [401, 403, 404].contains(status ?? 0))
    }

    /// `message (code)`.
    public var description: String { "\(message) (\(code.rawValue))" }
}
