#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A strict RFC 8259 JSON parser that reads bytes into ``Value``s.
///
/// It is iterative (an explicit stack of open arrays and objects, checked against the depth limit before
/// each one is opened), so no input can exhaust the call stack. Integers that fit `Int64` become `.int`,
/// other numbers `.double`; duplicate object keys keep the last value and are reported. Errors carry
/// the JSON pointer of the value being read and its line and column.
enum JSONParser {
    struct Result {
        var value: Value
        var sourceMap: SourceMap?
        var duplicateKeys: [DuplicateKey]
    }

    /// Parses the JSON value that starts at `text.valueStart`.
    ///
    /// - Parameters:
    ///   - statement: the gtm.js form: the value may be followed by one `;`.
    ///   - embedded: the value sits inside a larger JavaScript file: whatever follows it is not read.
    static func parse(
        _ text: SourceText,
        file: String?,
        options: LoadOptions,
        statement: Bool = false,
        embedded: Bool = false
    ) throws(ContainerError) -> Result {
        let record = options.recordPositions && text.bytes.count < Int(Int32.max)
        return try text.bytes.withUnsafeBufferPointer { (buffer) throws(ContainerError) -> Result in
            var core = Core(buffer: buffer, text: text, file: file, maximumDepth: options.maximumDepth, record: record)
            let value = try core.parseDocument(statement: statement, embedded: embedded)
            return core.positions.result(value, text: text, recorded: record)
        }
    }
}

// MARK: - The parser

private enum Byte {
    static let quote: UInt8 = 0x22
    static let backslash: UInt8 = 0x5C
    static let slash: UInt8 = 0x2F
    static let comma: UInt8 = 0x2C
    static let colon: UInt8 = 0x3A
    static let minus: UInt8 = 0x2D
    static let plus: UInt8 = 0x2B
    static let dot: UInt8 = 0x2E
    static let zero: UInt8 = 0x30
    static let nine: UInt8 = 0x39
    static let openBracket: UInt8 = 0x5B
    static let closeBracket: UInt8 = 0x5D
    static let openBrace: UInt8 = 0x7B
    static let closeBrace: UInt8 = 0x7D
    static let semicolon: UInt8 = 0x3B
}

private struct Frame {
    var isObject: Bool
    /// Where this container's finished children start on the value stack.
    var valueBase: Int
    /// Where this container's keys start on the key stack.
    var keyBase: Int
    /// Byte offset of the opening bracket.
    var open: Int
    /// The container's node in the source map, or -1.
    var node: Int32
}

private struct Core {
    let p: UnsafePointer<UInt8>
    let end: Int
    let text: SourceText
    let file: String?
    let maximumDepth: Int
    let record: Bool
    var i: Int

    var frames: [Frame] = []
    var values: [Value] = []
    var keys: [String] = []
    var keyOffsets: [Int] = []
    var scratch: [UInt8] = []
    var keyCache: [String] = []

    /// Positions (nodes only when `record`) and the repeated keys.
    var positions: SourceMapBuilder
    /// The nodes of the finished values on the value stack (parallel to `values`).
    var valueNodes: [Int32] = []

    init(buffer: UnsafeBufferPointer<UInt8>, text: SourceText, file: String?, maximumDepth: Int, record: Bool) {
        // A non-empty buffer always has a base address; an empty one is refused before parsing.
        self.p = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!
        self.end = buffer.count
        self.text = text
        self.file = file
        self.maximumDepth = max(0, maximumDepth)
        self.record = record
        self.i = text.valueStart
        values.reserveCapacity(64)
        frames.reserveCapacity(16)
        keys.reserveCapacity(64)
        keyOffsets.reserveCapacity(64)
        self.positions = SourceMapBuilder(byteCount: buffer.count, record: record)
    }

    // MARK: Structure

    mutating func parseDocument(statement: Bool, embedded: Bool = false) throws(ContainerError) -> Value {
        skipWhitespace()
        guard i < end else {
            // The reader refuses empty and blank files first; this is `var data =` with nothing after it.
            throw error("unexpected end of file, expected a value", at: i)
        }
        let value = try parseValues()
        if embedded { return value }
        skipWhitespace()
        if statement, i < end, p[i] == Byte.semicolon {
            i += 1
            skipWhitespace()
        }
        if i < end {
            throw error("unexpected \(describe(at: i)) after the json document", at: i)
        }
        return value
    }

