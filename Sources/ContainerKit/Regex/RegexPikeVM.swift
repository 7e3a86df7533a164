/// Runs a ``RegexProgram`` over UTF-8 bytes in time linear in (program size × input size).
///
/// A Pike VM: all threads advance in lock step over the input, one scalar at a time. Each thread list is a
/// sparse set of instruction indices, so an instruction is entered at most once per input position; thread order
/// is priority order, which gives leftmost-first (Perl / JavaScript) results. Positions are UTF-8 byte offsets,
/// always on scalar boundaries.
struct RegexPikeVM {
    private let instructions: UnsafeBufferPointer<RegexInstruction>
    private let classes: UnsafeBufferPointer<RegexCharClass>
    private let classBits: UnsafeBufferPointer<UInt64>
    private let prefix: UnsafeBufferPointer<UInt8>
    private let firstBytes: UnsafeBufferPointer<Bool>
    private let bytes: UnsafeBufferPointer<UInt8>
    private let ignoreCase: Bool
    private let anchoredAtStart: Bool
    private let slotCount: Int
    /// The most thread steps (threads run at one input position, summed over positions) before giving up.
    private let stepBudget: Int

    /// The end of a budgeted run: the answer, or the budget ran out first.
    enum Outcome<Answer> {
        case answer(Answer)
        case exhausted
    }

    /// Runs `body` with a VM for `program` over `bytes`.
    static func run<Result>(
        _ program: RegexProgram,
        over bytes: UnsafeBufferPointer<UInt8>,
        stepBudget: Int = .max,
        _ body: (RegexPikeVM) -> Result
    ) -> Result {
        program.instructions.withUnsafeBufferPointer { instructions in
            program.classes.withUnsafeBufferPointer { classes in
                program.classBits.withUnsafeBufferPointer { classBits in
                    program.prefix.withUnsafeBufferPointer { prefix in
                        program.firstBytes.withUnsafeBufferPointer { firstBytes in
                            body(
                                RegexPikeVM(
                                    instructions: instructions,
                                    classes: classes,
                                    classBits: classBits,
                                    prefix: prefix,
                                    firstBytes: firstBytes,
                                    bytes: bytes,
                                    ignoreCase: program.ignoreCase,
                                    anchoredAtStart: program.anchoredAtStart,
                                    slotCount: program.slotCount,
                                    stepBudget: stepBudget
                                )
                            )
                        }
                    }
                }
            }
        }
    }

    /// Runs `body` with two empty thread lists and a frame stack, in stack memory when they are small.
    private func withLists<Result>(
        slotCount: Int,
        _ body: (inout RegexThreadList, inout RegexThreadList, inout RegexFrameStack) -> Result
    ) -> Result {
        let size = instructions.count
        return withUnsafeTemporaryAllocation(of: Int32.self, capacity: 6 * size) { words in
            withUnsafeTemporaryAllocation(of: RegexFrame.self, capacity: 32) { frames in
                let base = words.baseAddress!
                var current = RegexThreadList(memory: base, size: size, slotCount: slotCount)
                var following = RegexThreadList(memory: base + 3 * size, size: size, slotCount: slotCount)
                var stack = RegexFrameStack(initial: frames)
                defer {
                    current.deallocate()
                    following.deallocate()
                    stack.deallocate()
                }
                return body(&current, &following, &stack)
            }
        }
    }

    // MARK: - Boolean search

    /// Whether the program matches anywhere in the input. No capture bookkeeping; stops at the first match found.
    func isMatch() -> Outcome<Bool> {
        withLists(slotCount: 0) { current, following, stack in
            let count = bytes.count
            let anchored = anchoredAtStart
            var position = 0
            var steps = 0
            // Anchored: one start, at 0, and only if the prefix or first byte allows it.
            var nextStart = anchored ? (canStartAtZero ? 0 : Int.max) : -1
            while true {
                if position > nextStart && !anchored { nextStart = candidate(from: position) ?? Int.max }
                if current.count == 0 {
                    if nextStart == Int.max || nextStart < position { return .answer(false) }
                    position = nextStart
                }
                if position == nextStart, addPlain(to: &current, &stack, 0, at: position) { return .answer(true) }
                guard position < count else { return .answer(false) }
                let (scalar, length) = decode(at: position)
                let folded = ignoreCase ? RegexCaseFolding.fold(scalar) : scalar
                following.clear()
                let next = position + length
                for index in 0..<current.count {
                    let pc = current.pcs[index]
                    if consumes(instructions[Int(pc)], scalar, folded),
                        addPlain(to: &following, &stack, pc + 1, at: next)
                    {
                        return .answer(true)
                    }
                }
                swap(&current, &following)
                position = next
                steps &+= current.count + 1
                if steps > stepBudget { return .exhausted }
            }
        }
    }

