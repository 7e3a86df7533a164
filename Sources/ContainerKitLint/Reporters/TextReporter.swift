import ContainerKit

/// `path:line:col: severity: message (rule_id)`, one finding per line; the position is left out when
/// it is unknown (property lists, files that could not be read). Line breaks in messages print as `\n`.
public struct TextReporter: LintReporter {
    public static let identifier = "text"
    public static let summary = "one line per finding, like compilers print (default)"

    public init() {}

    public func render(_ report: LintReport) -> String {
        report.findings.map { finding in
            finding.description.replacingAll("\r", with: "\\r").replacingAll("\n", with: "\\n")
        }.joined(separator: "\n")
    }
}
