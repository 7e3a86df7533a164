/// Why a string is not a GTM preview URL. Messages name the offending part in quotes but never the auth
/// token.
public struct PreviewURLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public struct Code: ErrorCode {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The string does not follow the preview URL grammar.
        public static let malformed = Code(rawValue: "malformed_preview_url")
        /// The `id` parameter breaks the `GTM-XXXX` pattern.
        public static let invalidContainerID = Code(rawValue: "invalid_container_id")
    }

    /// What kind of error this is.
    public var code: Code
    /// A lowercase message naming the offending part in quotes.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `message (code)`.
    public var description: String { "\(message) (\(code.rawValue))" }
}
