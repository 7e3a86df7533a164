import Foundation

/// Reads an XML property list into a ``Value``, with the positions of its values when asked, as ``JSONParser``
/// reads JSON: every error says what is wrong and where (line:column, and the JSON pointer of the value being
/// read), a repeated `<dict>` key keeps its last value and is reported, and the parser is iterative, so no input
/// can exhaust the call stack.
///
/// What it accepts is what Foundation's `PropertyListSerialization` reads (an optional `<plist>` around one
/// value; `<dict>`, `<array>`, `<string>`, `<key>`, `<integer>` in decimal or `0x` hex, `<real>`, `<true/>`,
/// `<false/>`, `<date>` with fields that roll over, `<data>` decoded group by group; the five XML entities,
/// character references, CDATA, comments), with the same conversion as the binary reader: dates become ISO 8601
/// strings, data base64 strings, integers above `Int64.max` doubles, and dictionary keys are sorted (keys that
/// differ only in their bytes in document order). The tests read generated and hand-written lists with both. It is stricter where Foundation silently keeps going:
/// anything after the root element but comments, a `<plist>` inside the list, and characters outside base64 in
/// `<data>` are errors. A declared encoding other than UTF-8 (or ISO-8859-1, which is decoded) is refused.
enum XMLPropertyListParser {
    static func parse(_ text: SourceText, file: String?, options: LoadOptions) throws(ContainerError)
        -> JSONParser.Result
    {
        let record = options.recordPositions && text.bytes.count < Int(Int32.max)
        return try text.bytes.withUnsafeBufferPointer { (buffer) throws(ContainerError) -> JSONParser.Result in
            var core = XMLCore(
                buffer: buffer,
                text: text,
                file: file,
                maximumDepth: options.maximumDepth,
                record: record
            )
            let value = try core.parseDocument()
            return core.positions.result(value, text: text, recorded: record)
        }
    }
}

/// An open `<array>` or `<dict>`.
private struct XMLFrame {
    var isDict: Bool
    /// Offset of the element's `<`.
    var open: Int
    /// The element's node in the source map, or -1.
    var node: Int32
    var elements: [Value] = []
    /// A dictionary's keys, in document order, parallel to `elements`.
    var keys: [String] = []
    var keyOffsets: [Int] = []
    var childNodes: [Int32] = []
    /// The key read whose value comes next, and its `<key>`'s offset.
    var pendingKey: String?
    var pendingKeyOffset = -1
}

private struct XMLCore {
    let p: UnsafePointer<UInt8>
    let end: Int
    let text: SourceText
    let file: String?
    let maximumDepth: Int
    let record: Bool
    var i: Int
    /// The file declares ISO-8859-1: each byte of text is one character.
    var latin1 = false
    var frames: [XMLFrame] = []
    var scratch: [UInt8] = []
    /// Made at the first `<date>`, kept for the others (making one costs far more than using it).
    var dateFormatter: ISO8601DateFormatter?
    /// Positions (nodes only when `record`) and the repeated keys.
    var positions: SourceMapBuilder

