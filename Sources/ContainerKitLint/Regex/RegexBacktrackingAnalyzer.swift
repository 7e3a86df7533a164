import ContainerKit

/// Finds patterns that take exponential time in backtracking engines (catastrophic backtracking).
///
/// The pattern becomes a position automaton (one state per scalar-consuming atom) whose transitions remember
/// which construct (a concatenation or a quantifier's loop-back) created them, so `(a+)+` keeps its two ways
/// from `a` to `a`. A backtracking engine explores every path; it takes exponential time when some state has two
/// different cycles reading the same text (exponential ambiguity). That is found, for each unbounded quantifier,
/// as a strongly connected component of the automaton's self-product that holds a state pair `(q, q)` and either
/// a pair `(p, p′)` with `p ≠ p′` or two different transitions between the same states.
///
/// Counted quantifiers are approximated: `{n}` as two copies, `{n,m}` with `m > 1` as `+` or `*`. Very large
/// patterns fall back to a syntactic check for nested unbounded quantifiers.
struct RegexBacktrackingAnalyzer {
    static let maxPositions = 200
    static let maxTransitions = 40_000
    static let maxProductEdges = 1_000_000

    private struct Transition {
        var target: Int
        var construct: Int
    }

    private struct Fragment {
        var first: [Int] = []
        var last: [Int] = []
        var nullable = true
    }

    private struct Loop {
        var span: Range<Int>
        var positions: Range<Int>
        var constructs: ClosedRange<Int>
        var containsLoop: Bool
        var containsAlternation: Bool
    }

    private struct LimitExceeded: Error {}

    private let scalars: [Unicode.Scalar]
    private var sets: [[ClosedRange<UInt32>]] = []
    private var transitions: [[Transition]] = []
    private var transitionCount = 0
    private var loops: [Loop] = []
    private var constructCount = 0
    private var alternationCount = 0

    /// A short description of the first risky construct in `source`, or nil if there is none (or the pattern
    /// does not parse).
    static func risk(in source: String) -> String? {
        guard let parser = try? RegexParser(source) else { return nil }
        var analyzer = RegexBacktrackingAnalyzer(scalars: Array(source.unicodeScalars))
        do {
            _ = try analyzer.build(parser.root)
        } catch {
            return analyzer.syntacticRisk(in: parser.root) ?? analyzer.countedNullableRisk(in: parser.root)
        }
        return analyzer.ambiguityRisk() ?? analyzer.countedNullableRisk(in: parser.root)
    }

    private init(scalars: [Unicode.Scalar]) {
        self.scalars = scalars
    }

    // MARK: - Automaton

    private mutating func build(_ node: RegexNode) throws(LimitExceeded) -> Fragment {
        switch node {
        case .empty, .assertion, .backreference:
            return Fragment()
        case .lookaround(let body, _, _):
            // Zero-width: its body is an automaton of its own, whose loops are checked as any other.
            _ = try build(body)
            return Fragment()
        case .literal(let scalar):
            return try position([scalar.value...scalar.value])
        case .dot:
            return try position([0...0x09, 0x0B...RegexCharClass.maxScalar])
        case .set(let set):
            return try position(set.negated ? set.complementRanges : set.ranges)
        case .group(let body, _):
            return try build(body)
        case .concat(let items):
            var result = Fragment()
            for item in items { result = try concatenate(result, try build(item)) }
            return result
        case .alternation(let branches):
            alternationCount += 1
            var result = Fragment(nullable: false)
            for branch in branches {
                let fragment = try build(branch)
                result.first += fragment.first
                result.last += fragment.last
                result.nullable = result.nullable || fragment.nullable
            }
            return result
        case .repetition(let body, let min, let max, _, let span):
            if max == 0 { return Fragment() }
            if max == 1 {
                var fragment = try build(body)
                fragment.nullable = fragment.nullable || min == 0
                return fragment
            }
            if min == max { return try concatenate(try build(body), try build(body)) }
            let positionStart = sets.count
            let constructStart = constructCount
            let loopCount = loops.count
            let alternations = alternationCount
            var fragment = try build(body)
            let loopBack = newConstruct()
            try connect(fragment.last, to: fragment.first, by: loopBack)
            loops.append(
                Loop(
                    span: span,
                    positions: positionStart..<sets.count,
                    constructs: constructStart...loopBack,
                    containsLoop: loops.count > loopCount,
                    containsAlternation: alternationCount > alternations
                )
            )
            fragment.nullable = fragment.nullable || min == 0
            return fragment
        }
    }

