import ContainerKit

/// Function Call tags and variables without a class path (or legacy ones without a function name),
/// which no handler can be registered for.
struct MissingClassPathRule: LintRule {
    static let description = RuleDescription(
        id: "missing_class_path",
        name: "Missing Class Path",
        description:
            "A Function Call tag or variable has no class path (legacy: no function name), so no handler can run it.",
        severity: .error,
        triggeringExamples: [
            #"{"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": ""}]}}"#,
            #"{"resource": {"macros": [{"function": "__funcm", "instance_name": "Score"}]}}"#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"tag": [{"tagId": "1", "name": "Call", "type": "funct"}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"{"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "com.example.Tag"}]}}"#,
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": ["macro", 0]}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program else { return [] }
        var findings: [LintFinding] = []
        for (i, tag) in program.tags.enumerated() {
            switch tag.kind {
            case .functionCall(let classPath, _) where Self.isMissing(classPath):
                let message = "function call tag \(program.tagLabel(i)) has no class path"
                findings.append(input.finding(Self.description, message, at: tag.origin.pointer))
            case .legacyFunctionCall(let name, _) where name.isEmpty:
                let message = "function call tag \(program.tagLabel(i)) has no function name"
                findings.append(input.finding(Self.description, message, at: tag.origin.pointer))
            default:
                continue
            }
        }
        for (i, macro) in program.macros.enumerated() {
            switch macro.kind {
            case .functionCall(let classPath, _) where Self.isMissing(classPath):
                let message = "function call variable \(program.macroLabel(i)) has no class path"
                findings.append(input.finding(Self.description, message, at: macro.origin.pointer))
            case .legacyFunctionCall(let name, _) where name.isEmpty:
                let message = "function call variable \(program.macroLabel(i)) has no function name"
                findings.append(input.finding(Self.description, message, at: macro.origin.pointer))
            default:
                continue
            }
        }
        return findings
    }

    /// A constant class path that is absent or blank.
    private static func isMissing(_ classPath: Expr) -> Bool {
        guard case .literal(let value) = classPath else { return false }
        switch value {
        case .undefined, .null: return true
        default: return value.jsString.allSatisfy(\.isWhitespace)
        }
    }
}
