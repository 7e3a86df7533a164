import ContainerKit

/// A regex-table row with full match whose key is an alternation (`a|b|c`): GTM anchors the key as it is written
/// (`^a|b|c$`), not as a group, so only the first alternative must start the input and only the last must end it —
/// the others match anywhere, which is seldom what the row means.
struct RegexTableAlternationRule: LintRule {
    static let description = RuleDescription(
        id: "regex_table_alternation",
        name: "Regex Table Alternation",
        description:
            "A regex-table row with full match has a key with top-level alternatives: GTM anchors the key as written "
            + "(`^` before the first alternative, `$` after the last), so the alternatives between them match anywhere "
            + "in the input; group them to match the whole input.",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"},
              {"function": "__remm", "vtp_input": ["macro", 0], "vtp_fullMatch": true,
               "vtp_map": ["list", ["map", "key", "a|b|c", "value", "x"]]}]}}
            """#
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"},
              {"function": "__remm", "vtp_input": ["macro", 0], "vtp_fullMatch": true,
               "vtp_map": ["list", ["map", "key", "(a|b|c)", "value", "x"], ["map", "key", "[|]x\\|y", "value", "y"]]}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"},
              {"function": "__remm", "vtp_input": ["macro", 0], "vtp_fullMatch": false,
               "vtp_map": ["list", ["map", "key", "a|b|c", "value", "x"]]}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program else { return [] }
        var findings: [LintFinding] = []
        for (i, macro) in program.macros.enumerated() {
            guard case .regexTable(_, let rows, _, _, _, fullMatch: true) = macro.kind else { continue }
            for row in rows where row.pattern != nil && Self.hasTopLevelAlternation(row.source) {
                let message =
                    "regex table \(program.macroLabel(i)) matches the whole input, but GTM anchors its key "
                    + "'\(row.source)' as written: only the first alternative must start the input and only the last "
                    + "end it; group the alternatives, '(…)', to match the whole input"
                findings.append(input.finding(Self.description, message, at: macro.origin.pointer))
            }
        }
        return findings
    }

    /// Whether `source` has a `|` outside every group and class (an escaped `\|` is a literal).
    static func hasTopLevelAlternation(_ source: String) -> Bool {
        var depth = 0
        var inClass = false
        var escaped = false
        for character in source.unicodeScalars {
            if escaped {
                escaped = false
                continue
            }
            switch character {
            case "\\": escaped = true
            case "[" where !inClass: inClass = true
            case "]" where inClass: inClass = false
            case "(" where !inClass: depth += 1
            case ")" where !inClass: depth = max(0, depth - 1)
            case "|" where !inClass && depth == 0: return true
            default: break
            }
        }
        return false
    }
}
