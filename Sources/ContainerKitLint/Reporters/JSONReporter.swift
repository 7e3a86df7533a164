import ContainerKit

/// A JSON array with one object per finding: `file`, `line`, `column` (null when unknown), `severity`,
/// `rule_id`, `message` and `pointer`.
public struct JSONReporter: LintReporter {
    public static let identifier = "json"
    public static let summary = "a json array of findings"

    public init() {}

    public func render(_ report: LintReport) -> String {
        let items: [Value] = report.findings.map { finding in
            var map = ValueMap(minimumCapacity: 7)
            map["file"] = .string(finding.file)
            map["line"] = finding.location.map { .int(Int64($0.line)) } ?? .null
            map["column"] = finding.location.map { .int(Int64($0.column)) } ?? .null
            map["severity"] = .string(finding.severity.rawValue)
            map["rule_id"] = .string(finding.ruleID)
            map["message"] = .string(finding.message)
            map["pointer"] = .string(finding.pointer)
            return .object(map)
        }
        return PrettyJSON.string(.array(items))
    }
}
