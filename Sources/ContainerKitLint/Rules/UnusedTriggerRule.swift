import ContainerKit

/// Export triggers that fire no tag, block none and enable or disable no variable.
struct UnusedTriggerRule: LintRule {
    static let description = RuleDescription(
        id: "unused_trigger",
        name: "Unused Trigger",
        description: "A trigger fires no tag, blocks none and is referenced by no variable or trigger group.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "trigger": [{"triggerId": "5", "name": "Orphan", "type": "CUSTOM_EVENT"}]}}
            """#
        ],
        nonTriggeringExamples: [
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "tag": [{"tagId": "1", "name": "T", "type": "funct", "blockingTriggerId": ["5"]}],
              "trigger": [{"triggerId": "5", "name": "Blocker", "type": "CUSTOM_EVENT"}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard input.source.kind == .export else { return [] }
        var referenced = Set<String>()
        let fields = ["firingTriggerId", "blockingTriggerId", "enablingTriggerId", "disablingTriggerId"]
        for entry in input.source.list("tag") + input.source.list("variable") {
            guard let map = entry.map else { continue }
            for field in fields {
                for id in map[field]?.arrayValue ?? [] { referenced.insert(id.jsString) }
            }
        }
        let triggers = input.source.list("trigger")
        for entry in triggers { collectTriggerReferences(entry.value, into: &referenced) }
        var findings: [LintFinding] = []
        for entry in triggers {
            guard let map = entry.map, let id = map["triggerId"]?.jsString, !referenced.contains(id) else { continue }
            let name = map["name"]?.jsString ?? id
            let message = "trigger '\(name)' fires no tag, blocks none and is referenced by nothing"
            findings.append(input.finding(Self.description, message, at: entry.pointer))
        }
        return findings
    }

    /// Trigger-group members: parameters of type `TRIGGER_REFERENCE` (`triggerReference` in the API).
    private func collectTriggerReferences(_ value: Value, into referenced: inout Set<String>) {
        switch value {
        case .object(let map):
            let type = map["type"]?.stringValue?.uppercased().replacingAll("_", with: "")
            if type == "TRIGGERREFERENCE", let id = map["value"] { referenced.insert(id.jsString) }
            for (_, item) in map { collectTriggerReferences(item, into: &referenced) }
        case .array(let items):
            for item in items { collectTriggerReferences(item, into: &referenced) }
        default:
            return
        }
    }
}
