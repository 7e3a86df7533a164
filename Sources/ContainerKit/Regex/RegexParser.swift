/// Parses pattern text into a ``RegexNode`` tree with JavaScript's rules outside Unicode mode (ECMAScript
/// Annex B, what `new RegExp(pattern)` accepts in a browser): identity escapes (`\q` is `q`, `\-`, `\/`),
/// legacy octal escapes (`\01`, and `\1` when the pattern has fewer capturing groups), `\8` and `\9` as
/// digits, `\c` without a control letter as a backslash, `\k` as `k` when the pattern has no named groups,
/// `\p`, `\x` and `\u` without their digits as letters, `\u{…}` as `u` and a quantifier, `{`, `}` and `]`
/// as literals where they form no quantifier or class, and a lone surrogate that matches nothing.
///
/// Lookaround (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`) and backreferences (`\1`, `\k<name>`) parse into
/// ``RegexNode/lookaround(_:behind:negated:)`` and ``RegexNode/backreference(_:)``, which only the backtracking
/// matcher runs. Valid JavaScript beyond this engine's limits (a repetition count over 1000, very deep nesting)
/// is refused with the code ``ContainerError/Code/unsupportedRegex``, so lint can tell it from a pattern GTM
/// itself would refuse (``ContainerError/Code/invalidRegex``).
package struct RegexParser {
    /// The longest accepted pattern, in scalars.
    static let maxPatternLength = 10_000
    /// The largest accepted repetition count in `{n,m}`.
    static let maxRepetition = 1_000
    /// The deepest accepted group nesting.
    static let maxNesting = 200

    /// The parsed tree.
    package private(set) var root: RegexNode = .empty
    /// The number of capturing groups.
    private(set) var captureCount = 0
    /// Whether the pattern starts with the inline flag `(?i)`.
    private(set) var inlineIgnoreCase = false

    private let scalars: [Unicode.Scalar]
    private var position = 0
    private var depth = 0
    private var names: Set<String> = []
    /// How many capturing groups the whole pattern has (a `\N` above it is an octal escape, not a backreference).
    private var totalCaptures = 0
    /// The capture number of each of the pattern's named groups (with any, `\k` must be a backreference to
    /// one of them).
    private var groupNames: [String: Int] = [:]
    private var hasNamedGroups: Bool { !groupNames.isEmpty }

    /// Parses `source`, throwing the first syntax error found.
    package init(_ source: String) throws(RegexPatternError) {
        scalars = Array(source.unicodeScalars)
        do throws(RegexPatternError) {
            try parse()
        } catch {
            throw error.inPattern(scalars)
        }
    }

    private mutating func parse() throws(RegexPatternError) {
        if scalars.count > Self.maxPatternLength {
            throw RegexPatternError(
                message: "pattern is too long (over \(Self.maxPatternLength) characters)",
                offset: Self.maxPatternLength,
                isUnsupported: true
            )
        }
        (totalCaptures, groupNames) = Self.countGroups(scalars)
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
        // Annex B lets a lookahead be quantified (`(?=a)*`), not a lookbehind or another assertion.
        if case .assertion = atom {
            throw nothingToRepeat(at: quantifierStart, length: length)
        }
        if case .lookaround(_, true, _) = atom {
            throw nothingToRepeat(at: quantifierStart, length: length)
        }
        let written = text(quantifierStart..<quantifierStart + length)
        if Swift.max(min, max ?? 0) > Self.maxRepetition {
            throw RegexPatternError(
                message: "repetition count over \(Self.maxRepetition) in '\(written)'",
                offset: quantifierStart,
                isUnsupported: true
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
                offset: start,
                isUnsupported: true
            )
        }
        position += 1
        var capture: Int?
        var lookaround: (behind: Bool, negated: Bool)?
        if peek == "?" {
            lookaround = try parseGroupKind(start: start, capture: &capture)
        } else {
            captureCount += 1
            capture = captureCount
        }
        let body = try parseAlternation()
        guard peek == ")" else {
            throw RegexPatternError(message: "missing ')' to close '('", offset: start)
        }
        position += 1
        if let lookaround { return .lookaround(body, behind: lookaround.behind, negated: lookaround.negated) }
        return .group(body, capture: capture)
    }

    /// Handles the text after `(?`: non-capturing and named groups, and lookaround (returned); refuses other
    /// forms.
    private mutating func parseGroupKind(
        start: Int,
        capture: inout Int?
    ) throws(RegexPatternError) -> (behind: Bool, negated: Bool)? {
        let lookarounds: [(String, (behind: Bool, negated: Bool))] = [
            ("(?=", (false, false)), ("(?!", (false, true)), ("(?<=", (true, false)), ("(?<!", (true, true)),
        ]
        position = start
        if hasPrefix("(?:") {
            position += 3
            return nil
        }
        for (prefix, kind) in lookarounds where hasPrefix(prefix) {
            position += prefix.unicodeScalars.count
            return kind
        }
        if hasPrefix("(?i)") {
            throw RegexPatternError(
                message: "inline flag '(?i)' is only supported at the start of the pattern",
                offset: start
            )
        }
        if hasPrefix("(?<") {
            position += 3
            let nameStart = position
            while let scalar = peek, Self.isGroupNameScalar(scalar, first: position == nameStart) {
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
            return nil
        }
        let shown = text(start..<Swift.min(start + 3, scalars.count))
        throw RegexPatternError(message: "unknown group syntax '\(shown)'", offset: start)
    }

    // MARK: - Escapes

    /// One parsed escape: a code point (a lone surrogate is one too), a class, an assertion, or a
    /// backreference (outside classes only).
    private enum Escape {
        case unit(UInt32)
        case set(RegexCharClass)
        case assertion(RegexAssertion)
        case backreference(Int)

        static func scalar(_ scalar: Unicode.Scalar) -> Escape { .unit(scalar.value) }
    }

    private mutating func parseEscape() throws(RegexPatternError) -> RegexNode {
        switch try escape(inClass: false) {
        case .unit(let value): return Self.literal(value)
        case .set(let set): return .set(set)
        case .assertion(let kind): return .assertion(kind)
        case .backreference(let group): return .backreference(group)
        }
    }

    /// A literal code point; a lone surrogate (valid in JavaScript, absent from well-formed text) matches nothing.
    private static func literal(_ value: UInt32) -> RegexNode {
        guard let scalar = Unicode.Scalar(value) else { return .set(RegexCharClass()) }
        return .literal(scalar)
    }

    /// Parses the escape at `position` (a backslash) and advances past it, with Annex B's rules.
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
        case "B": return inClass ? .scalar("B") : .assertion(.notWordBoundary)
        case "t": return .scalar("\t")
        case "n": return .scalar("\n")
        case "r": return .scalar("\r")
        case "f": return .scalar("\u{0C}")
        case "v": return .scalar("\u{0B}")
        case "0":
            guard let next = peek, asciiDigit(next) != nil else { return .scalar("\u{0}") }
            position -= 1
            return .unit(legacyOctal())
        case "1"..."9":
            if !inClass {
                var index = position - 1
                let number = self.number(at: &index) ?? 0
                if number <= totalCaptures {
                    position = index
                    return .backreference(number)
                }
            }
            // No such group (or inside a class): a legacy octal escape, or `8`/`9` themselves.
            if scalar == "8" || scalar == "9" { return .scalar(scalar) }
            position -= 1
            return .unit(legacyOctal())
        case "k":
            guard hasNamedGroups else { return .scalar("k") }
            if !inClass, peek == "<" {
                var index = position + 1
                while index < scalars.count, Self.isGroupNameScalar(scalars[index], first: index == position + 1) {
                    index += 1
                }
                if index > position + 1, index < scalars.count, scalars[index] == ">",
                    let group = groupNames[text((position + 1)..<index)]
                {
                    position = index + 1
                    return .backreference(group)
                }
            }
            throw RegexPatternError(
                message: "invalid named reference '\\k' (the pattern has named groups, so '\\k' needs '<name>' "
                    + "of one of them)",
                offset: start
            )
        case "c":
            if let letter = peek, letter.isASCII, letter.properties.isAlphabetic {
                position += 1
                return .unit(letter.value % 32)
            }
            if inClass, let next = peek, asciiDigit(next) != nil || next == "_" {
                position += 1
                return .unit(next.value % 32)
            }
            // `\c` without a control letter is a backslash; the `c` is read again as itself.
            position = start + 1
            return .scalar("\\")
        case "x":
            if let value = hexDigits(count: 2) { return .unit(value) }
            return .scalar("x")
        case "u":
            return .unit(unicodeEscape())
        default:
            // An identity escape: `\q` is `q`, `\-` is `-`, `\/` is `/`, `\p` is `p`.
            return .scalar(scalar)
        }
    }

    /// A legacy octal escape at `position` (the first digit, `0`–`7`): up to three digits, at most `\377`.
    private mutating func legacyOctal() -> UInt32 {
        var value: UInt32 = 0
        let limit = scalars[position].value <= 0x33 ? 3 : 2
        var count = 0
        while count < limit, let next = peek, next.value >= 0x30, next.value <= 0x37 {
            value = value * 8 + (next.value - 0x30)
            position += 1
            count += 1
        }
        return value
    }

    /// Whether `scalar` may be in a group name (`$`, `_`, letters; digits after the first).
    private static func isGroupNameScalar(_ scalar: Unicode.Scalar, first: Bool) -> Bool {
        if scalar == "_" || scalar == "$" || scalar.properties.isAlphabetic { return true }
        return !first && (scalar.properties.numericType == .decimal)
    }

    /// Counts the capturing groups and collects the group names with their capture numbers, skipping escapes
    /// and classes.
    private static func countGroups(_ scalars: [Unicode.Scalar]) -> (captures: Int, names: [String: Int]) {
        var captures = 0
        var named: [String: Int] = [:]
        var inClass = false
        var i = 0
        while i < scalars.count {
            switch scalars[i] {
            case "\\": i += 1
            case "[": inClass = true
            case "]": inClass = false
            case "(" where !inClass:
                if i + 1 < scalars.count, scalars[i + 1] == "?" {
                    if i + 3 < scalars.count, scalars[i + 2] == "<", scalars[i + 3] != "=", scalars[i + 3] != "!" {
                        captures += 1
                        var end = i + 3
                        while end < scalars.count, scalars[end] != ">" { end += 1 }
                        var name = String.UnicodeScalarView()
                        name.append(contentsOf: scalars[(i + 3)..<end])
                        if named[String(name)] == nil { named[String(name)] = captures }
                    }
                } else {
                    captures += 1
                }
            default: break
            }
            i += 1
        }
        return (captures, named)
    }

    /// Parses the rest of `\uHHHH` (joining a surrogate pair written as two escapes, since text is matched
    /// by scalars). Without four hex digits it is `u` itself: outside Unicode mode `\u{41}` is `u{41}`.
    private mutating func unicodeEscape() -> UInt32 {
        guard var value = hexDigits(count: 4) else { return 0x75 }
        if (0xD800...0xDBFF).contains(value), hasPrefix("\\u") {
            let saved = position
            position += 2
            if let low = hexDigits(count: 4), (0xDC00...0xDFFF).contains(low) {
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            } else {
                position = saved
            }
        }
        return value
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
            guard case .unit(let low) = first, peek == "-", position + 1 < scalars.count,
                scalars[position + 1] != "]"
            else {
                add(first, to: &result)
                continue
            }
            position += 1
            let second = try classAtom()
            guard case .unit(let high) = second else {
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
            result.insert(low...high)
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
        case .unit(let value): set.insert(value...value)
        case .set(let other): set.formUnion(other)
        case .assertion, .backreference: break
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