    /// Parses one value, with everything nested in it, without recursion.
    mutating func parseValues() throws(ContainerError) -> Value {
        var value: Value
        var node: Int32 = -1
        nextValue: while true {
            // Expecting a value at `i`; whitespace is skipped.
            guard i < end else { throw endOfFileError() }
            let c = p[i]
            if record { node = beginNode() }
            switch c {
            case Byte.quote:
                value = .string(try parseString())
            case Byte.openBrace:
                try open(isObject: true, node: node)
                i += 1
                skipWhitespace()
                if i < end, p[i] == Byte.closeBrace {
                    i += 1
                    (value, node) = closeObject()
                } else {
                    try parseMemberKey()
                    continue nextValue
                }
            case Byte.openBracket:
                try open(isObject: false, node: node)
                i += 1
                skipWhitespace()
                if i < end, p[i] == Byte.closeBracket {
                    i += 1
                    (value, node) = closeArray()
                } else {
                    continue nextValue
                }
            case 0x2D, 0x30...0x39:  // - 0-9
                value = try parseNumber()
            case 0x74:  // t
                try expectLiteral(length: 4, 0x74, 0x72, 0x75, 0x65)
                value = .bool(true)
            case 0x66:  // f
                try expectLiteral(length: 5, 0x66, 0x61, 0x6C, 0x73, 0x65)
                value = .bool(false)
            case 0x6E:  // n
                try expectLiteral(length: 4, 0x6E, 0x75, 0x6C, 0x6C)
                value = .null
            default:
                throw unexpectedValueError()
            }

            // A value is finished: hand it to its container, closing containers as they end.
            while true {
                guard let top = frames.last else { return value }
                values.append(value)
                if record { valueNodes.append(node) }
                skipWhitespace()
                guard i < end else { throw endOfFileError() }
                let c = p[i]
                if top.isObject {
                    if c == Byte.comma {
                        i += 1
                        skipWhitespace()
                        if i < end, p[i] == Byte.closeBrace {
                            throw error("trailing comma before '}'", at: i, pointer: containerPointer())
                        }
                        try parseMemberKey()
                        continue nextValue
                    } else if c == Byte.closeBrace {
                        i += 1
                        (value, node) = closeObject()
                    } else {
                        throw error(
                            "expected ',' or '}' after object member, found \(describe(at: i))",
                            at: i,
                            pointer: containerPointer()
                        )
                    }
                } else {
                    if c == Byte.comma {
                        i += 1
                        skipWhitespace()
                        if i < end, p[i] == Byte.closeBracket {
                            throw error("trailing comma before ']'", at: i, pointer: containerPointer())
                        }
                        continue nextValue
                    } else if c == Byte.closeBracket {
                        i += 1
                        (value, node) = closeArray()
                    } else {
                        throw error(
                            "expected ',' or ']' after array element, found \(describe(at: i))",
                            at: i,
                            pointer: containerPointer()
                        )
                    }
                }
            }
        }
    }

    @inline(__always)
    mutating func open(isObject: Bool, node: Int32) throws(ContainerError) {
        guard frames.count < maximumDepth else {
            throw ContainerError(
                .nestingTooDeep,
                "arrays and objects nest deeper than the limit of \(maximumDepth)",
                file: file,
                pointer: valuePointer(),
                location: text.location(ofOffset: i)
            )
        }
        frames.append(Frame(isObject: isObject, valueBase: values.count, keyBase: keys.count, open: i, node: node))
    }

    /// Reads `"key"` and `:` and the whitespace after them; `i` is at the member's first byte.
    @inline(__always)
    mutating func parseMemberKey() throws(ContainerError) {
        guard i < end else { throw endOfFileError() }
        guard p[i] == Byte.quote else {
            throw error(
                "expected '\"' to start an object key, found \(describe(at: i))",
                at: i,
                pointer: containerPointer()
            )
        }
        let keyOffset = i
        let key = try parseKey()
        keys.append(key)
        keyOffsets.append(keyOffset)
        skipWhitespace()
        guard i < end, p[i] == Byte.colon else {
            if i >= end { throw endOfFileError() }
            throw error("expected ':' after object key '\(key)', found \(describe(at: i))", at: i)
        }
        i += 1
        skipWhitespace()
    }

