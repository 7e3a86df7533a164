/// Where the values of a JSON text are, found without building them: the members of an object, the elements of
/// an array, each as a range of bytes to parse on its own.
///
/// It checks the structure only — strings closed, brackets and braces nested and matched, commas and colons
/// between values — with a loop and a stack of bytes, so no nesting depth can exhaust it. What each span holds
/// is for the parser to judge. ``BatchRequest`` uses it to read a batch event by event when one of the events
/// nests deeper than the limit, so that only that event is refused.
struct JSONSpans {
    let bytes: [UInt8]

    /// The span of the one value of the text (whitespace around it allowed), or `nil`.
    func document() -> Range<Int>? {
        let start = skipWhitespace(from: 0)
        guard let end = valueEnd(from: start), skipWhitespace(from: end) == bytes.count else { return nil }
        return start..<end
    }

    /// The members of the object `span` (from `{` to `}`): the span of each key (quotes included) and of its
    /// value, in order; `nil` when `span` is not an object.
    func members(of span: Range<Int>) -> [(key: Range<Int>, value: Range<Int>)]? {
        guard span.count >= 2, bytes[span.lowerBound] == UInt8(ascii: "{") else { return nil }
        var members: [(key: Range<Int>, value: Range<Int>)] = []
        var index = skipWhitespace(from: span.lowerBound + 1)
        if index == span.upperBound - 1, bytes[index] == UInt8(ascii: "}") { return members }
        while index < span.upperBound {
            guard bytes[index] == UInt8(ascii: "\""), let keyEnd = valueEnd(from: index) else { return nil }
            let colon = skipWhitespace(from: keyEnd)
            guard colon < span.upperBound, bytes[colon] == UInt8(ascii: ":") else { return nil }
            let valueStart = skipWhitespace(from: colon + 1)
            guard let valueEnd = valueEnd(from: valueStart), valueEnd < span.upperBound else { return nil }
            members.append((index..<keyEnd, valueStart..<valueEnd))
            let next = skipWhitespace(from: valueEnd)
            guard next < span.upperBound else { return nil }
            if bytes[next] == UInt8(ascii: "}") { return next == span.upperBound - 1 ? members : nil }
            guard bytes[next] == UInt8(ascii: ",") else { return nil }
            index = skipWhitespace(from: next + 1)
        }
        return nil
    }

    /// The span of each element of the array `span` (from `[` to `]`), in order; `nil` when `span` is not an
    /// array.
    func elements(of span: Range<Int>) -> [Range<Int>]? {
        guard span.count >= 2, bytes[span.lowerBound] == UInt8(ascii: "[") else { return nil }
        var elements: [Range<Int>] = []
        var index = skipWhitespace(from: span.lowerBound + 1)
        if index == span.upperBound - 1, bytes[index] == UInt8(ascii: "]") { return elements }
        while index < span.upperBound {
            guard let end = valueEnd(from: index), end < span.upperBound else { return nil }
            elements.append(index..<end)
            let next = skipWhitespace(from: end)
            guard next < span.upperBound else { return nil }
            if bytes[next] == UInt8(ascii: "]") { return next == span.upperBound - 1 ? elements : nil }
            guard bytes[next] == UInt8(ascii: ",") else { return nil }
            index = skipWhitespace(from: next + 1)
        }
        return nil
    }

    /// The end of the value that starts at `start`: after its closing quote, bracket or brace, or after the last
    /// byte of a number or literal; `nil` when the structure is broken before its end.
    func valueEnd(from start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return stringEnd(from: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var closers: [UInt8] = [bytes[start] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")]
            var index = start + 1
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(from: index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"): closers.append(UInt8(ascii: "}"))
                case UInt8(ascii: "["): closers.append(UInt8(ascii: "]"))
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    guard closers.last == bytes[index] else { return nil }
                    closers.removeLast()
                    if closers.isEmpty { return index + 1 }
                default: break
                }
                index += 1
            }
            return nil
        case UInt8(ascii: "}"), UInt8(ascii: "]"), UInt8(ascii: ","), UInt8(ascii: ":"):
            return nil
        default:
            var index = start
            while index < bytes.count, !Self.endsScalar(bytes[index]) { index += 1 }
            return index > start ? index : nil
        }
    }

    /// After the closing quote of the string that starts at `start`.
    private func stringEnd(from start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }

    private func skipWhitespace(from start: Int) -> Int {
        var index = start
        while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
        return index
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func endsScalar(_ byte: UInt8) -> Bool {
        isWhitespace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "}") || byte == UInt8(ascii: "]")
            || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "{")
            || byte == UInt8(ascii: "[")
    }
}
