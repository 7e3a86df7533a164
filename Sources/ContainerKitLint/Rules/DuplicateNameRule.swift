import ContainerKit

/// Names used by more than one tag, trigger or variable.
struct DuplicateNameRule: LintRule {
    static let description = RuleDescription(
        id: "duplicate_name",
        name: "Duplicate Name",
        description: "Two tags, triggers or variables share a name; for variables `{{Name}}` then reads the first.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "variable": [{"variableId": "1", "name": "Event", "type": "c"}],
              "builtInVariable": [{"type": "EVENT", "name": "Event"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e", "instance_name": "Event"},
              {"function": "__c", "instance_name": "Event", "vtp_value": "x"}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "tag": [{"tagId": "1", "name": "Same"}], "trigger": [{"triggerId": "2", "name": "Same"}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        var findings: [LintFinding] = []
        let source = input.source
        switch source.kind {
        case .export:
            duplicates(
                in: source.list("variable") + source.list("builtInVariable"),
                key: "name",
                what: "variable",
                input,
                &findings
            )
            duplicates(in: source.list("tag"), key: "name", what: "tag", input, &findings)
            duplicates(in: source.list("trigger"), key: "name", what: "trigger", input, &findings)
        case .resource:
            duplicates(in: source.list("macros"), key: "instance_name", what: "variable", input, &findings)
        case .flat, .unknown:
            break
        }
        return findings
    }

    private func duplicates(
        in entries: [RawContainer.Entry],
        key: String,
        what: String,
        _ input: LintInput,
        _ findings: inout [LintFinding]
    ) {
        var seen = Set<String>()
        for entry in entries {
            guard let name = entry.map?[key]?.stringValue, !name.isEmpty else { continue }
            if !seen.insert(name).inserted {
                let message = "\(what) name '\(name)' is used more than once"
                findings.append(input.finding(Self.description, message, at: entry.pointer + "/" + key))
            }
        }
    }
}
