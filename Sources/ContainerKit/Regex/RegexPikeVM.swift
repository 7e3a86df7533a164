/// Runs a ``RegexProgram`` over UTF-8 bytes in time linear in (program size × input size).
///
/// A Pike VM: all threads advance in lock step over the input, one scalar at a time. Each thread list is a
/// sparse set of instruction indices, so an instruction is entered at most once per input position; thread order
/// is priority order, which gives leftmost-first (Perl / JavaScript) results. Positions are UTF-8 byte offsets,
/// always on scalar boundaries.
struct RegexPikeVM {
    private let instructions: UnsafeBufferPointer<RegexInstruction>
    private let classes: UnsafeBufferPointer<RegexCharClass>
    private let bytes: UnsafeBufferPointer<UInt8>
    private let program: RegexProgram

    /// Runs `body` with a VM for `program` over `bytes`.
    static func run<Result>(
        _ program: RegexProgram,
        over bytes: UnsafeBufferPointer<UInt8>,
        _ body: (RegexPikeVM) -> Result
    ) -> Result {
        program.instructions.withUnsafeBufferPointer { instructions in
            program.classes.withUnsafeBufferPointer { classes in
                body(RegexPikeVM(instructions: instructions, classes: classes, bytes: bytes, program: program))
            }
        }
    }

    /// Per-search working memory, freed by ``deallocate()``.
    private struct Memory {
        var current: RegexThreadList
        var following: RegexThreadList
        var stack = RegexFrameStack()
        let scratch: UnsafeMutablePointer<Int>

        init(size: Int, slotCount: Int) {
            current = RegexThreadList(size: size, slotCount: slotCount)
            following = RegexThreadList(size: size, slotCount: slotCount)
            scratch = .allocate(capacity: Swift.max(slotCount, 1))
        }

        func deallocate() {
            current.deallocate()
            following.deallocate()
            stack.deallocate()
            scratch.deallocate()
        }
    }

    // MARK: - Boolean search

    /// Whether the program matches anywhere in the input. No capture bookkeeping; stops at the first match found.
    func isMatch() -> Bool {
        var memory = Memory(size: instructions.count, slotCount: 0)
        defer { memory.deallocate() }
        let scratch = memory.scratch
        let count = bytes.count
        let anchored = program.anchoredAtStart
        var position = 0
        while true {
            if memory.current.count == 0 {
                if anchored && position > 0 { return false }
                guard let start = anchored ? position : candidate(from: position) else { return false }
                position = start
            }
            if !anchored || position == 0 {
                if addPlain(to: &memory.current, &memory.stack, scratch, 0, at: position) { return true }
            }
            guard position < count else { return false }
            let (scalar, length) = decode(at: position)
            let folded = program.ignoreCase ? RegexCaseFolding.fold(scalar) : scalar
            memory.following.clear()
            let next = position + length
            for index in 0..<memory.current.count {
                let pc = memory.current.pcs[index]
                if consumes(instructions[Int(pc)], scalar, folded),
                    addPlain(to: &memory.following, &memory.stack, scratch, pc + 1, at: next)
                {
                    return true
                }
            }
            swap(&memory.current, &memory.following)
            position = next
        }
    }

