import ContainerKit

/// SARIF 2.1.0 (the format code-scanning services read): one run whose driver lists the rule catalog,
/// and one result per finding with its rule, level, message and physical location. The region is left
/// out when the line is unknown; the JSON pointer goes in the result's properties.
public struct SARIFReporter: LintReporter {
    public static let identifier = "sarif"
    public static let summary = "sarif 2.1.0 with the rule catalog, for code scanning"

    public init() {}

    public func render(_ report: LintReport) -> String {
        var ruleIndex: [String: Int] = [:]
        let rules: [Value] = report.rules.enumerated().map { i, rule in
            ruleIndex[rule.id] = i
            var map = ValueMap()
            map["id"] = .string(rule.id)
            map["name"] = .string(rule.name.replacingAll(" ", with: "").replacingAll("-", with: ""))
            map["shortDescription"] = ["text": .string(rule.description)]
            map["defaultConfiguration"] = ["level": .string(rule.severity.rawValue), "enabled": .bool(!rule.isOptIn)]
            return .object(map)
        }
        let results: [Value] = report.findings.map { finding in
            var map = ValueMap()
            map["ruleId"] = .string(finding.ruleID)
            if let index = ruleIndex[finding.ruleID] { map["ruleIndex"] = .int(Int64(index)) }
            map["level"] = .string(finding.severity.rawValue)
            map["message"] = ["text": .string(finding.message)]
            var physical = ValueMap()
            physical["artifactLocation"] = ["uri": .string(Self.uri(finding.file))]
            if let location = finding.location {
                physical["region"] = [
                    "startLine": .int(Int64(location.line)), "startColumn": .int(Int64(location.column)),
                ]
            }
            map["locations"] = [["physicalLocation": .object(physical)]]
            map["properties"] = ["pointer": .string(finding.pointer)]
            return .object(map)
        }
        var driver = ValueMap()
        driver["name"] = "containerkit-lint"
        driver["semanticVersion"] = .string(ContainerKitVersion.version)
        driver["rules"] = .array(rules)
        var run = ValueMap()
        run["tool"] = ["driver": .object(driver)]
        run["results"] = .array(results)
        var root = ValueMap()
        root["$schema"] = "https://json.schemastore.org/sarif-2.1.0.json"
        root["version"] = "2.1.0"
        root["runs"] = [.object(run)]
        return PrettyJSON.string(.object(root))
    }

    /// A relative URI reference for a file path: bytes outside the unreserved set and `/` are %-encoded.
    static func uri(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x2E, 0x5F, 0x7E, 0x2F:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" + hex : hex)
            }
        }
        return out
    }
}
