import ContainerKit

/// Containers of a known format whose parts have the wrong type or shape, so they do not compile.
struct InvalidStructureRule: LintRule {
    static let description = RuleDescription(
        id: "invalid_structure",
        name: "Invalid Structure",
        description: "A part of the container has the wrong type or shape, so the container does not compile.",
        severity: .error,
        triggeringExamples: [
            #"{"resource": {"macros": {"function": "__e"}, "tags": [], "predicates": [], "rules": []}}"#,
            #"{"resource": {"macros": [{"instance_name": "no function"}], "tags": [], "predicates": [], "rules": []}}"#,
            #"{"resource": {"macros": [], "tags": [], "predicates": [], "rules": [["add", 0]]}}"#,
        ],
        nonTriggeringExamples: [
            #"{"resource": {"macros": [{"function": "__e"}], "tags": [], "predicates": [], "rules": []}}"#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let error = input.compileError else { return [] }
        switch error.code {
        case .unknownFormat, .danglingReference: return []
        default: return [input.finding(Self.description, for: error)]
        }
    }
}
