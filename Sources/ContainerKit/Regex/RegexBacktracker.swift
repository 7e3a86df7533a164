/// Runs a ``RegexBacktrackProgram`` over UTF-8 bytes with JavaScript's backtracking semantics, within a step
/// budget.
///
/// The patterns it runs are the ones the linear-time Pike VM cannot (lookaround, backreferences), so their cost
/// can grow exponentially with the input (`(?=(a+)+b)` on a run of `a`s). Every instruction executed is a step;
/// when the steps exceed the budget, or the backtrack stack exceeds ``maximumStackEntries``, the match gives up
/// (``RegexPikeVM/Outcome/exhausted``) — it never hangs. The stack is explicit: a match over a long input never
/// recurses per scalar; only lookaround nests a run, as deep as the pattern nests lookaround.
struct RegexBacktracker {
    /// The most backtrack stack entries before a match gives up (16 bytes each: 16 MiB).
    static let maximumStackEntries = 1 << 20

    private struct Entry {
        enum Kind: UInt8 { case branch, slot, register }
        var kind: Kind
        var index: Int32
        var value: Int
    }

    private struct Exhausted: Error {}

    private let program: RegexBacktrackProgram
    private let bytes: UnsafeBufferPointer<UInt8>
    private let stepBudget: Int
    private(set) var steps = 0
    private var slots: [Int]
    private var registers: [Int]
    private var stack: [Entry] = []
    /// Whether the top-level match must end at the end of the input (``RegexPattern/wholeMatch(in:)``).
    private var mustEndAtEnd = false

    private init(_ program: RegexBacktrackProgram, _ bytes: UnsafeBufferPointer<UInt8>, stepBudget: Int) {
        self.program = program
        self.bytes = bytes
        self.stepBudget = stepBudget
        slots = Array(repeating: -1, count: program.slotCount)
        registers = Array(repeating: -1, count: program.registerCount)
    }

    /// The slots of the leftmost match (of the whole input when `whole`), nil if there is none; and the steps
    /// it took.
    static func search(
        _ program: RegexBacktrackProgram,
        over bytes: UnsafeBufferPointer<UInt8>,
        whole: Bool,
        from first: Int = 0,
        stepBudget: Int
    ) -> (outcome: RegexPikeVM.Outcome<[Int]?>, steps: Int) {
        var machine = RegexBacktracker(program, bytes, stepBudget: stepBudget)
        machine.mustEndAtEnd = whole
        // An anchored pattern can only start at 0.
        if first > 0 && (whole || program.anchoredAtStart) { return (.answer(nil), 0) }
        do {
            var start = first
            while start <= bytes.count {
                if try machine.run(from: 0, at: start, topLevel: true) != nil {
                    return (.answer(machine.slots), machine.steps)
                }
                if whole || program.anchoredAtStart { break }
                start += start < bytes.count ? machine.scalarLength(at: start) : 1
            }
            return (.answer(nil), machine.steps)
        } catch {
            return (.exhausted, machine.steps)
        }
    }

    /// Runs from instruction `pc` at byte offset `position` until a `match` (returning the position there) or
    /// until every alternative pushed since the call has failed (nil, with the stack, slots and registers as
    /// they were at the call).
    private mutating func run(from pc: Int, at position: Int, topLevel: Bool) throws(Exhausted) -> Int? {
        let base = stack.count
        var pc = pc
        var position = position
        while true {
            steps &+= 1
            if steps > stepBudget { throw Exhausted() }
            let instruction = program.instructions[pc]
            var ok = true
            switch instruction.op {
            case .scalar, .dot, .set:
                if let (scalar, length) = scalar(at: position, backward: instruction.backward),
                    accepts(instruction, scalar)
                {
                    position += instruction.backward ? -length : length
                    pc += 1
                } else {
                    ok = false
                }
            case .split:
                try push(.branch, instruction.y, position)
                pc = Int(instruction.x)
            case .jump:
                pc = Int(instruction.x)
            case .save:
                let slot = Int(instruction.x)
                try push(.slot, instruction.x, slots[slot])
                slots[slot] = position
                pc += 1
            case .reset:
                for slot in Int(instruction.x)..<Int(instruction.y) where slots[slot] != -1 {
                    try push(.slot, Int32(slot), slots[slot])
                    slots[slot] = -1
                }
                pc += 1
            case .assert:
                ok = holds(instruction.x, at: position)
                pc += 1
            case .mark:
                let register = Int(instruction.x)
                try push(.register, instruction.x, registers[register])
                registers[register] = position
                pc += 1
            case .progress:
                ok = registers[Int(instruction.x)] != position
                pc += 1
            case .backreference:
                if let end = backreference(Int(instruction.x), at: position, backward: instruction.backward) {
                    position = end
                    pc += 1
                } else {
                    ok = false
                }
            case .lookaround:
                let negated = instruction.y != 0
                let height = stack.count
                let before = slots
                if try run(from: pc + 1, at: position, topLevel: false) != nil {
                    // Atomic: the body's alternatives are dropped. A positive lookaround keeps its captures.
                    let after = slots
                    unwind(to: height)
                    if negated {
                        ok = false
                    } else {
                        for slot in after.indices where after[slot] != before[slot] {
                            try push(.slot, Int32(slot), slots[slot])
                            slots[slot] = after[slot]
                        }
                        pc = Int(instruction.x)
                    }
                } else {
                    ok = negated
                    pc = Int(instruction.x)
                }
            case .match:
                if !topLevel || !mustEndAtEnd || position == bytes.count { return position }
                ok = false
            }
            if ok { continue }
            // Back to the newest alternative pushed since this run began, undoing what was recorded after it.
            var resumed = false
            while stack.count > base {
                let entry = stack.removeLast()
                switch entry.kind {
                case .branch:
                    pc = Int(entry.index)
                    position = entry.value
                    resumed = true
                case .slot: slots[Int(entry.index)] = entry.value
                case .register: registers[Int(entry.index)] = entry.value
                }
                if resumed { break }
            }
            if !resumed { return nil }
        }
    }