    mutating func closeArray() -> (Value, Int32) {
        let frame = frames.removeLast()
        let count = values.count - frame.valueBase
        let elements = takeValues(from: frame.valueBase, count: count)
        if record {
            finishNode(frame.node, isObject: false, count: count, valueBase: frame.valueBase, keyBase: frame.keyBase)
        }
        return (.array(elements), frame.node)
    }

    mutating func closeObject() -> (Value, Int32) {
        let frame = frames.last!
        let count = values.count - frame.valueBase
        if record {
            finishNode(frame.node, isObject: true, count: count, valueBase: frame.valueBase, keyBase: frame.keyBase)
        }
        var map = ValueMap(minimumCapacity: count)
        var repeated: [(key: String, index: Int)] = []
        if count > 0 {
            // Move keys and values out of the stacks (leaving trivially destructible placeholders behind),
            // which saves a retain and a release per member.
            values.withUnsafeMutableBufferPointer { valueStack in
                keys.withUnsafeMutableBufferPointer { keyStack in
                    let valueBase = valueStack.baseAddress! + frame.valueBase
                    let keyBase = keyStack.baseAddress! + frame.keyBase
                    for j in 0..<count {
                        let key = (keyBase + j).move()
                        (keyBase + j).initialize(to: "")
                        let value = (valueBase + j).move()
                        (valueBase + j).initialize(to: .null)
                        let before = map.count
                        map[key] = value
                        if map.count == before { repeated.append((key, frame.keyBase + j)) }
                    }
                }
            }
        }
        if !repeated.isEmpty {
            // `frames` still holds this object, so its pointer is the path to it.
            let pointer = pointer(depth: frames.count - 1)
            for (key, index) in repeated {
                positions.duplicates.append((pointer, key, keyOffsets[index]))
            }
        }
        frames.removeLast()
        values.removeLast(count)
        keys.removeLast(count)
        keyOffsets.removeLast(count)
        return (.object(map), frame.node)
    }

    /// Moves the top `count` values off the value stack into a new array.
    @inline(__always)
    mutating func takeValues(from base: Int, count: Int) -> [Value] {
        guard count > 0 else { return [] }
        let result = [Value](unsafeUninitializedCapacity: count) { buffer, initialized in
            values.withUnsafeMutableBufferPointer { stack in
                let source = stack.baseAddress! + base
                buffer.baseAddress!.moveInitialize(from: source, count: count)
                // Leave trivially destructible values behind so that shrinking the stack releases nothing.
                source.initialize(repeating: .null, count: count)
            }
            initialized = count
        }
        values.removeLast(count)
        return result
    }

    // MARK: Positions

    @inline(__always)
    mutating func beginNode() -> Int32 {
        var keyOffset = -1
        if let top = frames.last, top.isObject, let offset = keyOffsets.last { keyOffset = offset }
        return positions.begin(at: i, keyOffset: keyOffset)
    }

    mutating func finishNode(_ node: Int32, isObject: Bool, count: Int, valueBase: Int, keyBase: Int) {
        positions.finish(
            node,
            isObject: isObject,
            children: valueNodes[valueBase...],
            keys: isObject ? keys[keyBase..<(keyBase + count)] : keys[keyBase..<keyBase]
        )
        valueNodes.removeLast(count)
    }

    // MARK: Whitespace and literals

    @inline(__always)
    mutating func skipWhitespace() {
        while i < end {
            let b = p[i]
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
            i += 1
        }
    }

    /// Reads `true`, `false` or `null` (`length` of the bytes `b0`…`b4`).
    @inline(__always)
    mutating func expectLiteral(
        length: Int,
        _ b0: UInt8,
        _ b1: UInt8,
        _ b2: UInt8,
        _ b3: UInt8,
        _ b4: UInt8 = 0
    ) throws(ContainerError) {
        let start = i
        guard i + length <= end, p[i] == b0, p[i + 1] == b1, p[i + 2] == b2, p[i + 3] == b3,
            length == 4 || p[i + 4] == b4
        else { throw literalError(start) }
        i += length
        if i < end, isWordByte(p[i]) { throw literalError(start) }
    }

