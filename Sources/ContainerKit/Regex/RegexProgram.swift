/// One instruction of a compiled pattern.
struct RegexInstruction: Sendable {
    enum Op: UInt8, Sendable {
        /// Consumes the scalar `x` (already case-folded when the program ignores case).
        case scalar
        /// Consumes any scalar except `\n`.
        case dot
        /// Consumes a scalar of class `x`.
        case set
        /// Continues at `x` (preferred) and at `y`.
        case split
        /// Continues at `x`.
        case jump
        /// Records the current position in slot `x`.
        case save
        /// Clears slots `x..<y` (captures inside a repeated group, reset at each iteration as in JavaScript).
        case reset
        /// Continues only if the assertion with raw value `x` holds.
        case assert
        /// A match.
        case match
    }

    var op: Op
    var x: Int32
    var y: Int32

    init(_ op: Op, _ x: Int32 = 0, _ y: Int32 = 0) {
        self.op = op
        self.x = x
        self.y = y
    }
}

/// A compiled pattern for the Pike VM, with the facts the matcher uses to take shortcuts.
struct RegexProgram: Sendable {
    /// The instructions; execution starts at 0.
    var instructions: [RegexInstruction] = []
    /// The classes referenced by `.set` instructions.
    var classes: [RegexCharClass] = []
    /// Two slots (start, end) per group, group 0 included.
    var slotCount = 2
    /// Whether scalars are compared by case fold.
    var ignoreCase = false
    /// Whether every match starts at the beginning of the input.
    var anchoredAtStart = false
    /// UTF-8 bytes every match starts with (empty if none are known or case is ignored).
    var prefix: [UInt8] = []
    /// Whether the whole pattern is exactly `prefix` (so matching is a substring search).
    var isPureLiteral = false
    /// For each byte, whether a match can start with it; empty when any position may start a match.
    var firstBytes: [Bool] = []
    /// Each class's ASCII membership as two words (scalars 0–63, 64–127), parallel to `classes`.
    var classBits: [UInt64] = []
}