    private mutating func push(_ kind: Entry.Kind, _ index: Int32, _ value: Int) throws(Exhausted) {
        if stack.count >= Self.maximumStackEntries { throw Exhausted() }
        stack.append(Entry(kind: kind, index: index, value: value))
    }

    /// Pops every entry above `height`, restoring slots and registers.
    private mutating func unwind(to height: Int) {
        while stack.count > height {
            let entry = stack.removeLast()
            switch entry.kind {
            case .branch: break
            case .slot: slots[Int(entry.index)] = entry.value
            case .register: registers[Int(entry.index)] = entry.value
            }
        }
    }

    private func accepts(_ instruction: RegexBacktrackProgram.Instruction, _ scalar: UInt32) -> Bool {
        switch instruction.op {
        case .scalar:
            let folded = program.ignoreCase ? RegexCaseFolding.fold(scalar) : scalar
            return UInt32(bitPattern: instruction.x) == folded
        case .dot: return scalar != 0x0A
        default: return program.classes[Int(instruction.x)].matches(scalar)
        }
    }

    /// The end (or, backward, the start) of the text of capture `group` matched again at `position`; an unset
    /// capture matches empty.
    private func backreference(_ group: Int, at position: Int, backward: Bool) -> Int? {
        let start = slots[2 * group]
        let end = slots[2 * group + 1]
        guard start >= 0, end >= start else { return position }
        let length = end - start
        if !program.ignoreCase {
            if backward {
                guard position - length >= 0 else { return nil }
                for i in 0..<length where bytes[position - length + i] != bytes[start + i] { return nil }
                return position - length
            }
            guard position + length <= bytes.count else { return nil }
            for i in 0..<length where bytes[position + i] != bytes[start + i] { return nil }
            return position + length
        }
        // Scalar by scalar, by case fold (the folded forms may differ in length).
        var captured = backward ? end : start
        var here = position
        while backward ? captured > start : captured < end {
            guard let (expected, expectedLength) = scalar(at: captured, backward: backward),
                let (found, foundLength) = scalar(at: here, backward: backward),
                RegexCaseFolding.fold(expected) == RegexCaseFolding.fold(found)
            else { return nil }
            captured += backward ? -expectedLength : expectedLength
            here += backward ? -foundLength : foundLength
        }
        return here
    }

    /// The scalar after `position` (before it when `backward`) and its length in bytes; nil at the edge.
    @inline(__always)
    private func scalar(at position: Int, backward: Bool) -> (UInt32, Int)? {
        if backward {
            guard position > 0 else { return nil }
            var start = position - 1
            while start > 0, bytes[start] & 0xC0 == 0x80 { start -= 1 }
            return (decode(at: start), position - start)
        }
        guard position < bytes.count else { return nil }
        return (decode(at: position), scalarLength(at: position))
    }

    private func scalarLength(at position: Int) -> Int {
        let lead = bytes[position]
        return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4
    }

    private func decode(at position: Int) -> UInt32 {
        let lead = UInt32(bytes[position])
        if lead < 0x80 { return lead }
        if lead < 0xE0 { return ((lead & 0x1F) << 6) | (UInt32(bytes[position + 1]) & 0x3F) }
        if lead < 0xF0 {
            return ((lead & 0x0F) << 12) | ((UInt32(bytes[position + 1]) & 0x3F) << 6)
                | (UInt32(bytes[position + 2]) & 0x3F)
        }
        return ((lead & 0x07) << 18) | ((UInt32(bytes[position + 1]) & 0x3F) << 12)
            | ((UInt32(bytes[position + 2]) & 0x3F) << 6) | (UInt32(bytes[position + 3]) & 0x3F)
    }

    private func holds(_ kind: Int32, at position: Int) -> Bool {
        switch RegexAssertion(rawValue: UInt8(truncatingIfNeeded: kind)) {
        case .start: return position == 0
        case .end: return position == bytes.count
        case .wordBoundary: return isWord(before: position) != isWord(at: position)
        case .notWordBoundary: return isWord(before: position) == isWord(at: position)
        case nil: return false
        }
    }

    private func isWord(at position: Int) -> Bool { position < bytes.count && Self.isWord(bytes[position]) }
    private func isWord(before position: Int) -> Bool { position > 0 && Self.isWord(bytes[position - 1]) }

    private static func isWord(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x5F, 0x61...0x7A: return true
        default: return false
        }
    }
}
