/// Patterns whose matching cost can explode in a backtracking engine (nested quantifiers such as
/// `(a+)+`). ContainerKit's own engine is linear, but the same container runs in GTM's JavaScript and
/// mobile SDKs, which backtrack.
struct RegexBacktrackingRule: LintRule {
    static let description = RuleDescription(
        id: "regex_backtracking",
        name: "Regex Backtracking",
        description:
            "A pattern nests quantifiers, as `(a+)+` does, so backtracking engines can take exponential time.",
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
            let message = "regular expression '\(source)' can take exponential time to match: \(risk)"
            findings.append(input.finding(Self.description, message, at: pointer))
        }
        for (i, macro) in program.macros.enumerated() {
            guard case .regexTable(_, let rows, _, _) = macro.kind else { continue }
            for row in rows where row.pattern != nil {
                guard let risk = Self.backtrackingRisk(in: row.source) else { continue }
                let message =
                    "regular expression '\(row.source)' in regex table \(program.macroLabel(i)) "
                    + "can take exponential time to match: \(risk)"
                findings.append(input.finding(Self.description, message, at: macro.origin.pointer))
            }
        }
        return findings
    }

    /// A description of why `source` can backtrack catastrophically, or `nil` when it looks safe.
    ///
    /// MERGE: switch to `RegexPattern.backtrackingRisk(in:)` when the linear-time engine lands; the
    /// fallback below only finds nested unbounded quantifiers.
    static func backtrackingRisk(in source: String) -> String? {
        FallbackBacktrackingDetector.risk(in: source)
    }
}

/// FALLBACK (remove when `RegexPattern.backtrackingRisk(in:)` exists): finds a group that contains an
/// unbounded quantifier (`*`, `+`, `{n,}`) and is itself repeated without bound, such as `(a+)+`,
/// `(x*y)*` or `((ab)+c)*`.
private enum FallbackBacktrackingDetector {
    struct Frame {
        var start: Int
        var hasUnboundedQuantifier = false
    }

    static func risk(in source: String) -> String? {
        let chars = Array(source)
        var frames: [Frame] = [Frame(start: 0)]
        /// The group just closed: where it started and whether it holds an unbounded quantifier.
        var lastGroup: (start: Int, unbounded: Bool)?
        var i = 0
        while i < chars.count {
            let c = chars[i]
            switch c {
            case "\\":
                i += 2
                lastGroup = nil
                continue
            case "[":
                i = endOfClass(chars, from: i)
                lastGroup = nil
                continue
            case "(":
                frames.append(Frame(start: i))
                lastGroup = nil
            case ")":
                guard frames.count > 1 else { return nil }
                let frame = frames.removeLast()
                lastGroup = (frame.start, frame.hasUnboundedQuantifier)
                if frame.hasUnboundedQuantifier { frames[frames.count - 1].hasUnboundedQuantifier = true }
            case "*", "+", "{":
                guard let end = unboundedQuantifierEnd(chars, at: i) else {
                    lastGroup = nil
                    break
                }
                if let group = lastGroup, group.unbounded {
                    return "nested quantifier '\(String(chars[group.start..<end]))'"
                }
                frames[frames.count - 1].hasUnboundedQuantifier = true
                lastGroup = nil
                i = end
                continue
            default:
                lastGroup = nil
            }
            i += 1
        }
        return nil
    }

    /// The index after a character class starting at `start`.
    private static func endOfClass(_ chars: [Character], from start: Int) -> Int {
        var i = start + 1
        if i < chars.count && chars[i] == "^" { i += 1 }
        if i < chars.count && chars[i] == "]" { i += 1 }
        while i < chars.count && chars[i] != "]" {
            i += chars[i] == "\\" ? 2 : 1
        }
        return i + 1
    }

    /// The end of an unbounded quantifier (`*`, `+`, `{n,}`, each optionally lazy or possessive) at `i`.
    private static func unboundedQuantifierEnd(_ chars: [Character], at i: Int) -> Int? {
        var end = i + 1
        if chars[i] == "{" {
            guard let close = chars[i...].firstIndex(of: "}") else { return nil }
            let body = String(chars[(i + 1)..<close])
            let parts = body.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count == 2, Int(parts[0]) != nil, parts[1].isEmpty else { return nil }
            end = close + 1
        }
        if end < chars.count && (chars[end] == "?" || chars[end] == "+") { end += 1 }
        return end
    }
}