    func isWordByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F
    }

    @inline(never)
    func literalError(_ start: Int) -> ContainerError {
        var j = start
        while j < end, j - start < 32, isWordByte(p[j]) { j += 1 }
        let word = String(decoding: UnsafeBufferPointer(start: p + start, count: j - start), as: UTF8.self)
        return error("invalid literal '\(word)'", at: start, pointer: valuePointer())
    }

    // MARK: Strings

    /// Reads a string; `i` is at its opening quote and ends after the closing one.
    @inline(__always)
    mutating func parseString() throws(ContainerError) -> String {
        let start = i + 1
        var j = start
        // Fast path: printable ASCII without escapes, eight bytes at a time.
        while j + 8 <= end {
            let word = UnsafeRawPointer(p + j).loadUnaligned(as: UInt64.self)
            if Core.needsAttention(word) { break }
            j += 8
        }
        while j < end {
            let b = p[j]
            if b == Byte.quote {
                i = j + 1
                return String(decoding: UnsafeBufferPointer(start: p + start, count: j - start), as: UTF8.self)
            }
            if b == Byte.backslash || b < 0x20 || b >= 0x80 { break }
            j += 1
        }
        return try parseStringSlow(from: start, clean: j)
    }

    /// Reads an object key. Keys repeat a lot in containers, so escape-free ASCII keys too long to be stored
    /// inline in a `String` (over 15 bytes) are shared through a small cache instead of allocated each time.
    @inline(__always)
    mutating func parseKey() throws(ContainerError) -> String {
        let start = i + 1
        var j = start
        while j + 8 <= end {
            let word = UnsafeRawPointer(p + j).loadUnaligned(as: UInt64.self)
            if Core.needsAttention(word) { break }
            j += 8
        }
        while j < end, p[j] != Byte.quote, p[j] != Byte.backslash, p[j] >= 0x20, p[j] < 0x80 { j += 1 }
        let length = j - start
        guard j < end, p[j] == Byte.quote, length > 15, length <= 64 else { return try parseString() }
        i = j + 1
        let first = UnsafeRawPointer(p + start).loadUnaligned(as: UInt64.self)
        let last = UnsafeRawPointer(p + j - 8).loadUnaligned(as: UInt64.self)
        let hash = (first &* 0x9E37_79B9_7F4A_7C15 ^ last &+ UInt64(length)) &* 0xBF58_476D_1CE4_E5B9
        let slot = Int(truncatingIfNeeded: hash >> 55)  // 512 slots
        let bytes = UnsafeBufferPointer(start: p + start, count: length)
        if keyCache.isEmpty { keyCache = [String](repeating: "", count: 512) }
        let cached = keyCache[slot]
        if cached.utf8.count == length,
            cached.utf8.withContiguousStorageIfAvailable({ memcmp($0.baseAddress!, bytes.baseAddress!, length) == 0 })
                == true
        {
            return cached
        }
        let key = String(decoding: bytes, as: UTF8.self)
        keyCache[slot] = key
        return key
    }

    /// Whether any of the eight bytes is `"`, `\`, a control character or non-ASCII.
    @inline(__always)
    static func needsAttention(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let quotes = word ^ (ones &* 0x22)
        let slashes = word ^ (ones &* 0x5C)
        let hasQuote = (quotes &- ones) & ~quotes
        let hasSlash = (slashes &- ones) & ~slashes
        let hasControl = word &- (ones &* 0x20)
        return ((hasQuote | hasSlash | hasControl | word) & highs) != 0
    }

    /// Reads the rest of a string that has escapes, non-ASCII text or an error; `clean` is the first byte
    /// the fast path did not accept.
    mutating func parseStringSlow(from start: Int, clean: Int) throws(ContainerError) -> String {
        var j = clean
        var escaped = false
        // Bytes [start, copied) are already in `scratch` when `escaped`.
        var copied = start
        while true {
            guard j < end else {
                throw error(
                    "unexpected end of file inside string that starts at \(opening(start - 1, errorAt: j))",
                    at: j,
                    pointer: valuePointer()
                )
            }
            let b = p[j]
            if b == Byte.quote {
                i = j + 1
                if !escaped {
                    return String(decoding: UnsafeBufferPointer(start: p + start, count: j - start), as: UTF8.self)
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: p + copied, count: j - copied))
                return String(decoding: scratch, as: UTF8.self)
            } else if b == Byte.backslash {
                if !escaped {
                    escaped = true
                    scratch.removeAll(keepingCapacity: true)
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: p + copied, count: j - copied))
                j = try parseEscape(at: j)
                copied = j
            } else if b < 0x20 {
                throw error(
                    "control character \(Core.scalarName(UInt32(b))) must be escaped in a string",
                    at: j,
                    pointer: valuePointer()
                )
            } else if b >= 0x80 {
                guard let length = utf8SequenceLength(at: j) else {
                    throw error("invalid utf-8 byte \(Core.hex(p[j])) in string", at: j, pointer: valuePointer())
                }
                j += length
            } else {
                j += 1
            }
        }
    }

    /// Decodes the escape at `j` (a backslash) into `scratch` and returns the offset after it.
    mutating func parseEscape(at j: Int) throws(ContainerError) -> Int {
        guard j + 1 < end else { throw unterminatedStringError(escapeAt: j) }
        let c = p[j + 1]
        switch c {
        case Byte.quote, Byte.backslash, Byte.slash: scratch.append(c)
        case 0x62: scratch.append(0x08)  // b
        case 0x66: scratch.append(0x0C)  // f
        case 0x6E: scratch.append(0x0A)  // n
        case 0x72: scratch.append(0x0D)  // r
        case 0x74: scratch.append(0x09)  // t
        case 0x75:  // u
            let first = try hex4(at: j)
            var scalar = first
            var next = j + 6
            if first >= 0xD800, first <= 0xDBFF {
                guard next + 1 < end, p[next] == Byte.backslash, p[next + 1] == 0x75 else {
                    throw loneSurrogateError(at: j)
                }
                let second = try hex4(at: next)
                guard second >= 0xDC00, second <= 0xDFFF else { throw loneSurrogateError(at: j) }
                scalar = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00)
                next += 6
            } else if first >= 0xDC00, first <= 0xDFFF {
                throw loneSurrogateError(at: j)
            }
            appendUTF8(scalar)
            return next
        default:
            throw error("invalid escape '\\\(describeRaw(at: j + 1))'", at: j, pointer: valuePointer())
        }
        return j + 2
    }

    /// The value of the four hex digits of the `\u` escape at `j`.
    func hex4(at j: Int) throws(ContainerError) -> UInt32 {
        var result: UInt32 = 0
        for k in (j + 2)..<(j + 6) {
            guard k < end else { throw unterminatedStringError(escapeAt: j) }
            let b = p[k]
            let digit: UInt32
            switch b {
            case 0x30...0x39: digit = UInt32(b - 0x30)
            case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
            case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
            default:
                var shown = ""
                for m in (j + 2)...k where m < end { shown += describeRaw(at: m) }
                throw error("invalid unicode escape '\\u\(shown)'", at: j, pointer: valuePointer())
            }
            result = result << 4 | digit
        }
        return result
    }

    mutating func appendUTF8(_ scalar: UInt32) {
        switch scalar {
        case 0..<0x80:
            scratch.append(UInt8(scalar))
        case 0x80..<0x800:
            scratch.append(UInt8(0xC0 | scalar >> 6))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        case 0x800..<0x10000:
            scratch.append(UInt8(0xE0 | scalar >> 12))
            scratch.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        default:
            scratch.append(UInt8(0xF0 | scalar >> 18))
            scratch.append(UInt8(0x80 | (scalar >> 12) & 0x3F))
            scratch.append(UInt8(0x80 | (scalar >> 6) & 0x3F))
            scratch.append(UInt8(0x80 | scalar & 0x3F))
        }
    }

    /// The length of the valid UTF-8 sequence at `j` (a non-ASCII byte), or `nil` if it is invalid.
    func utf8SequenceLength(at j: Int) -> Int? {
        UTF8Validation.sequenceLength(p, at: j, end: end)
    }

    // MARK: Numbers

    mutating func parseNumber() throws(ContainerError) -> Value {
        let start = i
        var j = i
        let negative = p[j] == Byte.minus
        if negative { j += 1 }
        guard j < end, p[j] >= Byte.zero, p[j] <= Byte.nine else { throw numberError(start, j) }
        var magnitude: UInt64 = 0
        var overflow = false
        if p[j] == Byte.zero {
            j += 1
            if j < end, p[j] >= Byte.zero, p[j] <= Byte.nine {
                while j < end, p[j] >= Byte.zero, p[j] <= Byte.nine { j += 1 }
                throw error(
                    "leading zeros are not allowed in number '\(string(start, j))'",
                    at: start,
                    pointer: valuePointer()
                )
            }
        } else {
            while j < end {
                let d = p[j] &- Byte.zero
                guard d <= 9 else { break }
                if !overflow {
                    let (times10, o1) = magnitude.multipliedReportingOverflow(by: 10)
                    let (sum, o2) = times10.addingReportingOverflow(UInt64(d))
                    magnitude = sum
                    overflow = o1 || o2
                }
                j += 1
            }
        }
        var isInteger = true
        if j < end, p[j] == Byte.dot {
            isInteger = false
            j += 1
            guard j < end, p[j] >= Byte.zero, p[j] <= Byte.nine else { throw numberError(start, j) }
            while j < end, p[j] >= Byte.zero, p[j] <= Byte.nine { j += 1 }
        }
        if j < end, p[j] | 0x20 == 0x65 {  // e or E
            isInteger = false
            j += 1
            if j < end, p[j] == Byte.plus || p[j] == Byte.minus { j += 1 }
            guard j < end, p[j] >= Byte.zero, p[j] <= Byte.nine else { throw numberError(start, j) }
            while j < end, p[j] >= Byte.zero, p[j] <= Byte.nine { j += 1 }
        }
        if j < end, isWordByte(p[j]) || p[j] == Byte.dot {
            throw numberError(start, j)
        }
        i = j
        if isInteger, !overflow {
            if negative {
                if magnitude <= UInt64(Int64.max) { return .int(-Int64(magnitude)) }
                if magnitude == UInt64(Int64.max) + 1 { return .int(Int64.min) }
            } else if magnitude <= UInt64(Int64.max) {
                return .int(Int64(magnitude))
            }
        }
        let literal = string(start, j)
        guard let double = Double(literal), double.isFinite else {
            throw error("number '\(literal)' is out of range", at: start, pointer: valuePointer())
        }
        return .double(double)
    }

    @inline(never)
    func numberError(_ start: Int, _ bad: Int) -> ContainerError {
        var j = bad
        while j < end, j - start < 40, isWordByte(p[j]) || p[j] == Byte.dot || p[j] == Byte.plus || p[j] == Byte.minus {
            j += 1
        }
        if j == bad, bad < end, p[bad] >= 0x21, p[bad] < 0x7F { j += 1 }
        let shown = string(start, j)
        if bad >= end {
            return error("unexpected end of file inside number '\(shown)'", at: bad, pointer: valuePointer())
        }
        return error("invalid number '\(shown)'", at: start, pointer: valuePointer())
    }

    func string(_ start: Int, _ end: Int) -> String {
        String(decoding: UnsafeBufferPointer(start: p + start, count: end - start), as: UTF8.self)
    }

    // MARK: Errors

    func error(_ message: String, at offset: Int, pointer: String? = nil) -> ContainerError {
        ContainerError(
            .syntax,
            message,
            file: file,
            pointer: pointer ?? valuePointer(),
            location: text.location(ofOffset: offset)
        )
    }

    func opening(_ offset: Int, errorAt errorOffset: Int) -> String { text.opening(offset, errorAt: errorOffset) }

    @inline(never)
    func unexpectedValueError() -> ContainerError {
        let b = p[i]
        if b == Byte.slash, i + 1 < end, p[i + 1] == Byte.slash || p[i + 1] == 0x2A {
            return error("comments are not allowed in json", at: i)
        }
        return error("expected a value, found \(describe(at: i))", at: i)
    }

    @inline(never)
    func endOfFileError() -> ContainerError {
        guard let top = frames.last else { return error("unexpected end of file, expected a value", at: i) }
        let kind = top.isObject ? "object" : "array"
        return error(
            "unexpected end of file inside \(kind) that starts at \(opening(top.open, errorAt: i))",
            at: i,
            pointer: containerPointer()
        )
    }

    @inline(never)
    func unterminatedStringError(escapeAt j: Int) -> ContainerError {
        // Walk back to the string's opening quote: the nearest unescaped quote before `j`.
        var k = j
        while k > 0 {
            k -= 1
            if p[k] == Byte.quote {
                var backslashes = 0
                var m = k
                while m > 0, p[m - 1] == Byte.backslash {
                    backslashes += 1
                    m -= 1
                }
                if backslashes % 2 == 0 { break }
            }
        }
        return error(
            "unexpected end of file inside string that starts at \(opening(k, errorAt: end))",
            at: end,
            pointer: valuePointer()
        )
    }

    @inline(never)
    func loneSurrogateError(at j: Int) -> ContainerError {
        error("lone surrogate '\(string(j, min(j + 6, end)))' in string", at: j, pointer: valuePointer())
    }

    /// What is at `offset`, for "found …" messages: `'x'`, `'word'`, `end of file`, `byte 0xff`.
    func describe(at offset: Int) -> String {
        guard offset < end else { return "end of file" }
        let b = p[offset]
        if isWordByte(b) {
            var j = offset
            while j < end, j - offset < 24, isWordByte(p[j]) { j += 1 }
            return "'\(string(offset, j))'"
        }
        if b < 0x20 || b == 0x7F { return "control character \(Core.scalarName(UInt32(b)))" }
        if b >= 0x80 {
            guard let length = utf8SequenceLength(at: offset) else { return "invalid utf-8 byte \(Core.hex(b))" }
            return "'\(string(offset, offset + length))'"
        }
        return "'\(Character(UnicodeScalar(b)))'"
    }

    /// The character at `offset` as it should appear inside quotes in a message.
    func describeRaw(at offset: Int) -> String {
        guard offset < end else { return "" }
        let b = p[offset]
        if b < 0x20 || b == 0x7F { return Core.scalarName(UInt32(b)) }
        if b >= 0x80 {
            guard let length = utf8SequenceLength(at: offset) else { return Core.hex(b) }
            return string(offset, offset + length)
        }
        return String(Character(UnicodeScalar(b)))
    }

    static func scalarName(_ scalar: UInt32) -> String {
        let digits = String(scalar, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }

    static func hex(_ b: UInt8) -> String { UTF8Validation.hex(b) }

    // MARK: Pointers

    /// The pointer of the value being read: the open containers and the member being read in the innermost.
    func valuePointer() -> String {
        guard let top = frames.last else { return "" }
        var pointer = self.pointer(depth: frames.count - 1)
        if top.isObject {
            if keys.count - top.keyBase > values.count - top.valueBase, let key = keys.last {
                pointer = JSONPointer.appending(pointer, key)
            }
        } else {
            pointer = JSONPointer.appending(pointer, values.count - top.valueBase)
        }
        return pointer
    }

    /// The pointer of the innermost open container.
    func containerPointer() -> String {
        pointer(depth: frames.count - 1)
    }

    /// The pointer of the open container at `depth` (0 is the root).
    func pointer(depth: Int) -> String {
        var pointer = ""
        var d = 0
        while d < depth {
            let frame = frames[d]
            let child = frames[d + 1]
            if frame.isObject {
                pointer = JSONPointer.appending(pointer, keys[child.keyBase - 1])
            } else {
                pointer = JSONPointer.appending(pointer, child.valueBase - frame.valueBase)
            }
            d += 1
        }
        return pointer
    }
}

