import ContainerKit

/// Tag, variable, trigger and condition types that a server runtime cannot run (`__html`, `__jsm`,
/// `__ua`, browser triggers, …), once per type with how often it occurs.
struct UnsupportedTemplateRule: LintRule {
    static let description = RuleDescription(
        id: "unsupported_template",
        name: "Unsupported Template",
        description:
            "A tag, variable, trigger or condition type needs a browser or JavaScript, so ContainerKit cannot run it.",
        severity: .warning,
        triggeringExamples: [
            #"{"resource": {"tags": [{"function": "__html", "tag_id": 1, "vtp_html": "<script></script>"}]}}"#,
            #"{"resource": {"macros": [{"function": "__jsm", "vtp_javascript": "function(){return 1}"}]}}"#,
        ],
        nonTriggeringExamples: [
            #"{"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "A"}]}}"#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let container = input.container else { return [] }
        return container.unsupported.map { error in
            input.finding(Self.description, error.message, at: error.pointer)
        }
    }
}
