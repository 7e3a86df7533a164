import ContainerKit

/// Patterns whose matching cost can explode in a backtracking engine (nested quantifiers such as
/// `(a+)+`). ContainerKit's linear-time engine is safe, but the same container runs in GTM's JavaScript and
/// mobile SDKs, which backtrack — and ContainerKit itself runs patterns with lookaround or backreferences on
/// its backtracking matcher, where such a pattern exhausts its step budget and counts as not matching.
struct RegexBacktrackingRule: LintRule {
    static let description = RuleDescription(
        id: "regex_backtracking",
        name: "Regex Backtracking",
        description:
            "A pattern nests quantifiers, as `(a+)+` does, so backtracking engines can take exponential time "
            + "(ContainerKit's own for patterns with lookaround or backreferences, where the match then runs out "
            + "of its step budget and counts as not matching).",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^(a+)+$"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "(x*y?)*z"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^(?=(a+)+b)"}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "^(ab)+[a+]*(c)?$"}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program else { return [] }
        var findings: [LintFinding] = []
        for predicate in program.predicates where predicate.op == .regex && predicate.pattern != nil {
            guard let source = predicate.arg1.literalText, let risk = Self.backtrackingRisk(in: source) else {
                continue
            }
            let pointer = predicate.origin.pointer + (input.source.kind == .resource ? "/arg1" : "")
            let message =
                "regular expression '\(source)' can take exponential time to match: \(risk)"
                + Self.note(predicate.pattern)
            findings.append(input.finding(Self.description, message, at: pointer))
        }
        for (i, macro) in program.macros.enumerated() {
            guard case .regexTable(_, let rows, _, _, _, _) = macro.kind else { continue }
            for row in rows where row.pattern != nil {
                guard let risk = Self.backtrackingRisk(in: row.source) else { continue }
                let message =
                    "regular expression '\(row.source)' in regex table \(program.macroLabel(i)) "
                    + "can take exponential time to match: \(risk)" + Self.note(row.pattern)
                findings.append(input.finding(Self.description, message, at: macro.origin.pointer))
            }
        }
        return findings
    }

    /// What the risk means here: for a pattern ContainerKit itself backtracks on, that a match may run out of
    /// its step budget.
    static func note(_ pattern: RegexPattern?) -> String {
        guard pattern?.usesBacktracking == true else { return "" }
        return "; ContainerKit runs it (lookaround or backreference) on its backtracking matcher, where such a "
            + "match stops at its step budget and counts as not matching"
    }

    /// A description of why `source` can backtrack catastrophically, or `nil` when it looks safe.
    static func backtrackingRisk(in source: String) -> String? {
        RegexPattern.backtrackingRisk(in: source)
    }
}
