import ContainerKit

/// Containers with nothing in them.
struct EmptyContainerRule: LintRule {
    static let description = RuleDescription(
        id: "empty_container",
        name: "Empty Container",
        description: "The container has no tags, triggers, variables or values.",
        severity: .warning,
        triggeringExamples: [
            #"{"resource": {"version": "1", "macros": [], "tags": [], "predicates": [], "rules": []}}"#,
            #"{"exportFormatVersion": 2, "containerVersion": {"container": {"publicId": "GTM-TEST"}}}"#,
            #"{}"#,
        ],
        nonTriggeringExamples: [
            #"{"resource": {"macros": [{"function": "__e"}], "tags": [], "predicates": [], "rules": []}}"#,
            #"{"TITLE": "Welcome"}"#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        let source = input.source
        switch source.kind {
        case .resource:
            guard ["macros", "tags", "predicates", "rules"].allSatisfy({ source.count($0) == 0 }) else { return [] }
            return [
                input.finding(Self.description, "container has no macros, tags, predicates or rules", at: "/resource")
            ]
        case .export:
            guard ["tag", "trigger", "variable"].allSatisfy({ source.count($0) == 0 }) else { return [] }
            return [
                input.finding(Self.description, "container has no tags, triggers or variables", at: "/containerVersion")
            ]
        case .flat:
            guard source.root.isEmpty else { return [] }
            return [input.finding(Self.description, "container has no values", at: "")]
        case .unknown:
            return []
        }
    }
}
