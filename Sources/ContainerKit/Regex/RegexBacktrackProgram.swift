/// A pattern compiled for ``RegexBacktracker``: the patterns the Pike VM cannot run (lookaround,
/// backreferences), as JavaScript's backtracking semantics define them (ECMA-262 §22.2.2, Annex B).
///
/// Instructions run with an explicit backtrack stack, never recursion over the input: a `split` pushes its
/// alternative, a `save`, `reset` or `mark` pushes the value it overwrites. Lookbehind bodies are compiled to
/// run right to left (`backward`), as JavaScript matches them.
struct RegexBacktrackProgram: Sendable {
    struct Instruction: Sendable {
        enum Op: UInt8, Sendable {
            /// Consumes the scalar `x` (case-folded when the program ignores case).
            case scalar
            /// Consumes any scalar except `\n`.
            case dot
            /// Consumes a scalar of class `x`.
            case set
            /// Continues at `x`; on failure, at `y` (same position).
            case split
            /// Continues at `x`.
            case jump
            /// Records the position in slot `x`.
            case save
            /// Clears slots `x..<y` (the captures of a repeated group, at each iteration).
            case reset
            /// Continues only if the assertion with raw value `x` holds.
            case assert
            /// Runs the lookaround body that starts at the next instruction; continues at `x` if it matched
            /// (`y` = 0) or if it did not (`y` = 1).
            case lookaround
            /// Consumes the text capture `x` last matched.
            case backreference
            /// Records the position in register `x` (the start of a loop iteration).
            case mark
            /// Fails if the position equals register `x` (an optional iteration may not match empty).
            case progress
            /// The end of the pattern or of a lookaround body: a match.
            case match
        }

        var op: Op
        /// Whether the instruction consumes right to left (inside a lookbehind).
        var backward: Bool
        var x: Int32
        var y: Int32
    }

    var instructions: [Instruction] = []
    var classes: [RegexCharClass] = []
    /// Two slots (start, end) per group, group 0 included.
    var slotCount = 2
    /// Registers for `mark` / `progress`.
    var registerCount = 0
    var ignoreCase = false
    /// Whether every match starts at the beginning of the input.
    var anchoredAtStart = false

    /// Compiles `root`, whose capturing groups are numbered `1...captureCount`.
    static func compile(
        _ root: RegexNode,
        captureCount: Int,
        ignoreCase: Bool
    ) throws(RegexPatternError) -> RegexBacktrackProgram {
        var compiler = Compiler()
        compiler.program.ignoreCase = ignoreCase
        compiler.program.slotCount = 2 * (captureCount + 1)
        try compiler.emit(.save, x: 0)
        try compiler.compile(root, backward: false)
        try compiler.emit(.save, x: 1)
        try compiler.emit(.match)
        compiler.program.anchoredAtStart = root.isAnchoredAtStart
        return compiler.program
    }

    private struct Compiler {
        var program = RegexBacktrackProgram()
        private var classIndex: [RegexCharClass: Int32] = [:]
        private var backward = false

        var next: Int32 { Int32(program.instructions.count) }

        @discardableResult
        mutating func emit(_ op: Instruction.Op, x: Int32 = 0, y: Int32 = 0) throws(RegexPatternError) -> Int {
            guard program.instructions.count < RegexCompiler.maxInstructions else {
                throw RegexPatternError(message: "pattern is too complex", offset: 0, isUnsupported: true)
            }
            program.instructions.append(Instruction(op: op, backward: backward, x: x, y: y))
            return program.instructions.count - 1
        }

        mutating func compile(_ node: RegexNode, backward: Bool) throws(RegexPatternError) {
            let outer = self.backward
            self.backward = backward
            defer { self.backward = outer }
            switch node {
            case .empty:
                break
            case .literal(let scalar):
                let value = program.ignoreCase ? RegexCaseFolding.fold(scalar.value) : scalar.value
                try emit(.scalar, x: Int32(bitPattern: value))
            case .dot:
                try emit(.dot)
            case .set(let set):
                try emit(.set, x: classNumber(set))
            case .assertion(let kind):
                try emit(.assert, x: Int32(kind.rawValue))
            case .group(let body, let capture):
                guard let capture else { return try compile(body, backward: backward) }
                // Right to left, the end is reached first.
                try emit(.save, x: Int32(backward ? 2 * capture + 1 : 2 * capture))
                try compile(body, backward: backward)
                try emit(.save, x: Int32(backward ? 2 * capture : 2 * capture + 1))
            case .concat(let items):
                for item in backward ? items.reversed() : items { try compile(item, backward: backward) }
            case .alternation(let branches):
                var jumps: [Int] = []
                for (index, branch) in branches.enumerated() {
                    if index == branches.count - 1 {
                        try compile(branch, backward: backward)
                    } else {
                        let split = try emit(.split)
                        try compile(branch, backward: backward)
                        jumps.append(try emit(.jump))
                        patch(split, preferred: Int32(split + 1), other: next)
                    }
                }
                for jump in jumps { program.instructions[jump].x = next }
            case .repetition(let body, let min, let max, let greedy, _):
                try compileRepetition(body, min: min, max: max, greedy: greedy)
            case .lookaround(let body, let behind, let negated):
                let start = try emit(.lookaround, y: negated ? 1 : 0)
                try compile(body, backward: behind)
                try emit(.match)
                program.instructions[start].x = next
            case .backreference(let group):
                try emit(.backreference, x: Int32(group))
            }
        }

        private mutating func patch(_ index: Int, preferred: Int32, other: Int32) {
            program.instructions[index].x = preferred
            program.instructions[index].y = other
        }

        /// One iteration: the body's captures cleared (JavaScript's RepeatMatcher), then the body.
        private mutating func iteration(_ body: RegexNode) throws(RegexPatternError) {
            if let captures = body.captureBounds {
                try emit(.reset, x: Int32(2 * captures.lowerBound), y: Int32(2 * captures.upperBound + 2))
            }
            try compile(body, backward: backward)
        }

        /// An optional iteration, which fails when it matches empty (RepeatMatcher: "if min = 0 and y's
        /// endIndex = x's endIndex, return failure").
        private mutating func optionalIteration(_ body: RegexNode) throws(RegexPatternError) {
            guard body.isNullable else { return try iteration(body) }
            let register = Int32(program.registerCount)
            program.registerCount += 1
            try emit(.mark, x: register)
            try iteration(body)
            try emit(.progress, x: register)
        }

        private mutating func compileRepetition(
            _ body: RegexNode,
            min: Int,
            max: Int?,
            greedy: Bool
        ) throws(RegexPatternError) {
            for _ in 0..<min { try iteration(body) }
            guard let max else {
                // L: split(body, out); body; jump L
                let loop = try emit(.split)
                try optionalIteration(body)
                try emit(.jump, x: Int32(loop))
                greedy
                    ? patch(loop, preferred: Int32(loop + 1), other: next)
                    : patch(loop, preferred: next, other: Int32(loop + 1))
                return
            }
            var splits: [Int] = []
            for _ in min..<max {
                splits.append(try emit(.split))
                try optionalIteration(body)
            }
            for split in splits {
                greedy
                    ? patch(split, preferred: Int32(split + 1), other: next)
                    : patch(split, preferred: next, other: Int32(split + 1))
            }
        }

        private mutating func classNumber(_ set: RegexCharClass) -> Int32 {
            if let existing = classIndex[set] { return existing }
            var prepared = set
            prepared.prepare(ignoreCase: program.ignoreCase)
            program.classes.append(prepared)
            let number = Int32(program.classes.count - 1)
            classIndex[set] = number
            return number
        }
    }
}
