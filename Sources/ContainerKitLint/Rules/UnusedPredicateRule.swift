import ContainerKit

/// Compiled-resource predicates that no rule tests.
struct UnusedPredicateRule: LintRule {
    static let description = RuleDescription(
        id: "unused_predicate",
        name: "Unused Predicate",
        description: "A predicate of a compiled resource is used by no rule's `if` or `unless` clause.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "a"},
                {"function": "_eq", "arg0": ["macro", 0], "arg1": "b"}],
              "rules": [[["if", 0]]]}}
            """#
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "a"},
                {"function": "_eq", "arg0": ["macro", 0], "arg1": "b"}],
              "rules": [[["if", 0], ["unless", 1]]]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard input.source.kind == .resource else { return [] }
        let predicates = input.source.list("predicates")
        guard !predicates.isEmpty else { return [] }
        var used = Array(repeating: false, count: predicates.count)
        for rule in input.source.list("rules") {
            for clause in rule.value.arrayValue ?? [] {
                guard let items = clause.arrayValue, let op = items.first?.stringValue, op == "if" || op == "unless"
                else {
                    continue
                }
                for item in items.dropFirst() {
                    if let n = item.jsNumber, n >= 0, n < Double(predicates.count), n == n.rounded() {
                        used[Int(n)] = true
                    }
                }
            }
        }
        var findings: [LintFinding] = []
        for (i, entry) in predicates.enumerated() where !used[i] {
            let function = entry.map?["function"]?.jsString ?? "?"
            let message = "predicate \(i) ('\(function)') is not used by any rule"
            findings.append(input.finding(Self.description, message, at: entry.pointer))
        }
        return findings
    }
}
