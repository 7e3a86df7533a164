/// Parses pattern text into a ``RegexNode`` tree (RE2 / JavaScript common syntax).
struct RegexParser {
    /// The longest accepted pattern, in scalars.
    static let maxPatternLength = 10_000
    /// The largest accepted repetition count in `{n,m}`.
    static let maxRepetition = 1_000
    /// The deepest accepted group nesting.
    static let maxNesting = 200

    /// The parsed tree.
    private(set) var root: RegexNode = .empty
    /// The number of capturing groups.
    private(set) var captureCount = 0
    /// Whether the pattern starts with the inline flag `(?i)`.
    private(set) var inlineIgnoreCase = false

    private let scalars: [Unicode.Scalar]
    private var position = 0
    private var depth = 0
    private var names: Set<String> = []

    /// Parses `source`, throwing the first syntax error found.
    init(_ source: String) throws(RegexPatternError) {
        scalars = Array(source.unicodeScalars)
        if scalars.count > Self.maxPatternLength {
            throw RegexPatternError(
                message: "pattern is too long (over \(Self.maxPatternLength) characters)",
                offset: Self.maxPatternLength
            )
        }
        if hasPrefix("(?i)") {
            inlineIgnoreCase = true
            position = 4
        }
        root = try parseAlternation()
        if position < scalars.count {
            // parseAlternation only stops early at a ')'.
            throw RegexPatternError(message: "unmatched ')'", offset: position)
        }
    }

    // MARK: - Structure

    private mutating func parseAlternation() throws(RegexPatternError) -> RegexNode {
        var branches = [try parseConcat()]
        while peek == "|" {
            position += 1
            branches.append(try parseConcat())
        }
        return branches.count == 1 ? branches[0] : .alternation(branches)
    }

    private mutating func parseConcat() throws(RegexPatternError) -> RegexNode {
        var items: [RegexNode] = []
        while let scalar = peek, scalar != "|", scalar != ")" {
            let start = position
            let atom = try parseAtom()
            items.append(try parseQuantifiers(on: atom, start: start))
        }
        switch items.count {
        case 0: return .empty
        case 1: return items[0]
        default: return .concat(items)
        }
    }

    /// Parses a quantifier after `atom` if there is one; a second quantifier is an error.
    private mutating func parseQuantifiers(on atom: RegexNode, start: Int) throws(RegexPatternError) -> RegexNode {
        guard let (min, max, length) = quantifier(at: position) else { return atom }
        let quantifierStart = position
        if case .assertion = atom {
            throw nothingToRepeat(at: quantifierStart, length: length)
        }
        let written = text(quantifierStart..<quantifierStart + length)
        if Swift.max(min, max ?? 0) > Self.maxRepetition {
            throw RegexPatternError(
                message: "repetition count over \(Self.maxRepetition) in '\(written)'",
                offset: quantifierStart
            )
        }
        if let max, max < min {
            throw RegexPatternError(message: "numbers out of order in '\(written)'", offset: quantifierStart)
        }
        position += length
        var greedy = true
        if peek == "?" {
            greedy = false
            position += 1
        }
        if let (_, _, extra) = quantifier(at: position) {
            throw nothingToRepeat(at: position, length: extra)
        }
        return .repetition(atom, min: min, max: max, greedy: greedy, span: start..<position)
    }

    private func nothingToRepeat(at offset: Int, length: Int) -> RegexPatternError {
        RegexPatternError(message: "nothing to repeat before '\(text(offset..<offset + length))'", offset: offset)
    }

