import ContainerKit

/// Renders the findings of a lint run for people or tools. One reporter per file in `Lint/Reporters/`.
public protocol LintReporter: Sendable {
    /// The name used with `--reporter`.
    static var identifier: String { get }
    /// One line saying what the output is for.
    static var summary: String { get }
    /// Creates the reporter.
    init()
    /// The whole report (without a trailing newline; empty when there is nothing to say).
    func render(_ report: LintReport) -> String
}
