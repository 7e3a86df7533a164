import ContainerKit

/// Files that are not well-formed JSON or property lists (or nest too deeply to read).
struct SyntaxErrorRule: LintRule {
    static let description = RuleDescription(
        id: "syntax_error",
        name: "Syntax Error",
        description: "The file is not well-formed JSON or property list, or nests too deeply to read.",
        severity: .error,
        triggeringExamples: [
            #"{"resource": {"macros": [}}"#,
            #"{"exportFormatVersion": 2, "containerVersion": {"tag": [{"name": "a",}]}"#,
        ],
        nonTriggeringExamples: [
            #"{"resource": {"version": "1", "macros": [], "tags": [], "predicates": [], "rules": []}}"#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let error = input.readError, !input.looksLikeLegacyBinary else { return [] }
        switch error.code {
        case .fileTooLarge, .legacyBinary, .io: return []
        default: return [input.finding(Self.description, for: error)]
        }
    }
}
