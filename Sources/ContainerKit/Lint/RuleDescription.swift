/// What a lint rule is: its stable identifier, a title, a one-line description, its default severity,
/// whether it must be switched on, and examples that trigger it or not (which are also its tests).
public struct RuleDescription: Sendable {
    /// The stable snake_case identifier used in configuration, output and `--list-rules`.
    public let id: String
    /// A title-case name, e.g. "Dangling Reference".
    public let name: String
    /// One sentence saying what the rule finds.
    public let description: String
    /// The severity findings get unless the configuration overrides it.
    public let severity: LintSeverity
    /// Whether the rule runs only when listed in `opt_in_rules`.
    public let isOptIn: Bool
    /// Small documents that must produce at least one finding of this rule.
    public let triggeringExamples: [LintExample]
    /// Small documents that must produce no finding of this rule.
    public let nonTriggeringExamples: [LintExample]

    /// Creates a description.
    public init(
        id: String,
        name: String,
        description: String,
        severity: LintSeverity,
        isOptIn: Bool = false,
        triggeringExamples: [LintExample],
        nonTriggeringExamples: [LintExample]
    ) {
        self.id = id
        self.name = name
        self.description = description
        self.severity = severity
        self.isOptIn = isOptIn
        self.triggeringExamples = triggeringExamples
        self.nonTriggeringExamples = nonTriggeringExamples
    }
}

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
