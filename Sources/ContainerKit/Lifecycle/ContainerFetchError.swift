/// Why a container source could not deliver a container: a ``ContainerError`` (the module's one error type)
/// with one of the codes below, a lowercase message naming the offending value in quotes and, for HTTP
/// answers, the ``ContainerError/status``. Messages never contain an auth token.
public typealias ContainerFetchError = ContainerError

extension ContainerError.Code {
    /// The server could not be reached: connection refused, unknown host, no network.
    public static let noNetwork = ContainerError.Code(rawValue: "no_network")
    /// The connection failed part way: a timeout, a truncated body, a dropped connection.
    public static let networkError = ContainerError.Code(rawValue: "network_error")
    /// The server answered with a status other than 200 (or 304 to a conditional request).
    public static let httpStatus = ContainerError.Code(rawValue: "http_status")
    /// The server's answer is not HTTP, or not what was asked for.
    public static let badResponse = ContainerError.Code(rawValue: "bad_response")
    /// The source has no container with that ID (a directory without the file).
    public static let notFound = ContainerError.Code(rawValue: "not_found")
    /// The bytes arrived but do not compile into a container.
    public static let invalidContainer = ContainerError.Code(rawValue: "invalid_container")
    /// A source was configured with a URL it cannot use (not http or https, no host, no `{id}`).
    public static let invalidURL = ContainerError.Code(rawValue: "invalid_url")
    /// The tag manager has no source of this kind configured (for example no preview source).
    public static let notConfigured = ContainerError.Code(rawValue: "not_configured")
    /// Anything else.
    public static let unknown = ContainerError.Code(rawValue: "unknown")
    // Shared with loading: `io` ("io_error", a file could not be read or written), `tooLarge` ("too_large",
    // the answer is larger than the source's limit), `invalidContainerID` ("invalid_container_id", the
    // requested ID breaks the `GTM-XXXX` pattern; nothing was fetched).
}

extension ContainerError {
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
}