    private mutating func position(_ ranges: [ClosedRange<UInt32>]) throws(LimitExceeded) -> Fragment {
        guard sets.count < Self.maxPositions else { throw LimitExceeded() }
        sets.append(ranges)
        transitions.append([])
        return Fragment(first: [sets.count - 1], last: [sets.count - 1], nullable: false)
    }

    private mutating func concatenate(_ left: Fragment, _ right: Fragment) throws(LimitExceeded) -> Fragment {
        try connect(left.last, to: right.first, by: newConstruct())
        return Fragment(
            first: left.first + (left.nullable ? right.first : []),
            last: right.last + (right.nullable ? left.last : []),
            nullable: left.nullable && right.nullable
        )
    }

    private mutating func newConstruct() -> Int {
        constructCount += 1
        return constructCount - 1
    }

    private mutating func connect(_ sources: [Int], to targets: [Int], by construct: Int) throws(LimitExceeded) {
        transitionCount += sources.count * targets.count
        guard transitionCount <= Self.maxTransitions else { throw LimitExceeded() }
        for source in sources {
            for target in targets { transitions[source].append(Transition(target: target, construct: construct)) }
        }
    }

    // MARK: - Ambiguity

    private func ambiguityRisk() -> String? {
        let count = sets.count
        var overlaps = [Bool](repeating: false, count: count * count)
        for first in 0..<count {
            for second in first..<count where Self.intersect(sets[first], sets[second]) {
                overlaps[first * count + second] = true
                overlaps[second * count + first] = true
            }
        }
        for loop in loops {
            switch isExponentiallyAmbiguous(loop, overlaps: overlaps, count: count) {
            case true?: return describe(loop)
            case false?: continue
            case nil:
                if loop.containsLoop { return describe(loop) }
            }
        }
        return nil
    }

    /// Whether the loop's own automaton is exponentially ambiguous; nil if it is too large to tell.
    private func isExponentiallyAmbiguous(_ loop: Loop, overlaps: [Bool], count: Int) -> Bool? {
        let base = loop.positions.lowerBound
        let size = loop.positions.count
        var outgoing: [[Transition]] = []
        var total = 0
        for state in loop.positions {
            let local = transitions[state].filter {
                loop.positions.contains($0.target) && loop.constructs.contains($0.construct)
            }.map { Transition(target: $0.target - base, construct: $0.construct) }
            outgoing.append(local)
            total += local.count
        }
        guard total * total <= Self.maxProductEdges else { return nil }

        // The self-product in compressed rows; node = first * size + second, only for overlapping pairs.
        let nodeCount = size * size
        var rowStart = [Int](repeating: 0, count: nodeCount + 1)
        var targets: [Int32] = []
        var parallel: [(from: Int, to: Int)] = []
        for node in 0..<nodeCount {
            rowStart[node] = targets.count
            let first = node / size
            let second = node % size
            guard overlaps[(first + base) * count + second + base] else { continue }
            for left in outgoing[first] {
                for right in outgoing[second] where overlaps[(left.target + base) * count + right.target + base] {
                    let target = left.target * size + right.target
                    targets.append(Int32(target))
                    if first == second && left.target == right.target && left.construct != right.construct {
                        parallel.append((node, target))
                    }
                }
            }
        }
        rowStart[nodeCount] = targets.count

        let component = Self.stronglyConnectedComponents(nodeCount: nodeCount, rowStart: rowStart, targets: targets)
        var hasDiagonal = [Bool](repeating: false, count: nodeCount)
        var hasOffDiagonal = [Bool](repeating: false, count: nodeCount)
        for node in 0..<nodeCount where overlaps[(node / size + base) * count + node % size + base] {
            if node / size == node % size {
                hasDiagonal[component[node]] = true
            } else {
                hasOffDiagonal[component[node]] = true
            }
        }
        for node in 0..<nodeCount where hasDiagonal[component[node]] && hasOffDiagonal[component[node]] {
            return true
        }
        return parallel.contains { component[$0.from] == component[$0.to] }
    }

