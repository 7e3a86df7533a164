/// Tags that no trigger fires, or that the trigger firing them also blocks.
struct TagNeverFiresRule: LintRule {
    static let description = RuleDescription(
        id: "tag_never_fires",
        name: "Tag Never Fires",
        description:
            "A tag has no firing trigger and is no setup or teardown tag, or the trigger that fires it blocks it.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "A"}], "rules": []}}
            """#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "tag": [{"tagId": "1", "name": "T", "type": "funct", "firingTriggerId": ["5"], "blockingTriggerId": ["5"],
                "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "A"}]}],
              "trigger": [{"triggerId": "5", "name": "Start", "type": "CUSTOM_EVENT"}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "A"},
                {"function": "__funct", "tag_id": 2, "vtp_classPath": "B", "setup_tags": ["list", ["tag", 0, 0]]}],
              "predicates": [], "rules": [[["add", 1]]]}}
            """#,
            #"""
            {"resource": {"tags": [{"function": "__paused", "tag_id": 1}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program, !program.tags.isEmpty else { return [] }
        let count = program.tags.count
        var firing = Array(repeating: 0, count: count)
        var selfBlocked = Array(repeating: 0, count: count)
        var sequenced = Array(repeating: false, count: count)
        for rule in program.rules {
            let blocked = Set(rule.block)
            for tag in Set(rule.add) where tag < count {
                firing[tag] += 1
                if blocked.contains(tag) { selfBlocked[tag] += 1 }
            }
        }
        for tag in program.tags {
            for step in tag.setupTags + tag.teardownTags where step.tag < count { sequenced[step.tag] = true }
        }
        var findings: [LintFinding] = []
        for (i, tag) in program.tags.enumerated() {
            if case .paused = tag.kind { continue }
            let message: String
            if firing[i] == 0 {
                guard !sequenced[i] else { continue }
                message = "tag \(program.tagLabel(i)) has no firing trigger, so it never fires"
            } else if selfBlocked[i] == firing[i] {
                message = "tag \(program.tagLabel(i)) is blocked by the trigger that fires it, so it never fires"
            } else {
                continue
            }
            findings.append(input.finding(Self.description, message, at: tag.origin.pointer))
        }
        return findings
    }
}
