public import ContainerKit
import ContainerKitDelivery

/// A Braze rule that a tag call broke: the call is dropped, with a warning that names the tag, the key
/// and the rule.
public struct BrazeRuleViolation: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which rule was broken; the raw value is a stable code for logs and tests.
    public struct Rule: ErrorCode {
        /// The code as text.
        public var rawValue: String
        /// Creates a rule code.
        public init(rawValue: String) { self.rawValue = rawValue }

        /// A required parameter is missing.
        public static let missingParameter = Rule(rawValue: "missing_parameter")
        /// A value has a type Braze does not take there.
        public static let invalidType = Rule(rawValue: "invalid_type")
        /// A name, key or ID is empty.
        public static let empty = Rule(rawValue: "empty")
        /// A key or string is longer than Braze allows (255 characters; 997 bytes for external IDs).
        public static let tooLong = Rule(rawValue: "too_long")
        /// A property or attribute key starts with `$`, which Braze reserves.
        public static let reservedKey = Rule(rawValue: "reserved_key")
        /// A value breaks its format (dates, gender, country, language, subscription state, phone, numbers).
        public static let invalidValue = Rule(rawValue: "invalid_value")
        /// The currency is not an ISO-4217 alphabetic code.
        public static let invalidCurrency = Rule(rawValue: "invalid_currency")
        /// A purchase quantity outside 1–100.
        public static let quantityOutOfRange = Rule(rawValue: "quantity_out_of_range")
        /// The email address does not look like one.
        public static let invalidEmail = Rule(rawValue: "invalid_email")
        /// Properties holding arrays or objects are larger than 50 KB.
        public static let propertiesTooLarge = Rule(rawValue: "properties_too_large")
        /// `setUserAttribute` named something that is not one of Braze's standard fields.
        public static let unknownAttribute = Rule(rawValue: "unknown_attribute")
    }

    /// The rule broken.
    public var rule: Rule
    /// The parameter, property or attribute key concerned.
    public var key: String
    /// A lowercase message naming the offending value in quotes.
    public var message: String

    /// Creates a violation.
    public init(_ rule: Rule, key: String, _ message: String) {
        self.rule = rule
        self.key = key
        self.message = message
    }

    /// `'key': message (rule)`.
    public var description: String { "'\(key)': \(message) (\(rule.rawValue))" }
}
