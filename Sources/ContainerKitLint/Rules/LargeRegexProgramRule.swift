import ContainerKit

/// Regular expressions that compile to so many instructions that matching a long value can run out of the
/// evaluation's step budget (``RegexPattern/defaultStepBudget``), where the match counts as failed.
struct LargeRegexProgramRule: LintRule {
    /// Programs larger than this are reported: at the default budget they still match values of about
    /// 4,000 characters, far beyond what an ordinary pattern needs.
    static let instructionLimit = 1_000

    static let description = RuleDescription(
        id: "large_regex_program",
        name: "Large Regex Program",
        description:
            "A regex condition or regex-table row compiles to more than 1000 instructions (counted repetitions "
            + "such as `(.{1,1000}){24}`), so on a long value it can exhaust the evaluation budget and count as "
            + "not matching.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "(.{1,1000}){24}z"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__remm", "vtp_input": ["macro", 0],
              "vtp_map": ["list", ["map", "key", "^([a-z]{1,500}-){3}$", "value", "x"]]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^screen_[a-z]{1,40}$"}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program else { return [] }
        var findings: [LintFinding] = []
        func message(_ pattern: RegexPattern, _ place: String) -> String {
            let size = pattern.programSize
            return "regular expression '\(pattern.source)'\(place) compiles to \(size) instructions, more than "
                + "\(Self.instructionLimit); on a value longer than \(RegexPattern.defaultStepBudget / size) "
                + "characters a match may exceed the step budget and count as not matching"
        }
        for predicate in program.predicates where predicate.op == .regex {
            guard let pattern = predicate.pattern, pattern.programSize > Self.instructionLimit else { continue }
            let pointer = predicate.origin.pointer + (input.source.kind == .resource ? "/arg1" : "")
            findings.append(input.finding(Self.description, message(pattern, ""), at: pointer))
        }
        for (i, macro) in program.macros.enumerated() {
            guard case .regexTable(_, let rows, _, _, _, _) = macro.kind else { continue }
            for row in rows {
                guard let pattern = row.pattern, pattern.programSize > Self.instructionLimit else { continue }
                findings.append(
                    input.finding(
                        Self.description,
                        message(pattern, " in regex table \(program.macroLabel(i))"),
                        at: macro.origin.pointer
                    )
                )
            }
        }
        return findings
    }
}
