public import ContainerKit

/// One problem a lint rule found: which rule, how serious, what, and where (file, JSON pointer and,
/// for JSON text, line and column).
public struct LintFinding: Sendable, Hashable, CustomStringConvertible {
    /// The stable snake_case identifier of the rule that found the problem.
    public var ruleID: String
    /// How serious the problem is, after configuration and `--strict` were applied.
    public var severity: LintSeverity
    /// A lowercase message naming the offending value in quotes.
    public var message: String
    /// The file the problem is in.
    public var file: String
    /// A JSON pointer (RFC 6901) to the offending part of the document; `""` is the whole document.
    public var pointer: String
    /// The line and column, when known (JSON text; property lists have none).
    public var location: SourceLocation?

    /// Creates a finding.
    public init(
        ruleID: String,
        severity: LintSeverity,
        message: String,
        file: String,
        pointer: String = "",
        location: SourceLocation? = nil
    ) {
        self.ruleID = ruleID
        self.severity = severity
        self.message = message
        self.file = file
        self.pointer = pointer
        self.location = location
    }

    /// `file:line:col: severity: message (rule_id)`, leaving out the position when it is unknown.
    public var description: String {
        var out = file
        if let location { out += ":\(location.line):\(location.column)" }
        return out + ": \(severity): \(message) (\(ruleID))"
    }

    /// The order findings are reported in: by file, line, column, then rule and message.
    static func reportOrder(_ a: LintFinding, _ b: LintFinding) -> Bool {
        if a.file != b.file { return a.file < b.file }
        let la = a.location.map { ($0.line, $0.column) } ?? (0, 0)
        let lb = b.location.map { ($0.line, $0.column) } ?? (0, 0)
        if la != lb { return la < lb }
        if a.ruleID != b.ruleID { return a.ruleID < b.ruleID }
        if a.pointer != b.pointer { return a.pointer < b.pointer }
        return a.message < b.message
    }
}