    /// The quantifier starting at `offset`: bounds and length in scalars. A `{` that does not form a
    /// quantifier is not one (it is a literal, as in JavaScript).
    private func quantifier(at offset: Int) -> (min: Int, max: Int?, length: Int)? {
        guard offset < scalars.count else { return nil }
        switch scalars[offset] {
        case "*": return (0, nil, 1)
        case "+": return (1, nil, 1)
        case "?": return (0, 1, 1)
        case "{":
            var index = offset + 1
            guard let low = number(at: &index) else { return nil }
            var high: Int? = low
            if index < scalars.count, scalars[index] == "," {
                index += 1
                high = number(at: &index)
            }
            guard index < scalars.count, scalars[index] == "}" else { return nil }
            return (low, high, index + 1 - offset)
        default: return nil
        }
    }

    /// Reads decimal digits at `index` (saturating), advancing past them.
    private func number(at index: inout Int) -> Int? {
        var value: Int?
        while index < scalars.count, let digit = asciiDigit(scalars[index]) {
            value = Swift.min((value ?? 0) * 10 + digit, 1_000_000)
            index += 1
        }
        return value
    }

    private func asciiDigit(_ scalar: Unicode.Scalar) -> Int? {
        scalar.value >= 0x30 && scalar.value <= 0x39 ? Int(scalar.value - 0x30) : nil
    }

    // MARK: - Atoms

    private mutating func parseAtom() throws(RegexPatternError) -> RegexNode {
        let start = position
        let scalar = scalars[position]
        switch scalar {
        case "(":
            return try parseGroup()
        case "[":
            return .set(try parseClass())
        case ".":
            position += 1
            return .dot
        case "^":
            position += 1
            return .assertion(.start)
        case "$":
            position += 1
            return .assertion(.end)
        case "\\":
            return try parseEscape()
        case "*", "+", "?":
            throw nothingToRepeat(at: start, length: 1)
        case "{":
            if let (_, _, length) = quantifier(at: position) {
                throw nothingToRepeat(at: start, length: length)
            }
            position += 1
            return .literal(scalar)
        default:
            position += 1
            return .literal(scalar)
        }
    }

    private mutating func parseGroup() throws(RegexPatternError) -> RegexNode {
        let start = position
        depth += 1
        defer { depth -= 1 }
        if depth > Self.maxNesting {
            throw RegexPatternError(
                message: "groups nested more than \(Self.maxNesting) deep at '('",
                offset: start
            )
        }
        position += 1
        var capture: Int?
        if peek == "?" {
            try parseGroupKind(start: start, capture: &capture)
        } else {
            captureCount += 1
            capture = captureCount
        }
        let body = try parseAlternation()
        guard peek == ")" else {
            throw RegexPatternError(message: "missing ')' to close '('", offset: start)
        }
        position += 1
        return .group(body, capture: capture)
    }

    /// Handles the text after `(?`: non-capturing and named groups; refuses lookaround and other forms.
    private mutating func parseGroupKind(start: Int, capture: inout Int?) throws(RegexPatternError) {
        let kinds: [(String, String?)] = [
            ("(?:", nil),
            ("(?=", "lookahead '(?=' is not supported"),
            ("(?!", "negative lookahead '(?!' is not supported"),
            ("(?<=", "lookbehind '(?<=' is not supported"),
            ("(?<!", "negative lookbehind '(?<!' is not supported"),
            ("(?i)", "inline flag '(?i)' is only supported at the start of the pattern"),
        ]
        position = start
        for (prefix, refusal) in kinds where hasPrefix(prefix) {
            if let refusal { throw RegexPatternError(message: refusal, offset: start) }
            position += prefix.unicodeScalars.count
            return
        }
        if hasPrefix("(?<") || hasPrefix("(?P<") {
            position += hasPrefix("(?<") ? 3 : 4
            let nameStart = position
            while let scalar = peek,
                scalar == "_" || scalar.properties.isAlphabetic && scalar.isASCII
                    || (position > nameStart && asciiDigit(scalar) != nil)
            {
                position += 1
            }
            let name = text(nameStart..<position)
            guard !name.isEmpty, peek == ">" else {
                throw RegexPatternError(message: "invalid group name in '\(text(start..<position + 1))'", offset: start)
            }
            guard names.insert(name).inserted else {
                throw RegexPatternError(message: "duplicate group name '\(name)'", offset: nameStart)
            }
            position += 1
            captureCount += 1
            capture = captureCount
            return
        }
        let shown = text(start..<Swift.min(start + 3, scalars.count))
        throw RegexPatternError(message: "unknown group syntax '\(shown)'", offset: start)
    }

