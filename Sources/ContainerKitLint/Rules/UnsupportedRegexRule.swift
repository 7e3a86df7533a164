import ContainerKit

/// Regular expressions that are valid JavaScript (GTM runs them) but beyond ContainerKit's regex limits:
/// repetition counts over 1000, very long patterns, very deep nesting. (Lookaround and backreferences run, on
/// the backtracking matcher; `regex_backtracking` warns when they can explode.)
struct UnsupportedRegexRule: LintRule {
    static let description = RuleDescription(
        id: "unsupported_regex",
        name: "Unsupported Regular Expression",
        description:
            "A regex condition or regex-table row is valid JavaScript but beyond ContainerKit's regex limits "
            + "(repetition counts over 1000, patterns over 10,000 characters, groups nested over 200 deep), so "
            + "here it never matches.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^screen_x{1001}"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__remm", "vtp_input": ["macro", 0],
              "vtp_map": ["list", ["map", "key", "(?:a{1000}){1000}", "value", "x"]]}]}}
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
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^screen_(?!debug)(\\w)\\1"}]}}
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
