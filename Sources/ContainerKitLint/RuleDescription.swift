import ContainerKit

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
