/// Tags that no trigger fires, or that a blocking trigger stops whenever a firing trigger fires them.
struct TagNeverFiresRule: LintRule {
    static let description = RuleDescription(
        id: "tag_never_fires",
        name: "Tag Never Fires",
        description:
            "A tag has no firing trigger and is no setup or teardown tag, or a blocking trigger holds whenever a "
            + "firing trigger does (the same trigger, or conditions the firing ones imply).",
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
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "tag": [{"tagId": "1", "name": "T", "type": "funct", "firingTriggerId": ["5"], "blockingTriggerId": ["6"],
                "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "A"}]}],
              "trigger": [
                {"triggerId": "5", "name": "Purchase", "type": "CUSTOM_EVENT", "customEventFilter": [{"type": "EQUALS",
                  "parameter": [{"type": "TEMPLATE", "key": "arg0", "value": "{{_event}}"},
                                {"type": "TEMPLATE", "key": "arg1", "value": "purchase"}]}]},
                {"triggerId": "6", "name": "Any purchase", "type": "CUSTOM_EVENT", "customEventFilter": [{"type": "STARTS_WITH",
                  "parameter": [{"type": "TEMPLATE", "key": "arg0", "value": "{{_event}}"},
                                {"type": "TEMPLATE", "key": "arg1", "value": "purch"}]}]}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__md", "vtp_key": "tier", "vtp_eventType": "CUSTOM"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "A"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"},
                             {"function": "_eq", "arg0": ["macro", 1], "arg1": "gold"}],
              "rules": [[["if", 0, 1], ["add", 0]], [["if", 1], ["block", 0]]]}}
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
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__md", "vtp_key": "tier", "vtp_eventType": "CUSTOM"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "A"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"},
                             {"function": "_eq", "arg0": ["macro", 1], "arg1": "gold"},
                             {"function": "_cn", "arg0": ["macro", 0], "arg1": "refund"}],
              "rules": [[["if", 0], ["add", 0]], [["if", 1], ["block", 0]], [["if", 2], ["block", 0]]]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program, !program.tags.isEmpty else { return [] }
        let count = program.tags.count
        var firing = Array(repeating: 0, count: count)
        var selfBlocked = Array(repeating: 0, count: count)
        var sequenced = Array(repeating: false, count: count)
        var firingRules = Array(repeating: [Int](), count: count)
        var blockingRules = Array(repeating: [Int](), count: count)
        for (r, rule) in program.rules.enumerated() {
            let blocked = Set(rule.block)
            for tag in Set(rule.add) where tag < count {
                firing[tag] += 1
                firingRules[tag].append(r)
                if blocked.contains(tag) { selfBlocked[tag] += 1 }
            }
            for tag in blocked where tag < count { blockingRules[tag].append(r) }
        }
        let implication = ConditionImplication(program: program)
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
            } else if let cover = Self.blockingCover(firingRules[i], blockingRules[i], implication, program) {
                message =
                    "tag \(program.tagLabel(i)) never fires: whenever \(cover.firing) fires it, \(cover.blocking) "
                    + "blocks it (its conditions imply the blocking ones)"
            } else {
                continue
            }
            findings.append(input.finding(Self.description, message, at: tag.origin.pointer))
        }
        return findings
    }

    /// When every firing rule of a tag implies one of its blocking rules: a label for the first pair.
    static func blockingCover(
        _ firing: [Int],
        _ blocking: [Int],
        _ implication: ConditionImplication,
        _ program: Program
    ) -> (firing: String, blocking: String)? {
        guard !blocking.isEmpty else { return nil }
        var first: (String, String)?
        for f in firing {
            guard let b = blocking.first(where: { implication.implies(program.rules[f], program.rules[$0]) }) else {
                return nil
            }
            if first == nil { first = (program.ruleLabel(f), program.ruleLabel(b)) }
        }
        return first
    }
}