    init(buffer: UnsafeBufferPointer<UInt8>, text: SourceText, file: String?, maximumDepth: Int, record: Bool) {
        // A non-empty buffer always has a base address; an empty file is refused before parsing.
        self.p = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)!
        self.end = buffer.count
        self.text = text
        self.file = file
        self.maximumDepth = max(0, maximumDepth)
        self.record = record
        self.i = text.valueStart
        self.positions = SourceMapBuilder(byteCount: buffer.count, record: record)
    }

    // MARK: Document

    mutating func parseDocument() throws(ContainerError) -> Value {
        try skipMisc(declarationAllowed: true)
        guard i < end, p[i] == Byte.lt else {
            throw error("expected the <plist> element, found \(describe(at: i))", at: i)
        }
        let rootStart = i
        let value: Value
        if nameIs("plist", at: i + 1) {
            let tag = try readStartTag()
            if tag.selfClosing { throw error("<plist/> holds no value", at: rootStart) }
            try skipMisc()
            if hasPrefix("</", at: i) {
                throw error("<plist> holds no value", at: i)
            }
            guard i < end else { throw endOfFileError(inside: "plist", opened: rootStart) }
            guard p[i] == Byte.lt else {
                throw error("unexpected text inside <plist>: found \(describe(at: i))", at: i)
            }
            value = try parseValue()
            try skipMisc()
            guard i < end else { throw endOfFileError(inside: "plist", opened: rootStart) }
            if hasPrefix("</", at: i) {
                try readEndTag(closing: "plist", opened: rootStart)
            } else if p[i] == Byte.lt {
                throw error("<plist> holds more than one value: found <\(tagName(at: i + 1))> after the first", at: i)
            } else {
                throw error("unexpected text inside <plist>: found \(describe(at: i))", at: i)
            }
        } else if Self.valueElements.contains(tagName(at: i + 1)) {
            value = try parseValue()
        } else if tagName(at: i + 1).isEmpty {
            throw error("expected the <plist> element, found \(describe(at: i))", at: i)
        } else {
            throw error(
                "the root element is <\(tagName(at: i + 1))>, not <plist>: this is not a property list",
                at: i
            )
        }
        try skipMisc()
        if i < end {
            throw error("unexpected content after the property list: found \(describe(at: i))", at: i)
        }
        return value
    }

    static let valueElements: Set<String> = [
        "dict", "array", "string", "key", "integer", "real", "true", "false", "date", "data",
    ]

    // MARK: Values

    /// Reads the value element at `i` (its `<`), and everything inside it; `i` ends after its end tag.
    mutating func parseValue() throws(ContainerError) -> Value {
        while true {
            // `i` is at a value element's `<`.
            let start = i
            let name = tagName(at: i + 1)
            var node = record ? beginNode(at: start) : -1
            var finished: Value
            switch name {
            case "dict", "array":
                let isDict = name == "dict"
                guard frames.count < maximumDepth else {
                    throw ContainerError(
                        .nestingTooDeep,
                        "arrays and dictionaries nest deeper than the limit of \(maximumDepth)",
                        file: file,
                        pointer: valuePointer(),
                        location: text.location(ofOffset: start)
                    )
                }
                let tag = try readStartTag()
                if tag.selfClosing {
                    if record { finishNode(node, isDict: isDict, childNodes: [], keys: []) }
                    finished = isDict ? .object([:]) : .array([])
                } else {
                    frames.append(XMLFrame(isDict: isDict, open: start, node: node))
                    guard let closed = try nextInFrame() else { continue }
                    (finished, node) = closed
                }
            case "string", "key":
                finished = .string(try readElementText(name, opened: start))
            case "integer", "real", "date", "data":
                finished = try scalar(name, try readElementText(name, opened: start), at: start)
            case "true", "false":
                let tag = try readStartTag()
                if !tag.selfClosing {
                    guard hasPrefix("</", at: i) else { throw error("<\(name)> must be empty", at: i) }
                    try readEndTag(closing: name, opened: start)
                }
                finished = .bool(name == "true")
            case "plist":
                throw error("<plist> inside a property list", at: start)
            case "":
                throw error("expected an element name after '<', found \(describe(at: i + 1))", at: i + 1)
            default:
                throw error("unknown element <\(name)>", at: start)
            }
            // Hands the finished value to the containers it completes; returns the root once it is done.
            while true {
                guard !frames.isEmpty else { return finished }
                add(finished, node: node)
                guard let closed = try nextInFrame() else { break }
                (finished, node) = closed
            }
        }
    }

    /// Adds a finished value to the innermost open container.
    mutating func add(_ value: Value, node: Int32) {
        let top = frames.count - 1
        if frames[top].isDict {
            frames[top].keys.append(frames[top].pendingKey ?? "")
            frames[top].keyOffsets.append(frames[top].pendingKeyOffset)
            frames[top].pendingKey = nil
        }
        frames[top].elements.append(value)
        if record { frames[top].childNodes.append(node) }
    }

    /// In the innermost open container: reads up to its next value element (then returns `nil`, `i` at that
    /// element's `<`) or through its end tag (then returns the container's value and node, closed).
    mutating func nextInFrame() throws(ContainerError) -> (Value, Int32)? {
        while true {
            let top = frames.count - 1
            let frame = frames[top]
            let kind = frame.isDict ? "dict" : "array"
            try skipMisc()
            guard i < end else { throw endOfFileError(inside: kind, opened: frame.open) }
            guard p[i] == Byte.lt else {
                throw error("unexpected text inside <\(kind)>: found \(describe(at: i))", at: i)
            }
            if hasPrefix("</", at: i) {
                if let key = frame.pendingKey {
                    throw error("the <dict> ends after key '\(key)' without its value", at: i)
                }
                try readEndTag(closing: kind, opened: frame.open)
                return close()
            }
            guard frame.isDict, frame.pendingKey == nil else { return nil }
            let start = i
            let name = tagName(at: i + 1)
            guard name == "key" else {
                throw error("expected a <key> in the <dict>, found <\(name)>", at: start)
            }
            let key = try readElementText("key", opened: start)
            frames[top].pendingKey = key
            frames[top].pendingKeyOffset = start
        }
    }

    /// Closes the innermost container: its value (a dictionary's keys sorted, a repeated key's last value kept).
    mutating func close() -> (Value, Int32) {
        let frame = frames.removeLast()
        if record { finishNode(frame.node, isDict: frame.isDict, childNodes: frame.childNodes, keys: frame.keys) }
        guard frame.isDict else { return (.array(frame.elements), frame.node) }
        // Keys are told apart by their bytes, as in JSON ("café" and "cafe\u{301}" are two members).
        var latest: [ByteKey: Int] = [:]
        latest.reserveCapacity(frame.keys.count)
        var pointer: String?
        for (index, key) in frame.keys.enumerated() {
            if latest.updateValue(index, forKey: ByteKey(key)) != nil {
                // The dictionary is not in its parent yet: the open containers' pointer is the dictionary's
                // (made once, however many keys repeat).
                if pointer == nil { pointer = valuePointer() }
                positions.duplicates.append((pointer ?? "", key, frame.keyOffsets[index]))
            }
        }
        var map = ValueMap(minimumCapacity: latest.count)
        // Keys that differ only in their bytes ("é" and "e\u{301}") compare equal with `<`: document order decides.
        let order = latest.values.sorted { a, b in
            frame.keys[a] < frame.keys[b] || (!(frame.keys[b] < frame.keys[a]) && a < b)
        }
        for index in order {
            map[frame.keys[index]] = frame.elements[index]
        }
        return (.object(map), frame.node)
    }

    // MARK: Scalars

    mutating func scalar(_ name: String, _ content: String, at start: Int) throws(ContainerError) -> Value {
        switch name {
        case "integer": return try integer(content, at: start)
        case "real": return try real(content, at: start)
        case "date": return try date(content, at: start)
        default: return try data(content, at: start)
        }
    }

    /// Decimal or `0x` hex, with an optional sign, as Foundation reads it; above `Int64.max` a double.
    func integer(_ content: String, at start: Int) throws(ContainerError) -> Value {
        guard !content.isEmpty else { throw error("empty <integer>", at: start) }
        let b = Array(content.utf8)
        var k = 0
        // Whitespace before the sign and before the digits is skipped, as Foundation does (not after them).
        func skipWhitespace() { while k < b.count, Self.isSpace(b[k]) { k += 1 } }
        skipWhitespace()
        var negative = false
        if k < b.count, b[k] == 0x2D || b[k] == 0x2B {
            negative = b[k] == 0x2D
            k += 1
            skipWhitespace()
        }
        var radix: UInt64 = 10
        if k + 1 < b.count, b[k] == 0x30, b[k + 1] == 0x78 || b[k + 1] == 0x58 {
            radix = 16
            k += 2
        }
        guard k < b.count else { throw error("'\(content)' is not an integer", at: start) }
        var magnitude: UInt64 = 0
        while k < b.count {
            guard let digit = Self.digitValue(b[k]), digit < radix else {
                throw error("'\(content)' is not an integer", at: start)
            }
            let (shifted, overflow) = magnitude.multipliedReportingOverflow(by: radix)
            let (sum, carry) = shifted.addingReportingOverflow(digit)
            guard !overflow, !carry else { throw error("integer '\(content)' is out of range", at: start) }
            magnitude = sum
            k += 1
        }
        if negative {
            guard magnitude <= UInt64(Int64.max) + 1 else {
                throw error("integer '\(content)' is out of range", at: start)
            }
            return .int(magnitude == UInt64(Int64.max) + 1 ? .min : -Int64(magnitude))
        }
        return magnitude <= UInt64(Int64.max) ? .int(Int64(magnitude)) : .double(Double(magnitude))
    }

    /// The value of an ASCII hex digit (`0`–`9`, `a`–`f`, `A`–`F`); `nil` for any other byte.
    static func digitValue(_ b: UInt8) -> UInt64? {
        switch b {
        case 0x30...0x39: return UInt64(b - 0x30)
        case 0x61...0x66: return UInt64(b - 0x61 + 10)
        case 0x41...0x46: return UInt64(b - 0x41 + 10)
        default: return nil
        }
    }

    static func isWhitespace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }

    /// C's `isspace` (XML's whitespace and vertical tab and form feed), which Foundation skips before a number.
    static func isSpace(_ b: UInt8) -> Bool { isWhitespace(b) || b == 0x0B || b == 0x0C }

    /// A decimal real (`1.5`, `.5`, `1e3`); `nan` and `infinity` are read but refused, as JSON has neither.
    func real(_ content: String, at start: Int) throws(ContainerError) -> Value {
        guard !content.isEmpty else { throw error("empty <real>", at: start) }
        let b = Array(content.utf8)
        // Whitespace before the number is skipped (Foundation reads it with strtod), not after it.
        var k = 0
        while k < b.count, Self.isSpace(b[k]) { k += 1 }
        let first = k
        if k < b.count, b[k] == 0x2B || b[k] == 0x2D { k += 1 }
        let word = String(decoding: b[k...], as: UTF8.self).lowercased()
        if word == "nan" || word == "inf" || word == "infinity" {
            throw error("real number '\(content)' is not finite", at: start)
        }
        func digits() -> Int {
            let first = k
            while k < b.count, b[k] >= 0x30 && b[k] <= 0x39 { k += 1 }
            return k - first
        }
        var valid = digits() > 0
        if k < b.count, b[k] == 0x2E {
            k += 1
            valid = digits() > 0 || valid
        }
        if valid, k < b.count, b[k] == 0x65 || b[k] == 0x45 {
            k += 1
            if k < b.count, b[k] == 0x2B || b[k] == 0x2D { k += 1 }
            valid = digits() > 0
        }
        guard valid, k == b.count, let d = Double(String(decoding: b[first...], as: UTF8.self)) else {
            throw error("'\(content)' is not a real number", at: start)
        }
        guard d.isFinite else { throw error("real number '\(content)' is not finite", at: start) }
        return .double(d)
    }

    /// `YYYY-MM-DDThh:mm:ssZ` read as Foundation reads it (a year of any length, optionally negative; fields out of
    /// range roll over: `02-30` is 1 March), written as the binary reader writes a date.
    mutating func date(_ content: String, at start: Int) throws(ContainerError) -> Value {
        let b = Array(content.utf8)
        var k = 0
        func notADate() -> ContainerError {
            error("'\(content)' is not a date (YYYY-MM-DDThh:mm:ssZ)", at: start)
        }
        func expect(_ byte: UInt8) throws(ContainerError) {
            guard k < b.count, b[k] == byte else { throw notADate() }
            k += 1
        }
        func twoDigits() throws(ContainerError) -> Int {
            guard k + 1 < b.count, let high = Self.digitValue(b[k]), let low = Self.digitValue(b[k + 1]),
                high < 10, low < 10
            else { throw notADate() }
            k += 2
            return Int(high * 10 + low)
        }
        let negative = k < b.count && b[k] == 0x2D
        if negative { k += 1 }
        var year = 0
        while k < b.count, let digit = Self.digitValue(b[k]), digit < 10 {
            guard year < 100_000_000 else { throw notADate() }
            year = year * 10 + Int(digit)
            k += 1
        }
        try expect(0x2D)
        let month = try twoDigits()
        try expect(0x2D)
        let day = try twoDigits()
        try expect(0x54)
        let hour = try twoDigits()
        try expect(0x3A)
        let minute = try twoDigits()
        try expect(0x3A)
        let second = try twoDigits()
        try expect(0x5A)
        guard k == b.count else { throw notADate() }
        // Proleptic Gregorian days since 1970-01-01 (H. Hinnant's days_from_civil). As Foundation does: month 13 is
        // January of the next year, month 0 and months above 13 are January; days, hours, minutes and seconds roll.
        let months = (negative ? -year : year) * 12 + (month == 0 || month > 13 ? 1 : month) - 1
        var y = months >= 0 ? months / 12 : (months - 11) / 12
        let m = months - y * 12 + 1
        if m <= 2 { y -= 1 }
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        let days = era * 146_097 + dayOfEra - 719_468 + day - 1
        let seconds = Double(days) * 86_400 + Double(hour * 3_600 + minute * 60 + second)
        let formatter = dateFormatter ?? ISO8601DateFormatter()
        dateFormatter = formatter
        return .string(PropertyListReader.iso8601String(Date(timeIntervalSince1970: seconds), formatter: formatter))
    }

    /// Base64 as Foundation decodes it: whitespace between the characters, each group of four giving three bytes
    /// less one per `=` that ends it, an incomplete last group dropped; kept as the canonical base64 of its bytes.
    func data(_ content: String, at start: Int) throws(ContainerError) -> Value {
        var bytes: [UInt8] = []
        var accumulator: UInt32 = 0
        var count = 0
        var padding = 0
        for scalar in content.unicodeScalars {
            let sextet: UInt32
            switch scalar {
            case " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}": continue
            case "=":
                padding += 1
                sextet = 0
            case "A"..."Z": sextet = scalar.value - 0x41
            case "a"..."z": sextet = scalar.value - 0x61 + 26
            case "0"..."9": sextet = scalar.value - 0x30 + 52
            case "+": sextet = 62
            case "/": sextet = 63
            default:
                throw error("invalid base64 character '\(scalar.escaped(asASCII: true))' in <data>", at: start)
            }
            if scalar != "=" { padding = 0 }
            accumulator = (accumulator << 6 | sextet) & 0xFF_FFFF
            count += 1
            if count % 4 == 0 {
                bytes.append(UInt8(accumulator >> 16))
                if padding < 2 { bytes.append(UInt8(accumulator >> 8 & 0xFF)) }
                if padding < 1 { bytes.append(UInt8(accumulator & 0xFF)) }
            }
        }
        return .string(Data(bytes).base64EncodedString())
    }

    // MARK: Text

    /// Reads the start tag at `i` and the element's text: `""` for an empty element (`<string/>`).
    mutating func readElementText(_ name: String, opened start: Int) throws(ContainerError) -> String {
        let tag = try readStartTag()
        return tag.selfClosing ? "" : try readText(of: name, opened: start)
    }

    /// The text of the element `name` whose start tag ended at `i`, through its end tag: entities and
    /// character references decoded, CDATA kept as is, comments and processing instructions left out.
    mutating func readText(of name: String, opened: Int) throws(ContainerError) -> String {
        scratch.removeAll(keepingCapacity: true)
        var plain = true  // the text is the bytes between the tags, as they are
        let textStart = i
        while true {
            guard i < end else { throw endOfFileError(inside: name, opened: opened) }
            let b = p[i]
            if b == Byte.lt {
                if hasPrefix("</", at: i) {
                    let text = plain ? string(textStart, i) : scratchString()
                    try readEndTag(closing: name, opened: opened)
                    return text
                }
                if plain { try appendText(textStart, i) }
                plain = false
                if hasPrefix("<![CDATA[", at: i) {
                    let open = i
                    i += 9
                    let body = i
                    guard let close = find("]]>", from: i) else {
                        throw error(
                            "unexpected end of file inside CDATA that starts at \(opening(open, errorAt: end))",
                            at: end
                        )
                    }
                    try appendText(body, close)
                    i = close + 3
                } else if hasPrefix("<!--", at: i) || hasPrefix("<?", at: i) {
                    try skipCommentOrInstruction()
                } else {
                    throw error(
                        "unexpected element <\(tagName(at: i + 1))> inside <\(name)> (write '<' in text as &lt;)",
                        at: i
                    )
                }
            } else if b == Byte.amp {
                if plain { try appendText(textStart, i) }
                plain = false
                try appendEntity()
            } else if b >= 0x80 && !latin1 {
                guard let length = UTF8Validation.sequenceLength(p, at: i, end: end) else {
                    throw error("invalid utf-8 byte \(Self.hex(b)) in <\(name)>", at: i)
                }
                if !plain { scratch.append(contentsOf: UnsafeBufferPointer(start: p + i, count: length)) }
                i += length
            } else {
                if !plain { appendByte(b) }
                i += 1
            }
        }
    }

    /// Appends the raw text `start..<stop` (CDATA, or the text before an entity), checked.
    mutating func appendText(_ start: Int, _ stop: Int) throws(ContainerError) {
        var k = start
        while k < stop {
            let b = p[k]
            if b >= 0x80 && !latin1 {
                guard let length = UTF8Validation.sequenceLength(p, at: k, end: stop) else {
                    throw error("invalid utf-8 byte \(Self.hex(b)) in CDATA", at: k)
                }
                scratch.append(contentsOf: UnsafeBufferPointer(start: p + k, count: length))
                k += length
            } else {
                appendByte(b)
                k += 1
            }
        }
    }

    /// One byte of text: itself, or in ISO-8859-1 the UTF-8 of its character.
    mutating func appendByte(_ b: UInt8) {
        if b < 0x80 || !latin1 {
            scratch.append(b)
        } else {
            scratch.append(0xC0 | b >> 6)
            scratch.append(0x80 | b & 0x3F)
        }
    }

    /// `&lt;`, `&gt;`, `&amp;`, `&quot;`, `&apos;`, `&#N;` or `&#xH;` at `i`.
    mutating func appendEntity() throws(ContainerError) {
        let start = i
        var k = i + 1
        while k < end, k - start <= 12, p[k] != Byte.semicolon, p[k] != Byte.lt, p[k] != Byte.amp { k += 1 }
        guard k < end, p[k] == Byte.semicolon else {
            throw error("'&' does not start an entity (write '&' in text as &amp;)", at: start)
        }
        let entity = string(start + 1, k)
        let scalar: Unicode.Scalar?
        switch entity {
        case "lt": scalar = "<"
        case "gt": scalar = ">"
        case "amp": scalar = "&"
        case "quot": scalar = "\""
        case "apos": scalar = "'"
        default:
            guard entity.hasPrefix("#") else { throw error("unknown entity '&\(entity);'", at: start) }
            let hex = entity.hasPrefix("#x") || entity.hasPrefix("#X")
            let digits = entity.utf8.dropFirst(hex ? 2 : 1)
            // Digits only (no sign), at most eight of them.
            var code: UInt32 = 0
            for digit in digits {
                guard let value = Self.digitValue(digit), value < (hex ? 16 : 10), code < 0x1000_0000 else {
                    throw error("invalid character reference '&\(entity);'", at: start)
                }
                code = code * (hex ? 16 : 10) + UInt32(value)
            }
            guard !digits.isEmpty else { throw error("invalid character reference '&\(entity);'", at: start) }
            guard let valid = Unicode.Scalar(code) else {
                throw error("'&\(entity);' is not a unicode character", at: start)
            }
            scalar = valid
        }
        if let scalar { scratch.append(contentsOf: Array(String(scalar).utf8)) }
        i = k + 1
    }

    func scratchString() -> String { String(decoding: scratch, as: UTF8.self) }

    /// The text `start..<stop` as a string (ISO-8859-1 decoded when declared).
    func string(_ start: Int, _ stop: Int) -> String {
        let bytes = UnsafeBufferPointer(start: p + start, count: stop - start)
        guard latin1 else { return String(decoding: bytes, as: UTF8.self) }
        var out = ""
        out.unicodeScalars.append(contentsOf: bytes.map { Unicode.Scalar($0) })
        return out
    }

    // MARK: Markup

    /// Whitespace, comments and processing instructions; before the root, also the XML declaration (whose
    /// encoding is checked) and the document type declaration.
    mutating func skipMisc(declarationAllowed: Bool = false) throws(ContainerError) {
        while i < end {
            let b = p[i]
            if Self.isWhitespace(b) {
                i += 1
            } else if declarationAllowed, hasPrefix("<?xml", at: i) {
                let start = i
                try skipCommentOrInstruction()
                try checkEncoding(start, i)
            } else if hasPrefix("<!--", at: i) || hasPrefix("<?", at: i) {
                try skipCommentOrInstruction()
            } else if declarationAllowed, hasPrefix("<!DOCTYPE", at: i) || hasPrefix("<!doctype", at: i) {
                try skipDocumentType()
            } else {
                return
            }
        }
    }

    /// Skips the comment or processing instruction at `i`.
    mutating func skipCommentOrInstruction() throws(ContainerError) {
        let start = i
        let comment = hasPrefix("<!--", at: i)
        let terminator: StaticString = comment ? "-->" : "?>"
        guard let close = find(terminator, from: i + (comment ? 4 : 2)) else {
            let kind = comment ? "comment" : "processing instruction"
            throw error("unexpected end of file inside \(kind) that starts at \(opening(start, errorAt: end))", at: end)
        }
        i = close + terminator.utf8CodeUnitCount
    }

    /// Skips `<!DOCTYPE …>`, with an internal subset in brackets and quoted identifiers.
    mutating func skipDocumentType() throws(ContainerError) {
        let start = i
        var quote: UInt8 = 0
        var brackets = 0
        i += 9
        while i < end {
            let b = p[i]
            i += 1
            if quote != 0 {
                if b == quote { quote = 0 }
            } else if b == 0x22 || b == 0x27 {
                quote = b
            } else if b == 0x5B {
                brackets += 1
            } else if b == 0x5D {
                brackets = max(0, brackets - 1)
            } else if b == Byte.gt && brackets == 0 {
                return
            }
        }
        throw error(
            "unexpected end of file inside the document type declaration that starts at "
                + opening(start, errorAt: end),
            at: end
        )
    }

    /// The XML declaration `start..<stop`: UTF-8 (or ASCII, or none) is read as is, ISO-8859-1 decoded, any
    /// other encoding refused.
    mutating func checkEncoding(_ start: Int, _ stop: Int) throws(ContainerError) {
        guard let attribute = find("encoding", from: start, before: stop) else { return }
        var k = attribute + 8
        while k < stop, p[k] != 0x22, p[k] != 0x27 { k += 1 }
        guard k < stop else { return }
        let quote = p[k]
        let valueStart = k + 1
        var valueEnd = valueStart
        while valueEnd < stop, p[valueEnd] != quote { valueEnd += 1 }
        let encoding = string(valueStart, valueEnd).lowercased()
        switch encoding {
        case "utf-8", "utf8", "us-ascii", "ascii": break
        case "iso-8859-1", "iso_8859-1", "latin1", "latin-1": latin1 = true
        default:
            throw error(
                "the file declares encoding '\(string(valueStart, valueEnd))': property lists are read as utf-8 "
                    + "(or iso-8859-1); save it as utf-8",
                at: valueStart
            )
        }
    }

    /// Reads the start tag at `i` (attributes are allowed and ignored); `i` ends after its `>`.
    mutating func readStartTag() throws(ContainerError) -> (name: String, selfClosing: Bool) {
        let start = i
        let name = tagName(at: i + 1)
        i += 1 + name.utf8.count
        // The name ends at whitespace, `/` or `>` (`<true!/>` is no <true/>).
        guard i < end else { throw endOfFileError(inside: name, opened: start) }
        guard Self.isWhitespace(p[i]) || p[i] == Byte.slash || p[i] == Byte.gt else {
            let found = p[i] >= 0x21 && p[i] < 0x7F ? "'\(string(i, i + 1))'" : describe(at: i)
            throw error("expected whitespace, '/' or '>' after <\(name), found \(found)", at: i)
        }
        var quote: UInt8 = 0
        while i < end {
            let b = p[i]
            if quote != 0 {
                if b == quote { quote = 0 }
            } else if b == 0x22 || b == 0x27 {
                quote = b
            } else if b == Byte.gt {
                i += 1
                return (name, p[i - 2] == Byte.slash)
            } else if b == Byte.lt {
                throw error("the tag <\(name) that starts at \(opening(start, errorAt: i)) has no '>'", at: i)
            }
            i += 1
        }
        throw error(
            "unexpected end of file inside the tag <\(name) that starts at \(opening(start, errorAt: end))",
            at: end
        )
    }

    /// Reads `</name>` at `i`; any other end tag says which element it fails to close.
    mutating func readEndTag(closing name: String, opened: Int) throws(ContainerError) {
        let start = i
        let found = tagName(at: i + 2)
        guard found == name else {
            throw error(
                "'</\(found)>' does not close the <\(name)> that starts at \(opening(opened, errorAt: start))",
                at: start
            )
        }
        i += 2 + found.utf8.count
        while i < end, Self.isWhitespace(p[i]) { i += 1 }
        guard i < end else { throw endOfFileError(inside: name, opened: opened) }
        guard p[i] == Byte.gt else { throw error("expected '>' to end '</\(name)', found \(describe(at: i))", at: i) }
        i += 1
    }

    /// The element name at `offset` (letters, digits, `_`, `-`, `.`, `:`); empty when there is none.
    func tagName(at offset: Int) -> String {
        var k = offset
        while k < end, k - offset < 64 {
            let b = p[k]
            let isName =
                (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || (b >= 0x30 && b <= 0x39) || b == 0x5F
                || b == 0x2D || b == 0x2E || b == 0x3A
            guard isName else { break }
            k += 1
        }
        return offset < k ? string(offset, k) : ""
    }

    /// Whether the element named exactly `name` starts at `offset` (its name, then not another name byte).
    func nameIs(_ name: StaticString, at offset: Int) -> Bool {
        hasPrefix(name, at: offset) && tagName(at: offset).utf8.count == name.utf8CodeUnitCount
    }

    func hasPrefix(_ prefix: StaticString, at offset: Int) -> Bool {
        let count = prefix.utf8CodeUnitCount
        guard offset >= 0, offset + count <= end else { return false }
        return memcmp(p + offset, prefix.utf8Start, count) == 0
    }

    /// The offset of the next `terminator` at or after `offset` (and before `limit`).
    func find(_ terminator: StaticString, from offset: Int, before limit: Int? = nil) -> Int? {
        var k = offset
        let first = terminator.utf8Start[0]
        let stop = min(end, limit ?? end)
        while k < stop {
            if p[k] == first, hasPrefix(terminator, at: k) { return k }
            k += 1
        }
        return nil
    }

    // MARK: Positions

    mutating func beginNode(at offset: Int) -> Int32 {
        var keyOffset = -1
        if let top = frames.last, top.isDict, top.pendingKey != nil { keyOffset = top.pendingKeyOffset }
        return positions.begin(at: offset, keyOffset: keyOffset)
    }

    mutating func finishNode(_ node: Int32, isDict: Bool, childNodes: [Int32], keys: [String]) {
        positions.finish(node, isObject: isDict, children: childNodes, keys: keys)
    }

    // MARK: Errors

    /// The JSON pointer of the value being read: each open container's key or index of the value read in it.
    func valuePointer() -> String {
        var out = ""
        for frame in frames {
            if frame.isDict {
                // No key read yet (the innermost dictionary, between members): the dictionary's own pointer.
                guard let key = frame.pendingKey else { break }
                out = JSONPointer.appending(out, key)
            } else {
                out = JSONPointer.appending(out, String(frame.elements.count))
            }
        }
        return out
    }

    func error(_ message: String, at offset: Int) -> ContainerError {
        ContainerError(
            .syntax,
            message,
            file: file,
            pointer: valuePointer(),
            location: text.location(ofOffset: offset)
        )
    }

    func endOfFileError(inside name: String, opened: Int) -> ContainerError {
        error("unexpected end of file inside <\(name)> that starts at \(opening(opened, errorAt: end))", at: end)
    }

    func opening(_ offset: Int, errorAt errorOffset: Int) -> String { text.opening(offset, errorAt: errorOffset) }

    /// What is at `offset`, for "found …" messages: `'text'`, `<tag>`, `</tag>`, `end of file`, a byte.
    func describe(at offset: Int) -> String {
        guard offset < end else { return "end of file" }
        let b = p[offset]
        if hasPrefix("</", at: offset) { return "</\(tagName(at: offset + 2))>" }
        if b == Byte.lt { return "<\(tagName(at: offset + 1))>" }
        if b < 0x20 || b == 0x7F { return "control byte \(Self.hex(b))" }
        if b >= 0x80, !latin1, UTF8Validation.sequenceLength(p, at: offset, end: end) == nil {
            return "invalid utf-8 byte \(Self.hex(b))"
        }
        var k = offset
        while k < end, k - offset < 24, p[k] != Byte.lt, p[k] != 0x0A, p[k] != 0x0D { k += 1 }
        // Whole characters only.
        while !latin1, k < end, k > offset + 1, p[k] & 0xC0 == 0x80 { k -= 1 }
        return "'\(string(offset, k))'"
    }

    static func hex(_ b: UInt8) -> String { UTF8Validation.hex(b) }
}

private enum Byte {
    static let lt: UInt8 = 0x3C
    static let gt: UInt8 = 0x3E
    static let amp: UInt8 = 0x26
    static let slash: UInt8 = 0x2F
    static let semicolon: UInt8 = 0x3B
}
