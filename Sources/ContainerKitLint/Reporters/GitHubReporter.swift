import ContainerKit

/// GitHub Actions workflow commands, one per finding:
/// `::error file=path,line=1,col=2,title=rule_id::message` (`::warning`, `::notice` for notes).
public struct GitHubReporter: LintReporter {
    public static let identifier = "github"
    public static let summary = "github actions workflow annotations"

    public init() {}

    public func render(_ report: LintReport) -> String {
        report.findings.map { finding in
            let command: String
            switch finding.severity {
            case .error: command = "error"
            case .warning: command = "warning"
            case .note: command = "notice"
            }
            var properties = "file=" + Self.escapeProperty(finding.file)
            if let location = finding.location { properties += ",line=\(location.line),col=\(location.column)" }
            properties += ",title=" + Self.escapeProperty(finding.ruleID)
            return "::\(command) \(properties)::\(Self.escapeData(finding.message)) (\(finding.ruleID))"
        }.joined(separator: "\n")
    }

    static func escapeData(_ text: String) -> String {
        text.replacingAll("%", with: "%25").replacingAll("\r", with: "%0D").replacingAll("\n", with: "%0A")
    }

    static func escapeProperty(_ text: String) -> String {
        escapeData(text).replacingAll(":", with: "%3A").replacingAll(",", with: "%2C")
    }
}
