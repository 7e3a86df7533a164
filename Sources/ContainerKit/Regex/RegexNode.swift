/// A zero-width assertion.
package enum RegexAssertion: UInt8, Sendable {
    /// `^`: the start of the input.
    case start
    /// `$`: the end of the input.
    case end
    /// `\b`: between a word and a non-word scalar (ASCII word characters, as in JavaScript).
    case wordBoundary
    /// `\B`: not at a word boundary.
    case notWordBoundary
}

/// The syntax tree of a parsed pattern.
package indirect enum RegexNode: Sendable {
    /// Matches the empty string.
    case empty
    /// One scalar.
    case literal(Unicode.Scalar)
    /// `.`: any scalar except `\n`.
    case dot
    /// A character class or class escape.
    case set(RegexCharClass)
    /// `^`, `$`, `\b`, `\B`.
    case assertion(RegexAssertion)
    /// A parenthesised group; `capture` is the 1-based group number of a capturing group.
    case group(RegexNode, capture: Int?)
    /// A sequence.
    case concat([RegexNode])
    /// Alternatives in priority order.
    case alternation([RegexNode])
    /// A quantified node; `max == nil` means unbounded. `span` is the scalar range of the quantified text.
    case repetition(RegexNode, min: Int, max: Int?, greedy: Bool, span: Range<Int>)
    /// `(?=…)`, `(?!…)` (`behind` false) and `(?<=…)`, `(?<!…)` (`behind` true): a zero-width test of the body.
    case lookaround(RegexNode, behind: Bool, negated: Bool)
    /// `\1` or `\k<name>`: the text capture `group` last matched (empty when it did not participate).
    case backreference(Int)

    /// Whether the node can match the empty string.
    package var isNullable: Bool {
        switch self {
        case .empty, .assertion: return true
        case .literal, .dot, .set: return false
        case .group(let body, _): return body.isNullable
        case .concat(let items): return items.allSatisfy(\.isNullable)
        case .alternation(let branches): return branches.contains(where: \.isNullable)
        case .repetition(let body, let min, _, _, _): return min == 0 || body.isNullable
        case .lookaround, .backreference: return true
        }
    }

    /// Whether the node repeats something that can match empty beyond its minimum count (`(?: *?|A)?`,
    /// `(\s*?){1,2}`). JavaScript fails such an optional iteration when it matches empty and backtracks into it
    /// for a non-empty way (`b(?: *?|A)?` on `"b A"` matches `"b "`); the Pike VM ends the loop instead (`"b"`).
    /// The backtracking matcher follows JavaScript. Tests that compare the two engines leave these out.
    package var hasOptionalNullableIteration: Bool {
        switch self {
        case .empty, .assertion, .literal, .dot, .set, .backreference: return false
        case .group(let body, _), .lookaround(let body, _, _): return body.hasOptionalNullableIteration
        case .concat(let items), .alternation(let items): return items.contains(where: \.hasOptionalNullableIteration)
        case .repetition(let body, let min, let max, _, _):
            return (max.map { $0 > min } ?? true) && body.isNullable || body.hasOptionalNullableIteration
        }
    }

    /// Whether the node holds lookaround or a backreference, which only the backtracking matcher runs.
    package var needsBacktracking: Bool {
        switch self {
        case .empty, .assertion, .literal, .dot, .set: return false
        case .lookaround, .backreference: return true
        case .group(let body, _): return body.needsBacktracking
        case .concat(let items), .alternation(let items): return items.contains(where: \.needsBacktracking)
        case .repetition(let body, _, _, _, _): return body.needsBacktracking
        }
    }

    /// The lowest and highest capture numbers inside the node, if any.
    var captureBounds: ClosedRange<Int>? {
        switch self {
        case .empty, .assertion, .literal, .dot, .set, .backreference: return nil
        case .lookaround(let body, _, _): return body.captureBounds
        case .group(let body, let capture):
            let inner = body.captureBounds
            guard let capture else { return inner }
            return capture...(inner?.upperBound ?? capture)
        case .concat(let items), .alternation(let items):
            let bounds = items.compactMap(\.captureBounds)
            guard let first = bounds.first, let last = bounds.last else { return nil }
            return first.lowerBound...last.upperBound
        case .repetition(let body, _, _, _, _): return body.captureBounds
        }
    }

    /// Whether every match must begin at the start of the input (each alternative starts with `^`).
    var isAnchoredAtStart: Bool {
        switch self {
        case .assertion(let kind): return kind == .start
        case .empty, .literal, .dot, .set, .lookaround, .backreference: return false
        case .group(let body, _): return body.isAnchoredAtStart
        case .concat(let items):
            for item in items {
                if item.isAnchoredAtStart { return true }
                guard case .assertion = item else { return false }
            }
            return false
        case .alternation(let branches): return !branches.isEmpty && branches.allSatisfy(\.isAnchoredAtStart)
        case .repetition(let body, let min, _, _, _): return min > 0 && body.isAnchoredAtStart
        }
    }

    /// The scalars every match must start with (case-sensitive), and whether they are the whole pattern.
    var literalPrefix: (scalars: [Unicode.Scalar], complete: Bool) {
        var scalars: [Unicode.Scalar] = []
        var plain = true
        let complete = appendPrefix(to: &scalars, plain: &plain)
        return (scalars, complete && plain)
    }

    /// Appends the node's required prefix; returns whether the prefix may continue after the node. `plain` is
    /// cleared when the node is more than a capture-free literal.
    private func appendPrefix(to scalars: inout [Unicode.Scalar], plain: inout Bool) -> Bool {
        switch self {
        case .empty: return true
        case .literal(let scalar):
            scalars.append(scalar)
            return true
        case .dot, .set, .alternation, .backreference:
            plain = false
            return false
        case .assertion, .lookaround:
            plain = false
            return true
        case .group(let body, let capture):
            if capture != nil { plain = false }
            return body.appendPrefix(to: &scalars, plain: &plain)
        case .concat(let items):
            for item in items where !item.appendPrefix(to: &scalars, plain: &plain) { return false }
            return true
        case .repetition(let body, let min, let max, _, _):
            plain = false
            guard min > 0 else { return false }
            let before = scalars.count
            guard body.appendPrefix(to: &scalars, plain: &plain), min == max else { return false }
            let once = Array(scalars[before...])
            for _ in 1..<min { scalars.append(contentsOf: once) }
            return true
        }
    }
}