    /// Follows empty transitions from `start`, adding the threads that wait on input; true if a match is reached.
    private func addPlain(
        to list: inout RegexThreadList,
        _ stack: inout RegexFrameStack,
        _ start: Int32,
        at position: Int
    ) -> Bool {
        var pc = start
        while true {
            explore: while list.insert(pc) {
                let instruction = instructions[Int(pc)]
                switch instruction.op {
                case .jump:
                    pc = instruction.x
                case .split:
                    stack.push(RegexFrame(pc: instruction.y))
                    pc = instruction.x
                case .save, .reset:
                    pc += 1
                case .assert:
                    guard holds(instruction.x, at: position) else { break explore }
                    pc += 1
                case .match:
                    stack.removeAll()
                    return true
                case .scalar, .dot, .set:
                    list.append(pc)
                    break explore
                }
            }
            guard let frame = stack.pop() else { return false }
            pc = frame.pc
        }
    }

    // MARK: - Search with captures

    /// The slots (two per group, -1 when unset) of the leftmost-first match, or nil. With `whole`, the match
    /// must span the entire input.
    func search(whole: Bool, from start: Int = 0) -> Outcome<[Int]?> {
        var steps = 0
        return search(whole: whole, from: start, steps: &steps)
    }

    /// ``search(whole:from:)``, adding the thread steps it took to `steps`.
    func search(whole: Bool, from start: Int, steps: inout Int) -> Outcome<[Int]?> {
        let slotCount = slotCount
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: 2 * slotCount) { slotMemory in
            let scratch = slotMemory.baseAddress!
            let best = scratch + slotCount
            let found = withLists(slotCount: slotCount) { current, following, stack in
                search(whole: whole, from: start, &current, &following, &stack, scratch: scratch, best: best, &steps)
            }
            guard let found else { return .exhausted }
            return .answer(found ? Array(UnsafeBufferPointer(start: best, count: slotCount)) : nil)
        }
    }

    private func search(
        whole: Bool,
        from start: Int,
        _ current: inout RegexThreadList,
        _ following: inout RegexThreadList,
        _ stack: inout RegexFrameStack,
        scratch: UnsafeMutablePointer<Int>,
        best: UnsafeMutablePointer<Int>,
        _ totalSteps: inout Int
    ) -> Bool? {
        let count = bytes.count
        var steps = 0
        defer { totalSteps &+= steps }
        let anchored = anchoredAtStart || whole
        var found = false
        var position = start
        // An anchored pattern starts at 0 only; a search from a later offset (a global replace's next match) looks
        // for a start from there (assertions still see the whole input: `^` is offset 0, `\b` the byte before).
        var nextStart = anchored ? (start == 0 && canStartAtZero ? 0 : Int.max) : start - 1
        while true {
            if !found {
                if position > nextStart && !anchored { nextStart = candidate(from: position) ?? Int.max }
                if current.count == 0 {
                    if nextStart == Int.max || nextStart < position { break }
                    position = nextStart
                }
                if position == nextStart {
                    scratch.update(repeating: -1, count: slotCount)
                    addThread(to: &current, &stack, scratch, 0, at: position)
                }
            }
            if found && current.count == 0 { break }
            let hasScalar = position < count
            let (scalar, length) = hasScalar ? decode(at: position) : (0, 0)
            let folded = ignoreCase ? RegexCaseFolding.fold(scalar) : scalar
            let next = position + length
            following.clear()
            for index in 0..<current.count {
                let pc = current.pcs[index]
                let instruction = instructions[Int(pc)]
                if instruction.op == .match {
                    if whole && position != count { continue }
                    best.update(from: current.slots(at: index), count: slotCount)
                    found = true
                    // Lower-priority threads are cut off; higher-priority ones continue in `following`.
                    break
                }
                if hasScalar && consumes(instruction, scalar, folded) {
                    scratch.update(from: current.slots(at: index), count: slotCount)
                    addThread(to: &following, &stack, scratch, pc + 1, at: next)
                }
            }
            if !hasScalar { break }
            swap(&current, &following)
            position = next
            steps &+= current.count + 1
            if steps > stepBudget { return nil }
        }
        return found
    }

    /// Follows empty transitions from `start` with the capture slots in `scratch`, adding waiting threads.
    private func addThread(
        to list: inout RegexThreadList,
        _ stack: inout RegexFrameStack,
        _ scratch: UnsafeMutablePointer<Int>,
        _ start: Int32,
        at position: Int
    ) {
        var pc = start
        while true {
            explore: while list.insert(pc) {
                let instruction = instructions[Int(pc)]
                switch instruction.op {
                case .jump:
                    pc = instruction.x
                case .split:
                    stack.push(RegexFrame(pc: instruction.y))
                    pc = instruction.x
                case .save:
                    let slot = Int(instruction.x)
                    stack.push(RegexFrame(restoring: instruction.x, to: scratch[slot]))
                    scratch[slot] = position
                    pc += 1
                case .reset:
                    for slot in Int(instruction.x)..<Int(instruction.y) where scratch[slot] != -1 {
                        stack.push(RegexFrame(restoring: Int32(slot), to: scratch[slot]))
                        scratch[slot] = -1
                    }
                    pc += 1
                case .assert:
                    guard holds(instruction.x, at: position) else { break explore }
                    pc += 1
                case .scalar, .dot, .set, .match:
                    list.append(pc, slots: scratch)
                    break explore
                }
            }
            // Restore frames undo the captures of the path just explored before the next alternative runs.
            var nextPC: Int32 = -1
            while let frame = stack.pop() {
                if frame.pc >= 0 {
                    nextPC = frame.pc
                    break
                }
                scratch[Int(frame.slot)] = frame.value
            }
            guard nextPC >= 0 else { return }
            pc = nextPC
        }
    }

    // MARK: - Input

    /// Whether the consuming instruction accepts the scalar (`folded` is its case fold when ignoring case).
    @inline(__always)
    private func consumes(_ instruction: RegexInstruction, _ scalar: UInt32, _ folded: UInt32) -> Bool {
        switch instruction.op {
        case .scalar:
            return UInt32(bitPattern: instruction.x) == folded
        case .dot:
            return scalar != 0x0A
        case .set:
            let index = Int(instruction.x)
            if scalar < 64 { return classBits[2 * index] & (1 << UInt64(scalar)) != 0 }
            if scalar < 128 { return classBits[2 * index + 1] & (1 << UInt64(scalar - 64)) != 0 }
            return classes[index].matchesNonASCII(scalar)
        default:
            return false
        }
    }

    /// Whether the assertion with raw value `kind` holds at byte offset `position`.
    private func holds(_ kind: Int32, at position: Int) -> Bool {
        switch RegexAssertion(rawValue: UInt8(truncatingIfNeeded: kind)) {
        case .start: return position == 0
        case .end: return position == bytes.count
        case .wordBoundary: return isWordByte(before: position) != isWordByte(at: position)
        case .notWordBoundary: return isWordByte(before: position) == isWordByte(at: position)
        case nil: return false
        }
    }

    /// Word characters are ASCII, so the byte next to a position decides (non-ASCII bytes are never word bytes).
    private func isWordByte(at position: Int) -> Bool {
        position < bytes.count && Self.isWord(bytes[position])
    }

    private func isWordByte(before position: Int) -> Bool {
        position > 0 && Self.isWord(bytes[position - 1])
    }

    private static func isWord(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x5F, 0x61...0x7A: return true
        default: return false
        }
    }

    /// Decodes the scalar starting at `position` (valid UTF-8, as held by `String`).
    @inline(__always)
    private func decode(at position: Int) -> (UInt32, Int) {
        let lead = UInt32(bytes[position])
        if lead < 0x80 { return (lead, 1) }
        if lead < 0xE0 {
            return (((lead & 0x1F) << 6) | (UInt32(bytes[position + 1]) & 0x3F), 2)
        }
        if lead < 0xF0 {
            let value =
                ((lead & 0x0F) << 12) | ((UInt32(bytes[position + 1]) & 0x3F) << 6)
                | (UInt32(bytes[position + 2]) & 0x3F)
            return (value, 3)
        }
        let value =
            ((lead & 0x07) << 18) | ((UInt32(bytes[position + 1]) & 0x3F) << 12)
            | ((UInt32(bytes[position + 2]) & 0x3F) << 6) | (UInt32(bytes[position + 3]) & 0x3F)
        return (value, 4)
    }

    /// Whether the literal prefix or the first-byte table allows a match at offset 0.
    private var canStartAtZero: Bool {
        if !prefix.isEmpty {
            return bytes.count >= prefix.count && (0..<prefix.count).allSatisfy { bytes[$0] == prefix[$0] }
        }
        return firstBytes.isEmpty || (!bytes.isEmpty && firstBytes[Int(bytes[0])])
    }

    /// The first offset at or after `position` where a match could start, using the literal prefix or the
    /// first-byte table; nil if there is none. Start threads are only added there.
    private func candidate(from position: Int) -> Int? {
        if !prefix.isEmpty {
            return RegexByteSearch.firstIndex(of: prefix, in: bytes, from: position)
        }
        if firstBytes.isEmpty { return position }
        var index = position
        let count = bytes.count
        while index < count {
            if firstBytes[Int(bytes[index])] { return index }
            index += 1
        }
        return nil
    }
}
