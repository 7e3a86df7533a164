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

    /// Whether the node can match the empty string.
    package var isNullable: Bool {
        switch self {
        case .empty, .assertion: return true
        case .literal, .dot, .set: return false
        case .group(let body, _): return body.isNullable
        case .concat(let items): return items.allSatisfy(\.isNullable)
        case .alternation(let branches): return branches.contains(where: \.isNullable)
        case .repetition(let body, let min, _, _, _): return min == 0 || body.isNullable
        }
    }

    /// The lowest and highest capture numbers inside the node, if any.
    var captureBounds: ClosedRange<Int>? {
        switch self {
        case .empty, .assertion, .literal, .dot, .set: return nil
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
        case .empty, .literal, .dot, .set: return false
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
        case .dot, .set, .alternation:
            plain = false
            return false
        case .assertion:
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
