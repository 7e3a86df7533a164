import ContainerKit

/// Why a JSON text could not be read back as an ``AnalyticsRecord``.
public struct AnalyticsRecordError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable, machine-readable error code.
    public struct Code: ErrorCode {
        /// The code as text.
        public var rawValue: String
        /// Creates a code.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The text is not JSON.
        public static let malformedJSON = Code(rawValue: "malformed_json")
        /// The JSON is not a record: a member is missing or has the wrong type.
        public static let invalidRecord = Code(rawValue: "invalid_record")
    }

    /// What kind of error this is.
    public var code: Code
    /// A lowercase message naming the offending member or value in quotes.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `message (code)`.
    public var description: String { "\(message) (\(code.rawValue))" }
}