    /// Tarjan's algorithm without recursion; returns each node's component number.
    private static func stronglyConnectedComponents(nodeCount: Int, rowStart: [Int], targets: [Int32]) -> [Int] {
        var index = [Int](repeating: -1, count: nodeCount)
        var lowLink = [Int](repeating: 0, count: nodeCount)
        var onStack = [Bool](repeating: false, count: nodeCount)
        var component = [Int](repeating: -1, count: nodeCount)
        var stack: [Int] = []
        var calls: [(node: Int, edge: Int)] = []
        var nextIndex = 0
        var componentCount = 0
        for root in 0..<nodeCount where index[root] < 0 {
            calls.append((root, rowStart[root]))
            index[root] = nextIndex
            lowLink[root] = nextIndex
            nextIndex += 1
            stack.append(root)
            onStack[root] = true
            while let (node, edge) = calls.last {
                if edge < rowStart[node + 1] {
                    calls[calls.count - 1].edge += 1
                    let target = Int(targets[edge])
                    if index[target] < 0 {
                        index[target] = nextIndex
                        lowLink[target] = nextIndex
                        nextIndex += 1
                        stack.append(target)
                        onStack[target] = true
                        calls.append((target, rowStart[target]))
                    } else if onStack[target] {
                        lowLink[node] = min(lowLink[node], index[target])
                    }
                    continue
                }
                calls.removeLast()
                if let parent = calls.last?.node { lowLink[parent] = min(lowLink[parent], lowLink[node]) }
                if lowLink[node] == index[node] {
                    while let member = stack.popLast() {
                        onStack[member] = false
                        component[member] = componentCount
                        if member == node { break }
                    }
                    componentCount += 1
                }
            }
        }
        return component
    }

    private static func intersect(_ left: [ClosedRange<UInt32>], _ right: [ClosedRange<UInt32>]) -> Bool {
        var leftIndex = 0
        var rightIndex = 0
        while leftIndex < left.count && rightIndex < right.count {
            if left[leftIndex].overlaps(right[rightIndex]) { return true }
            if left[leftIndex].upperBound < right[rightIndex].upperBound {
                leftIndex += 1
            } else {
                rightIndex += 1
            }
        }
        return false
    }

    // MARK: - Fallback and wording

    /// For patterns too large to analyse: the first unbounded quantifier whose body holds another one.
    private func syntacticRisk(in node: RegexNode) -> String? {
        switch node {
        case .empty, .assertion, .literal, .dot, .set, .backreference:
            return nil
        case .group(let body, _), .lookaround(let body, _, _):
            return syntacticRisk(in: body)
        case .concat(let items), .alternation(let items):
            return items.lazy.compactMap { syntacticRisk(in: $0) }.first
        case .repetition(let body, _, let max, _, let span):
            if max == nil || max ?? 0 > 1, Self.containsUnboundedRepetition(body) {
                return nestedQuantifier(span)
            }
            return syntacticRisk(in: body)
        }
    }

    /// A large counted repetition of something that can match empty, like `(a?){25}`: a backtracking engine
    /// tries every way of spreading the input over the iterations.
    private func countedNullableRisk(in node: RegexNode) -> String? {
        switch node {
        case .empty, .assertion, .literal, .dot, .set, .backreference:
            return nil
        case .group(let body, _), .lookaround(let body, _, _):
            return countedNullableRisk(in: body)
        case .concat(let items), .alternation(let items):
            return items.lazy.compactMap { countedNullableRisk(in: $0) }.first
        case .repetition(let body, _, let max, _, let span):
            if let max, max >= 10, body.isNullable, Self.consumes(body) {
                return "quantifier '\(snippet(span))' repeats text that can be empty, which can take exponential "
                    + "time in backtracking engines"
            }
            return countedNullableRisk(in: body)
        }
    }

    private static func consumes(_ node: RegexNode) -> Bool {
        switch node {
        case .empty, .assertion, .lookaround: return false
        case .literal, .dot, .set, .backreference: return true
        case .group(let body, _), .repetition(let body, _, _, _, _): return consumes(body)
        case .concat(let items), .alternation(let items): return items.contains(where: consumes)
        }
    }

    private static func containsUnboundedRepetition(_ node: RegexNode) -> Bool {
        switch node {
        case .empty, .assertion, .literal, .dot, .set, .backreference: return false
        case .group(let body, _), .lookaround(let body, _, _): return containsUnboundedRepetition(body)
        case .concat(let items), .alternation(let items): return items.contains(where: containsUnboundedRepetition)
        case .repetition(let body, _, let max, _, _): return max == nil || containsUnboundedRepetition(body)
        }
    }

    private func describe(_ loop: Loop) -> String {
        if loop.containsLoop { return nestedQuantifier(loop.span) }
        let text = snippet(loop.span)
        if loop.containsAlternation {
            return "quantified alternation '\(text)' has overlapping branches, which can take exponential time "
                + "in backtracking engines"
        }
        return "quantifier '\(text)' can match the same text in several ways, which can take exponential time "
            + "in backtracking engines"
    }

    private func nestedQuantifier(_ span: Range<Int>) -> String {
        "nested quantifier '\(snippet(span))' can take exponential time in backtracking engines"
    }

    private func snippet(_ span: Range<Int>) -> String {
        var view = String.UnicodeScalarView()
        let limit = 40
        view.append(contentsOf: scalars[span.lowerBound..<min(span.upperBound, span.lowerBound + limit)])
        return String(view) + (span.count > limit ? "…" : "")
    }
}
