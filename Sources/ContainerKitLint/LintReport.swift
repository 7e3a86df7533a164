import ContainerKit

/// The result of linting some files: the findings in report order, the files linted and the rule catalog.
public struct LintReport: Sendable {
    /// The findings, in report order.
    public var findings: [LintFinding]
    /// The files that were linted, in order.
    public var files: [String]
    /// The rules the catalog lists (SARIF includes it).
    public var rules: [RuleDescription]

    /// Creates a report; the findings are put in report order (by file, line, column, rule).
    public init(
        findings: [LintFinding],
        files: [String],
        rules: [RuleDescription] = Linter.builtInRules.map { $0.description }
    ) {
        self.findings = findings.sorted(by: LintFinding.reportOrder)
        self.files = files
        self.rules = rules
    }

    /// The number of findings of `severity`.
    public func count(_ severity: LintSeverity) -> Int { findings.count { $0.severity == severity } }

    /// Every warning turned into an error (what `--strict` does).
    public func strict() -> LintReport {
        var copy = self
        for i in copy.findings.indices where copy.findings[i].severity == .warning {
            copy.findings[i].severity = .error
        }
        return copy
    }

    /// "3 errors, 1 warning in 2 files", or "no problems in 5 files".
    public var summary: String {
        let files = self.files.count == 1 ? "1 file" : "\(self.files.count) files"
        var parts: [String] = []
        for (severity, noun) in [(LintSeverity.error, "error"), (.warning, "warning"), (.note, "note")] {
            let n = count(severity)
            if n > 0 { parts.append("\(n) \(noun)\(n == 1 ? "" : "s")") }
        }
        return parts.isEmpty ? "no problems in \(files)" : "\(parts.joined(separator: ", ")) in \(files)"
    }
}
