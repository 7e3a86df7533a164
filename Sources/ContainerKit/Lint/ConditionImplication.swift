/// Whether one rule's conditions imply another's, compared as normalised predicates (function, operands,
/// `ignore_case`, negation), so lint can tell that a blocking trigger holds whenever a firing trigger does.
///
/// A condition is a predicate with a polarity: `if p` with `p.negate` off, or `unless p` with it on, must
/// hold; the others must fail. Rule A implies rule B when every condition of B is implied by A's:
/// - the same normalised condition is in A (same operator, the same operand — the event-name variables of
///   a container count as one — the same right side, `ignore_case` and polarity);
/// - or A requires `x equals "v"` (case-sensitive) and B's string or regex test of `x` gives the required
///   answer for the text `v` (`x equals "purchase"` implies `x starts with "purch"` and `x does not
///   contain "refund"`).
struct ConditionImplication {
    let program: Program

    /// One condition in normal form.
    struct Condition: Hashable {
        var op: PredicateOperator
        var operand: String
        var right: String
        var ignoreCase: Bool
        var holds: Bool
    }

    /// The conditions rule `rule` requires: its `if` predicates and its `unless` predicates, negation folded.
    func conditions(of rule: RuleDef) -> [(condition: Condition, predicate: Int)]? {
        var out: [(Condition, Int)] = []
        for (list, positive) in [(rule.ifs, true), (rule.unless, false)] {
            for p in list where p < program.predicates.count {
                guard let condition = normalised(p, holds: positive) else { return nil }
                out.append((condition, p))
            }
        }
        return out
    }

    /// Whether `firing` passing means `blocking` passes too.
    func implies(_ firing: RuleDef, _ blocking: RuleDef) -> Bool {
        guard let have = conditions(of: firing), let need = conditions(of: blocking) else { return false }
        let haveSet = Set(have.map(\.condition))
        // What A pins each operand to: `operand equals "v"`, case-sensitive, required to hold.
        var pinned: [String: String] = [:]
        for (condition, _) in have where condition.op == .equals && condition.holds && !condition.ignoreCase {
            pinned[condition.operand] = condition.right
        }
        for (condition, predicate) in need {
            if haveSet.contains(condition) { continue }
            guard let value = pinned[condition.operand], let outcome = evaluate(predicate, on: value),
                outcome == condition.holds
            else { return false }
        }
        return true
    }

    /// The normal form of predicate `p`, or `nil` when its right side is not constant or its operator is
    /// unknown (no implication is claimed then).
    private func normalised(_ p: Int, holds positive: Bool) -> Condition? {
        let predicate = program.predicates[p]
        guard predicate.op != .unsupported, case .literal(let literal) = predicate.arg1 else { return nil }
        var right = literal.jsString
        if predicate.ignoreCase { right = right.lowercased() }
        return Condition(
            op: predicate.op,
            operand: operandKey(predicate.arg0),
            right: right,
            ignoreCase: predicate.ignoreCase,
            holds: predicate.negate ? !positive : positive
        )
    }

    /// A key for the left side: every plain event-name variable is `event`; a macro is its index; a constant
    /// is its text.
    private func operandKey(_ expr: Expr) -> String {
        switch expr {
        case .macro(let m) where m < program.macros.count:
            if case .eventName = program.macros[m].kind, program.macros[m].format.isEmpty { return "event" }
            return "macro \(m)"
        case .literal(let value): return "literal " + value.jsString
        default: return "expression"
        }
    }

    /// Predicate `p` (ignoring `negate`) applied to the text `value`; `nil` for numeric operators and
    /// patterns that are not constant.
    private func evaluate(_ p: Int, on value: String) -> Bool? {
        let predicate = program.predicates[p]
        guard case .literal(let literal) = predicate.arg1 else { return nil }
        let subject = predicate.ignoreCase ? value.lowercased() : value
        let right = predicate.ignoreCase ? literal.jsString.lowercased() : literal.jsString
        switch predicate.op {
        case .equals: return subject == right
        case .contains: return TextSearch.contains(subject, right)
        case .startsWith: return TextSearch.hasPrefix(subject, right)
        case .endsWith: return TextSearch.hasSuffix(subject, right)
        case .regex: return predicate.pattern?.matches(value)
        default: return nil
        }
    }
}
