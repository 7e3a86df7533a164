/// Why records could not be delivered to Braze's `/users/track`.
public struct BrazeDeliveryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public struct Code: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        /// The code as text.
        public var rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The code as text.
        public var description: String { rawValue }

        /// Braze refused the request with a 4xx status other than 408 and 429; retrying cannot help, so
        /// the records were dropped.
        public static let rejected = Code(rawValue: "rejected")
        /// Every attempt failed with a retryable error (5xx, 408, 429, timeout, connection failure).
        public static let retriesExhausted = Code(rawValue: "retries_exhausted")
        /// The sink was shut down.
        public static let shutDown = Code(rawValue: "shut_down")
    }

    /// What kind of error this is.
    public var code: Code
    /// A lowercase message; for Braze's answers it quotes Braze's own `message`.
    public var message: String
    /// The last HTTP status, when Braze answered.
    public var status: Int?
    /// Braze's `errors`, as compact JSON texts.
    public var errors: [String]

    /// Creates an error.
    public init(_ code: Code, _ message: String, status: Int? = nil, errors: [String] = []) {
        self.code = code
        self.message = message
        self.status = status
        self.errors = errors
    }

    /// `message (code)`.
    public var description: String { "\(message) (\(code.rawValue))" }
}