    /// Follows empty transitions from `start`, adding the threads that wait on input; true if a match is reached.
    private func addPlain(
        to list: inout RegexThreadList,
        _ stack: inout RegexFrameStack,
        _ scratch: UnsafeMutablePointer<Int>,
        _ start: Int32,
        at position: Int
    ) -> Bool {
        stack.push(RegexFrame(pc: start))
        while let frame = stack.pop() {
            var pc = frame.pc
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
                    list.append(pc, slots: scratch)
                    break explore
                }
            }
        }
        return false
    }

    // MARK: - Search with captures

    /// The slots (two per group, -1 when unset) of the leftmost-first match, or nil. With `whole`, the match
    /// must span the entire input.
    func search(whole: Bool) -> [Int]? {
        let slotCount = program.slotCount
        var memory = Memory(size: instructions.count, slotCount: slotCount)
        defer { memory.deallocate() }
        let scratch = memory.scratch
        let count = bytes.count
        let anchored = program.anchoredAtStart || whole
        let best = UnsafeMutablePointer<Int>.allocate(capacity: slotCount)
        defer { best.deallocate() }
        var found = false
        var position = 0
        while true {
            if !found {
                if memory.current.count == 0 {
                    if anchored && position > 0 { break }
                    guard let start = anchored ? position : candidate(from: position) else { break }
                    position = start
                }
                if !anchored || position == 0 {
                    scratch.update(repeating: -1, count: slotCount)
                    addThread(to: &memory.current, &memory.stack, scratch, 0, at: position)
                }
            }
            if found && memory.current.count == 0 { break }
            let hasScalar = position < count
            let (scalar, length) = hasScalar ? decode(at: position) : (0, 0)
            let folded = program.ignoreCase ? RegexCaseFolding.fold(scalar) : scalar
            let next = position + length
            memory.following.clear()
            for index in 0..<memory.current.count {
                let pc = memory.current.pcs[index]
                let instruction = instructions[Int(pc)]
                if instruction.op == .match {
                    if whole && position != count { continue }
                    best.update(from: memory.current.slots(at: index), count: slotCount)
                    found = true
                    // Lower-priority threads are cut off; higher-priority ones continue in `following`.
                    break
                }
                if hasScalar && consumes(instruction, scalar, folded) {
                    scratch.update(from: memory.current.slots(at: index), count: slotCount)
                    addThread(to: &memory.following, &memory.stack, scratch, pc + 1, at: next)
                }
            }
            if !hasScalar { break }
            swap(&memory.current, &memory.following)
            position = next
        }
        return found ? Array(UnsafeBufferPointer(start: best, count: slotCount)) : nil
    }

    /// Follows empty transitions from `start` with the capture slots in `scratch`, adding waiting threads.
    private func addThread(
        to list: inout RegexThreadList,
        _ stack: inout RegexFrameStack,
        _ scratch: UnsafeMutablePointer<Int>,
        _ start: Int32,
        at position: Int
    ) {
        stack.push(RegexFrame(pc: start))
        while let frame = stack.pop() {
            if frame.pc < 0 {
                scratch[Int(frame.slot)] = frame.value
                continue
            }
            var pc = frame.pc
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
        }
    }

    // MARK: - Input

    /// Whether the consuming instruction accepts the scalar (`folded` is its case fold when ignoring case).
    @inline(__always)
    private func consumes(_ instruction: RegexInstruction, _ scalar: UInt32, _ folded: UInt32) -> Bool {
        switch instruction.op {
        case .scalar: return UInt32(bitPattern: instruction.x) == folded
        case .dot: return scalar != 0x0A
        case .set: return classes[Int(instruction.x)].matches(scalar)
        default: return false
        }
    }

    /// Whether the assertion with raw value `kind` holds at byte offset `position`.
    private func holds(_ kind: Int32, at position: Int) -> Bool {
        switch RegexAssertion(rawValue: UInt8(kind)) {
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
            let value = ((lead & 0x0F) << 12) | ((UInt32(bytes[position + 1]) & 0x3F) << 6)
                | (UInt32(bytes[position + 2]) & 0x3F)
            return (value, 3)
        }
        let value = ((lead & 0x07) << 18) | ((UInt32(bytes[position + 1]) & 0x3F) << 12)
            | ((UInt32(bytes[position + 2]) & 0x3F) << 6) | (UInt32(bytes[position + 3]) & 0x3F)
        return (value, 4)
    }

    /// The first offset at or after `position` where a match could start, using the literal prefix or the
    /// first-byte table; nil if there is none.
    private func candidate(from position: Int) -> Int? {
        let count = bytes.count
        if !program.prefix.isEmpty {
            return RegexByteSearch.firstIndex(of: program.prefix, in: bytes, from: position)
        }
        guard let table = program.firstBytes else { return position }
        return table.withUnsafeBufferPointer { table in
            var index = position
            while index < count {
                if table[Int(bytes[index])] { return index }
                index += 1
            }
            return nil
        }
    }
}
