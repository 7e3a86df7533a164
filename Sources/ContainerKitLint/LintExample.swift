import ContainerKit

/// A small container document used as a rule example: its text, the file name it is linted under, and
/// optionally a configuration (for rules that depend on one, such as the file size limit).
public struct LintExample: Sendable, ExpressibleByStringLiteral {
    /// The file's content (usually JSON).
    public var text: String
    /// The name the example is linted under; it matters to rules that read the file name.
    public var file: String
    /// The configuration to lint the example with; `nil` uses the defaults.
    public var configuration: LintConfiguration?

    /// Creates an example.
    public init(_ text: String, file: String = "GTM-TEST.json", configuration: LintConfiguration? = nil) {
        self.text = text
        self.file = file
        self.configuration = configuration
    }

    public init(stringLiteral value: String) { self.init(value) }
}