    // MARK: - Escapes

    /// One parsed escape: a scalar, a class, or an assertion.
    private enum Escape {
        case scalar(Unicode.Scalar)
        case set(RegexCharClass)
        case assertion(RegexAssertion)
    }

    private mutating func parseEscape() throws(RegexPatternError) -> RegexNode {
        switch try escape(inClass: false) {
        case .scalar(let scalar): return .literal(scalar)
        case .set(let set): return .set(set)
        case .assertion(let kind): return .assertion(kind)
        }
    }

    /// Parses the escape at `position` (a backslash) and advances past it.
    private mutating func escape(inClass: Bool) throws(RegexPatternError) -> Escape {
        let start = position
        position += 1
        guard let scalar = peek else {
            throw RegexPatternError(message: "pattern ends with an unfinished escape '\\'", offset: start)
        }
        position += 1
        switch scalar {
        case "d": return .set(.digits)
        case "D": return .set(RegexCharClass.digits.inverted)
        case "w": return .set(.word)
        case "W": return .set(RegexCharClass.word.inverted)
        case "s": return .set(.space)
        case "S": return .set(RegexCharClass.space.inverted)
        case "b": return inClass ? .scalar("\u{08}") : .assertion(.wordBoundary)
        case "B":
            if inClass { break }
            return .assertion(.notWordBoundary)
        case "t": return .scalar("\t")
        case "n": return .scalar("\n")
        case "r": return .scalar("\r")
        case "f": return .scalar("\u{0C}")
        case "v": return .scalar("\u{0B}")
        case "0":
            if let next = peek, asciiDigit(next) != nil {
                throw RegexPatternError(
                    message: "octal escape '\(text(start..<position + 1))' is not supported",
                    offset: start
                )
            }
            return .scalar("\u{0}")
        case "1"..."9":
            while let next = peek, asciiDigit(next) != nil { position += 1 }
            throw RegexPatternError(
                message: "backreference '\(text(start..<position))' is not supported",
                offset: start
            )
        case "k":
            throw RegexPatternError(message: "backreference '\\k' is not supported", offset: start)
        case "p", "P":
            throw RegexPatternError(
                message: "unicode property escape '\\\(scalar)' is not supported",
                offset: start
            )
        case "c":
            if let letter = peek, letter.isASCII, letter.properties.isAlphabetic {
                position += 1
                return .scalar(Unicode.Scalar(letter.value % 32)!)
            }
        case "x":
            if let value = hexDigits(count: 2) { return .scalar(Unicode.Scalar(UInt8(value))) }
            throw RegexPatternError(message: "invalid hex escape '\(text(start..<position))'", offset: start)
        case "u":
            return .scalar(try unicodeEscape(start: start))
        default:
            if !(scalar.isASCII && (scalar.properties.isAlphabetic || asciiDigit(scalar) != nil)) {
                return .scalar(scalar)
            }
        }
        throw RegexPatternError(message: "invalid escape '\\\(scalar)'", offset: start)
    }

