/// Compiles a ``RegexNode`` tree into a ``RegexProgram`` for the Pike VM.
struct RegexCompiler {
    /// The largest accepted program, in instructions.
    static let maxInstructions = 50_000

    private var program = RegexProgram()
    private var classIndex: [RegexCharClass: Int32] = [:]
    /// Scalar offset of the outermost repetition being expanded, for the "too complex" error.
    private var outerRepetitionStart: Int?

    /// Compiles `root`, whose capturing groups are numbered `1...captureCount`.
    static func compile(
        _ root: RegexNode,
        captureCount: Int,
        ignoreCase: Bool
    ) throws(RegexPatternError) -> RegexProgram {
        var compiler = RegexCompiler()
        compiler.program.ignoreCase = ignoreCase
        compiler.program.slotCount = 2 * (captureCount + 1)
        try compiler.emit(RegexInstruction(.save, 0))
        try compiler.compile(root)
        try compiler.emit(RegexInstruction(.save, 1))
        try compiler.emit(RegexInstruction(.match))

        var program = compiler.program
        program.anchoredAtStart = root.isAnchoredAtStart
        if !ignoreCase {
            let (scalars, complete) = root.literalPrefix
            var bytes: [UInt8] = []
            for scalar in scalars.prefix(256) { bytes.append(contentsOf: Array(String(scalar).utf8)) }
            program.prefix = bytes
            program.isPureLiteral = complete && scalars.count <= 256
        }
        var table = [Bool](repeating: false, count: 256)
        if !compiler.addFirstBytes(of: root, to: &table), table[0..<128].contains(false) {
            program.firstBytes = table
        }
        program.classBits = program.classes.flatMap { [$0.asciiBits.low, $0.asciiBits.high] }
        return program
    }

    // MARK: - Emission

    @discardableResult
    private mutating func emit(_ instruction: RegexInstruction) throws(RegexPatternError) -> Int {
        guard program.instructions.count < Self.maxInstructions else {
            throw RegexPatternError(message: "pattern is too complex", offset: outerRepetitionStart ?? 0)
        }
        program.instructions.append(instruction)
        return program.instructions.count - 1
    }

    private var next: Int32 { Int32(program.instructions.count) }

    private mutating func patchSplit(_ index: Int, preferred: Int32, other: Int32) {
        program.instructions[index].x = preferred
        program.instructions[index].y = other
    }

    private mutating func compile(_ node: RegexNode) throws(RegexPatternError) {
        switch node {
        case .empty:
            break
        case .literal(let scalar):
            let value = program.ignoreCase ? RegexCaseFolding.fold(scalar.value) : scalar.value
            try emit(RegexInstruction(.scalar, Int32(bitPattern: value)))
        case .dot:
            try emit(RegexInstruction(.dot))
        case .set(let set):
            try emit(RegexInstruction(.set, classNumber(set)))
        case .assertion(let kind):
            try emit(RegexInstruction(.assert, Int32(kind.rawValue)))
        case .group(let body, let capture):
            guard let capture else { return try compile(body) }
            try emit(RegexInstruction(.save, Int32(2 * capture)))
            try compile(body)
            try emit(RegexInstruction(.save, Int32(2 * capture + 1)))
        case .concat(let items):
            for item in items { try compile(item) }
        case .alternation(let branches):
            var jumps: [Int] = []
            for (index, branch) in branches.enumerated() {
                if index == branches.count - 1 {
                    try compile(branch)
                } else {
                    let split = try emit(RegexInstruction(.split))
                    try compile(branch)
                    jumps.append(try emit(RegexInstruction(.jump)))
                    patchSplit(split, preferred: Int32(split + 1), other: next)
                }
            }
            for jump in jumps { program.instructions[jump].x = next }
        case .lookaround, .backreference:
            // ``RegexPattern`` runs such patterns on ``RegexBacktracker``; this engine never sees them.
            throw RegexPatternError(message: "lookaround or backreference", offset: 0, isUnsupported: true)
        case .repetition(let body, let min, let max, let greedy, let span):
            let outermost = outerRepetitionStart == nil
            if outermost { outerRepetitionStart = span.lowerBound }
            defer { if outermost { outerRepetitionStart = nil } }
            try compileRepetition(body, min: min, max: max, greedy: greedy)
        }
    }