/// UTF-8 validation of one multi-byte sequence (RFC 3629: no overlong forms, no surrogates, ≤ U+10FFFF).
enum UTF8Validation {
    /// The length of the valid sequence that starts at `j` with a byte ≥ 0x80, or `nil`.
    @inline(__always)
    static func sequenceLength(_ p: UnsafePointer<UInt8>, at j: Int, end: Int) -> Int? {
        let b0 = p[j]
        @inline(__always) func continuation(_ k: Int) -> Bool { k < end && p[k] & 0xC0 == 0x80 }
        switch b0 {
        case 0xC2...0xDF:
            return continuation(j + 1) ? 2 : nil
        case 0xE0...0xEF:
            guard continuation(j + 1), continuation(j + 2) else { return nil }
            let b1 = p[j + 1]
            if b0 == 0xE0, b1 < 0xA0 { return nil }  // overlong
            if b0 == 0xED, b1 >= 0xA0 { return nil }  // surrogate
            return 3
        case 0xF0...0xF4:
            guard continuation(j + 1), continuation(j + 2), continuation(j + 3) else { return nil }
            let b1 = p[j + 1]
            if b0 == 0xF0, b1 < 0x90 { return nil }  // overlong
            if b0 == 0xF4, b1 >= 0x90 { return nil }  // > U+10FFFF
            return 4
        default:
            return nil
        }
    }
}
