public import ContainerKit

extension RegexPattern {
    /// Whether `source` would be dangerous for a backtracking regular-expression engine (such as a browser's):
    /// nil if it is safe, else a short lowercase description of the first risky part, e.g.
    /// `nested quantifier '(a+)+' can take exponential time in backtracking engines`. Patterns that do not
    /// compile give nil (their syntax error is reported elsewhere). ``RegexPattern`` itself is never at risk.
    public static func backtrackingRisk(in source: String) -> String? {
        RegexBacktrackingAnalyzer.risk(in: source)
    }
}