    private mutating func compileRepetition(
        _ body: RegexNode,
        min: Int,
        max: Int?,
        greedy: Bool
    ) throws(RegexPatternError) {
        let captures = body.captureBounds
        func copy(_ compiler: inout RegexCompiler) throws(RegexPatternError) {
            if let captures {
                let low = Int32(2 * captures.lowerBound)
                let high = Int32(2 * captures.upperBound + 2)
                try compiler.emit(RegexInstruction(.reset, low, high))
            }
            try compiler.compile(body)
        }
        guard let max else {
            if body.isNullable && min > 0 {
                // JavaScript lets the mandatory iterations match empty but stops the loop at an empty optional
                // one. The loop below ends an empty iteration (its head is already entered at this position),
                // so the mandatory iterations must be separate copies.
                for _ in 0..<min { try copy(&self) }
                try compileRepetition(body, min: 0, max: nil, greedy: greedy)
            } else if min == 0 {
                // L: split(body, out); body; jump L
                let loop = try emit(RegexInstruction(.split))
                try copy(&self)
                try emit(RegexInstruction(.jump, Int32(loop)))
                greedy
                    ? patchSplit(loop, preferred: Int32(loop + 1), other: next)
                    : patchSplit(loop, preferred: next, other: Int32(loop + 1))
            } else {
                for _ in 1..<min { try copy(&self) }
                // L: body; split(L, out)
                let loop = next
                try copy(&self)
                let split = try emit(RegexInstruction(.split))
                greedy
                    ? patchSplit(split, preferred: loop, other: next)
                    : patchSplit(split, preferred: next, other: loop)
            }
            return
        }
        for _ in 0..<min { try copy(&self) }
        var splits: [Int] = []
        for _ in min..<max {
            splits.append(try emit(RegexInstruction(.split)))
            try copy(&self)
        }
        for split in splits {
            greedy
                ? patchSplit(split, preferred: Int32(split + 1), other: next)
                : patchSplit(split, preferred: next, other: Int32(split + 1))
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

    // MARK: - First bytes

    /// Marks the bytes a non-empty match of `node` can start with; returns whether `node` can match empty
    /// (in which case whatever follows it can also start the match).
    private func addFirstBytes(of node: RegexNode, to table: inout [Bool]) -> Bool {
        switch node {
        case .empty, .assertion, .lookaround:
            return true
        case .backreference:
            for byte in 0..<256 { table[byte] = true }
            return true
        case .literal(let scalar):
            let value = scalar.value
            table[Int(RegexCharClass.leadByte(value))] = true
            if program.ignoreCase {
                let lower = RegexCaseFolding.fold(value)
                let upper = RegexCaseFolding.upper(value)
                table[Int(RegexCharClass.leadByte(lower))] = true
                table[Int(RegexCharClass.leadByte(upper))] = true
                if lower != value || upper != value || value >= 0x80 { markNonASCII(&table) }
            }
            return false
        case .dot:
            for byte in 0..<128 where byte != 0x0A { table[byte] = true }
            markNonASCII(&table)
            return false
        case .set(let set):
            var prepared = set
            prepared.prepare(ignoreCase: program.ignoreCase)
            for byte in 0..<128 where prepared.matches(UInt32(byte)) { table[byte] = true }
            for byte in prepared.nonASCIILeadBytes { table[Int(byte)] = true }
            return false
        case .group(let body, _):
            return addFirstBytes(of: body, to: &table)
        case .concat(let items):
            for item in items where !addFirstBytes(of: item, to: &table) { return false }
            return true
        case .alternation(let branches):
            var nullable = false
            for branch in branches where addFirstBytes(of: branch, to: &table) { nullable = true }
            return nullable
        case .repetition(let body, let min, _, _, _):
            return addFirstBytes(of: body, to: &table) || min == 0
        }
    }

    private func markNonASCII(_ table: inout [Bool]) {
        for byte in 0xC2...0xF4 { table[byte] = true }
    }
}
