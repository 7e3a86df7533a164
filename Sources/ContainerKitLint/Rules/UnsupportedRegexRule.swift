import ContainerKit

/// Regular expressions that are valid JavaScript (GTM runs them) but that ContainerKit's linear-time engine
/// does not run: lookaround, backreferences, repetition counts over 1000.
struct UnsupportedRegexRule: LintRule {
    static let description = RuleDescription(
        id: "unsupported_regex",
        name: "Unsupported Regular Expression",
        description:
            "A regex condition or regex-table row is valid JavaScript but uses what ContainerKit does not run "
            + "(lookaround, backreferences, huge repetition counts), so here it never matches.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^screen_(?!debug)"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__remm", "vtp_input": ["macro", 0],
              "vtp_map": ["list", ["map", "key", "(a)\\1", "value", "x"]]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^screen_(view|open)$"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "screen_(view"}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        InvalidRegexRule.problems(in: input).filter { $0.error.code == .unsupportedRegex }.map { problem in
            input.finding(
                Self.description,
                "regular expression '\(problem.source)'\(problem.place) is valid JavaScript, but ContainerKit does "
                    + "not run it: \(problem.error.message); it never matches here",
                at: problem.pointer
            )
        }
    }
}
