import ContainerKit

/// Numeric conditions (`<`, `<=`, `>`, `>=`) against a literal that is not a number, which are never true.
struct NonNumericComparisonRule: LintRule {
    static let description = RuleDescription(
        id: "non_numeric_comparison",
        name: "Non-Numeric Comparison",
        description:
            "A less-than or greater-than condition compares with a constant that is not a number (a literal, a "
            + "constant variable or lookup table, a constant template), so it is never true.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__md", "vtp_key": "price", "vtp_eventType": "CUSTOM"}],
              "predicates": [{"function": "_gt", "arg0": ["macro", 0], "arg1": "ten"}]}}
            """#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"trigger": [{"triggerId": "1", "name": "Big",
              "type": "CUSTOM_EVENT", "filter": [{"type": "LESS", "parameter": [
                {"type": "TEMPLATE", "key": "arg0", "value": "{{_event}}"},
                {"type": "TEMPLATE", "key": "arg1", "value": "1,000"}]}]}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__md", "vtp_key": "price", "vtp_eventType": "CUSTOM"},
                {"function": "__c", "instance_name": "Threshold", "vtp_value": "ten"}],
              "predicates": [{"function": "_gt", "arg0": ["macro", 0], "arg1": ["macro", 1]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__md", "vtp_key": "price", "vtp_eventType": "CUSTOM"}],
              "predicates": [{"function": "_gt", "arg0": ["macro", 0], "arg1": "0"},
                {"function": "_eq", "arg0": ["macro", 0], "arg1": "ten"}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program else { return [] }
        var findings: [LintFinding] = []
        for predicate in program.predicates where predicate.op.isNumeric {
            for (side, expr) in [("arg1", predicate.arg1), ("arg0", predicate.arg0)] {
                // Literals, and constant variables, lookup tables and templates folded to their values.
                // Web containers convert with JavaScript's `Number()` (`""` and `null` are 0), mobile ones
                // need a number or a numeric string.
                guard let value = program.constantValue(of: expr),
                    program.undefinedComparesAsText ? value.jsToNumber.isNaN : value.jsNumber == nil
                else { continue }
                let pointer = predicate.origin.pointer + (input.source.kind == .resource ? "/" + side : "")
                let origin = program.constantOrigin(of: expr).map { " (the constant value of \($0))" } ?? ""
                let message =
                    "condition '\(predicate.op.phrase)' compares with '\(value.jsString)'\(origin), which is not a "
                    + "number, so it is never true"
                findings.append(input.finding(Self.description, message, at: pointer))
            }
        }
        return findings
    }
}
