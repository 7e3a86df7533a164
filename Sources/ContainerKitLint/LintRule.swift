import ContainerKit

/// A lint rule: a stable description and a check over one file.
///
/// Each rule lives in its own file under `Lint/Rules/`. A rule reads the ``LintInput``: the parsed
/// document (when the file could be read), the compiled container (when it compiled) and the
/// configuration. Rules that need the compiled program return nothing when compilation failed.
public protocol LintRule: Sendable {
    /// The rule's identifier, severity, description and examples.
    static var description: RuleDescription { get }
    /// Creates the rule.
    init()
    /// Returns the problems this rule finds in one file.
    func check(_ input: LintInput) -> [LintFinding]
}