    /// Parses the rest of `\uHHHH` (joining a surrogate pair written as two escapes) or `\u{H…}`.
    private mutating func unicodeEscape(start: Int) throws(RegexPatternError) -> Unicode.Scalar {
        var value: UInt32
        if peek == "{" {
            position += 1
            let digitsStart = position
            while let next = peek, hexValue(next) != nil { position += 1 }
            guard position > digitsStart, position - digitsStart <= 8, peek == "}",
                let parsed = UInt32(text(digitsStart..<position), radix: 16), parsed <= 0x10FFFF
            else {
                throw RegexPatternError(
                    message: "invalid unicode escape '\(text(start..<Swift.min(position + 1, scalars.count)))'",
                    offset: start
                )
            }
            position += 1
            value = parsed
        } else if let parsed = hexDigits(count: 4) {
            value = parsed
            if (0xD800...0xDBFF).contains(value), hasPrefix("\\u") {
                let saved = position
                position += 2
                if let low = hexDigits(count: 4), (0xDC00...0xDFFF).contains(low) {
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    position = saved
                }
            }
        } else {
            throw RegexPatternError(message: "invalid unicode escape '\(text(start..<position))'", offset: start)
        }
        guard let scalar = Unicode.Scalar(value) else {
            throw RegexPatternError(
                message: "lone surrogate '\(text(start..<position))' is not supported",
                offset: start
            )
        }
        return scalar
    }

    /// Reads exactly `count` hex digits at `position`, advancing past them; nil (not advancing) otherwise.
    private mutating func hexDigits(count: Int) -> UInt32? {
        guard position + count <= scalars.count else { return nil }
        var value: UInt32 = 0
        for offset in 0..<count {
            guard let digit = hexValue(scalars[position + offset]) else { return nil }
            value = value * 16 + digit
        }
        position += count
        return value
    }

    private func hexValue(_ scalar: Unicode.Scalar) -> UInt32? {
        switch scalar.value {
        case 0x30...0x39: return scalar.value - 0x30
        case 0x41...0x46: return scalar.value - 0x41 + 10
        case 0x61...0x66: return scalar.value - 0x61 + 10
        default: return nil
        }
    }

    // MARK: - Classes

    /// Parses `[...]`, JavaScript style: `[]` matches nothing, `[^]` matches anything.
    private mutating func parseClass() throws(RegexPatternError) -> RegexCharClass {
        let start = position
        position += 1
        var result = RegexCharClass()
        if peek == "^" {
            result.negated = true
            position += 1
        }
        while true {
            guard let scalar = peek else {
                throw RegexPatternError(message: "unterminated character class '['", offset: start)
            }
            if scalar == "]" {
                position += 1
                return result
            }
            let itemStart = position
            let first = try classAtom()
            guard case .scalar(let low) = first, peek == "-", position + 1 < scalars.count,
                scalars[position + 1] != "]"
            else {
                add(first, to: &result)
                continue
            }
            position += 1
            let second = try classAtom()
            guard case .scalar(let high) = second else {
                // `[a-\d]`: the dash is literal, as in JavaScript.
                add(first, to: &result)
                result.insert(0x2D...0x2D)
                add(second, to: &result)
                continue
            }
            guard low <= high else {
                throw RegexPatternError(
                    message: "range out of order in character class '\(text(itemStart..<position))'",
                    offset: itemStart
                )
            }
            result.insert(low.value...high.value)
        }
    }

    private mutating func classAtom() throws(RegexPatternError) -> Escape {
        let scalar = scalars[position]
        if scalar == "\\" { return try escape(inClass: true) }
        position += 1
        return .scalar(scalar)
    }

    private func add(_ item: Escape, to set: inout RegexCharClass) {
        switch item {
        case .scalar(let scalar): set.insert(scalar.value...scalar.value)
        case .set(let other): set.formUnion(other)
        case .assertion: break
        }
    }

    // MARK: - Helpers

    private var peek: Unicode.Scalar? { position < scalars.count ? scalars[position] : nil }

    private func hasPrefix(_ prefix: String) -> Bool {
        var index = position
        for scalar in prefix.unicodeScalars {
            guard index < scalars.count, scalars[index] == scalar else { return false }
            index += 1
        }
        return true
    }

    private func text(_ range: Range<Int>) -> String {
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars[Swift.max(0, range.lowerBound)..<Swift.min(range.upperBound, scalars.count)])
        return String(result)
    }
}
