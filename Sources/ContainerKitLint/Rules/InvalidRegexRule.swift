import ContainerKit

/// Regular expressions in conditions and regex tables that do not compile.
struct InvalidRegexRule: LintRule {
    static let description = RuleDescription(
        id: "invalid_regex",
        name: "Invalid Regular Expression",
        description:
            "A regex condition or regex-table row holds a pattern JavaScript refuses (GTM's own rules, ECMAScript "
            + "Annex B), so it never matches.",
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
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^(?P<name>\\w+)$"}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^screen_(view|open)$"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^\\/app\\-\\q{2}$"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^(?=a)"}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        InvalidRegexRule.problems(in: input).filter { $0.error.code != .unsupportedRegex }.map { problem in
            input.finding(
                Self.description,
                "invalid regular expression '\(problem.source)'\(problem.place): \(problem.error.message) "
                    + "(JavaScript refuses it, so GTM never matches it either)",
                at: problem.pointer
            )
        }
    }

    /// One pattern that does not compile: where, its text, the error, and a phrase naming its regex table.
    struct Problem {
        var pointer: String
        var source: String
        var error: RegexPatternError
        var place: String
    }

    /// Every constant pattern of a regex condition or regex-table row that does not compile.
    static func problems(in input: LintInput) -> [Problem] {
        guard let program = input.program else { return [] }
        var problems: [Problem] = []
        for predicate in program.predicates where predicate.op == .regex {
            guard let error = predicate.patternError, let source = predicate.arg1.literalText else { continue }
            let pointer = predicate.origin.pointer + (input.source.kind == .resource ? "/arg1" : "")
            problems.append(Problem(pointer: pointer, source: source, error: error, place: ""))
        }
        for (i, macro) in program.macros.enumerated() {
            guard case .regexTable(_, let rows, _, _, _, _) = macro.kind else { continue }
            for row in rows where row.pattern == nil {
                let error: RegexPatternError
                do {
                    _ = try RegexPattern(row.source)
                    continue
                } catch let failure {
                    error = failure
                }
                problems.append(
                    Problem(
                        pointer: macro.origin.pointer,
                        source: row.source,
                        error: error,
                        place: " in regex table \(program.macroLabel(i))"
                    )
                )
            }
        }
        return problems
    }
}
