/// A set of Unicode scalars: sorted, disjoint, non-adjacent closed ranges, optionally negated.
///
/// Negation is kept as a flag rather than applied to the ranges so that case-insensitive matching closes the
/// positive set under case mapping before negating (`[^a-z]` with ignore case does not match `Q`).
package struct RegexCharClass: Sendable, Hashable {
    /// Lower bounds of the ranges, ascending.
    private(set) var lows: [UInt32] = []
    /// Upper bounds of the ranges, parallel to `lows`.
    private(set) var highs: [UInt32] = []
    /// Whether the class matches the scalars outside the ranges.
    package var negated = false
    /// Membership of the 128 ASCII scalars, with case closure and negation applied (see ``prepare(ignoreCase:)``).
    private var asciiLow: UInt64 = 0
    private var asciiHigh: UInt64 = 0
    private var ignoreCase = false

    package static let maxScalar: UInt32 = 0x10FFFF

    init() {}

    init(ranges: [ClosedRange<UInt32>], negated: Bool = false) {
        for range in ranges { insert(range) }
        self.negated = negated
    }

    /// `[0-9]`.
    static let digits = RegexCharClass(ranges: [0x30...0x39])
    /// `[A-Za-z0-9_]`.
    static let word = RegexCharClass(ranges: [0x30...0x39, 0x41...0x5A, 0x5F...0x5F, 0x61...0x7A])
    /// JavaScript's `\s`: white space and line terminators.
    static let space = RegexCharClass(ranges: [
        0x09...0x0D, 0x20...0x20, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A, 0x2028...0x2029,
        0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000, 0xFEFF...0xFEFF,
    ])

    var isEmpty: Bool { lows.isEmpty }

    /// The ranges, ascending.
    package var ranges: [ClosedRange<UInt32>] { zip(lows, highs).map { $0...$1 } }

    /// Adds a range, keeping the ranges sorted and merged.
    mutating func insert(_ range: ClosedRange<UInt32>) {
        var low = range.lowerBound
        var high = range.upperBound
        // First range that could touch or follow the new one.
        var start = 0
        while start < lows.count, highs[start] &+ 1 < low { start += 1 }
        var end = start
        while end < lows.count, lows[end] <= high &+ 1 {
            low = min(low, lows[end])
            high = max(high, highs[end])
            end += 1
        }
        lows.replaceSubrange(start..<end, with: [low])
        highs.replaceSubrange(start..<end, with: [high])
    }

    /// Adds every scalar of another class (taking its negation into account).
    mutating func formUnion(_ other: RegexCharClass) {
        for range in other.negated ? other.complementRanges : other.ranges { insert(range) }
    }

    /// The class matching exactly the scalars this one does not.
    var inverted: RegexCharClass {
        var copy = self
        copy.negated.toggle()
        return copy
    }

    /// The complement of the ranges over all scalar values.
    package var complementRanges: [ClosedRange<UInt32>] {
        var result: [ClosedRange<UInt32>] = []
        var next: UInt32 = 0
        for index in lows.indices {
            if lows[index] > next { result.append(next...(lows[index] - 1)) }
            next = highs[index] &+ 1
        }
        if next <= Self.maxScalar { result.append(next...Self.maxScalar) }
        return result
    }

    /// Whether the ranges contain `value`, ignoring negation and case.
    @inline(__always)
    func rangesContain(_ value: UInt32) -> Bool {
        var low = 0
        var high = lows.count
        while low < high {
            let mid = (low + high) >> 1
            if highs[mid] < value {
                low = mid + 1
            } else {
                high = mid
            }
        }
        return low < lows.count && lows[low] <= value
    }

    /// Precomputes the ASCII bitmap for matching with or without case folding.
    mutating func prepare(ignoreCase: Bool) {
        self.ignoreCase = ignoreCase
        asciiLow = 0
        asciiHigh = 0
        for value in UInt32(0)..<128 where containsSlow(value) {
            if value < 64 {
                asciiLow |= 1 << UInt64(value)
            } else {
                asciiHigh |= 1 << UInt64(value - 64)
            }
        }
    }

    private func containsSlow(_ value: UInt32) -> Bool {
        var found = rangesContain(value)
        if !found, ignoreCase {
            let lower = RegexCaseFolding.fold(value)
            found = lower != value && rangesContain(lower)
            if !found {
                let upper = RegexCaseFolding.upper(value)
                found = upper != value && rangesContain(upper)
            }
        }
        return found != negated
    }

    /// The ASCII membership words computed by ``prepare(ignoreCase:)``.
    var asciiBits: (low: UInt64, high: UInt64) { (asciiLow, asciiHigh) }

    /// Whether the class matches the scalar `value`. Requires ``prepare(ignoreCase:)``.
    @inline(__always)
    func matches(_ value: UInt32) -> Bool {
        if value < 64 { return asciiLow & (1 << UInt64(value)) != 0 }
        if value < 128 { return asciiHigh & (1 << UInt64(value - 64)) != 0 }
        return containsSlow(value)
    }

    /// Whether the class matches `value`, a scalar at or above U+0080. Requires ``prepare(ignoreCase:)``.
    func matchesNonASCII(_ value: UInt32) -> Bool {
        containsSlow(value)
    }

    /// Whether the class can match some scalar at or above U+0080 (used to pick possible first bytes).
    var mayMatchNonASCII: Bool { negated || ignoreCase || (highs.last ?? 0) >= 0x80 }

    /// The UTF-8 lead bytes of the non-ASCII scalars the class may match.
    var nonASCIILeadBytes: [UInt8] {
        if negated || ignoreCase { return Array(0xC2...0xF4) }
        var bytes: [UInt8] = []
        for index in lows.indices where highs[index] >= 0x80 {
            let low = Self.leadByte(max(lows[index], 0x80))
            let high = Self.leadByte(highs[index])
            for byte in low...high where bytes.last.map({ $0 < byte }) ?? true { bytes.append(byte) }
        }
        return bytes
    }

    /// The first UTF-8 byte of a scalar value.
    static func leadByte(_ value: UInt32) -> UInt8 {
        switch value {
        case ..<0x80: return UInt8(value)
        case ..<0x800: return UInt8(0xC0 | (value >> 6))
        case ..<0x10000: return UInt8(0xE0 | (value >> 12))
        default: return UInt8(0xF0 | (value >> 18))
        }
    }
}
