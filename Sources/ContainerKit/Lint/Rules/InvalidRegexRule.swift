/// Regular expressions in conditions and regex tables that do not compile.
struct InvalidRegexRule: LintRule {
    static let description = RuleDescription(
        id: "invalid_regex",
        name: "Invalid Regular Expression",
        description: "A regex condition or regex-table row holds a pattern that does not compile, so it never matches.",
        severity: .error,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "screen_(view"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__remm", "vtp_input": ["macro", 0],
              "vtp_map": ["list", ["map", "key", "[a-", "value", "x"]]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^screen_(view|open)$"}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program else { return [] }
        var findings: [LintFinding] = []
        for predicate in program.predicates where predicate.op == .regex {
            guard let error = predicate.patternError, let source = predicate.arg1.literalText else { continue }
            let pointer = predicate.origin.pointer + (input.source.kind == .resource ? "/arg1" : "")
            findings.append(
                input.finding(Self.description, "invalid regular expression '\(source)': \(error)", at: pointer)
            )
        }
        for (i, macro) in program.macros.enumerated() {
            guard case .regexTable(_, let rows, _, _) = macro.kind else { continue }
            for row in rows where row.pattern == nil {
                var reason = "it does not compile"
                do { _ = try RegexPattern(row.source) } catch { reason = error.message }
                let message =
                    "invalid regular expression '\(row.source)' in regex table \(program.macroLabel(i)): \(reason)"
                findings.append(input.finding(Self.description, message, at: macro.origin.pointer))
            }
        }
        return findings
    }
}
