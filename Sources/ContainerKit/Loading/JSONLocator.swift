/// Finds the byte offset of the value at a JSON pointer by scanning JSON text, without building values.
///
/// Used by ``SourceDocument/locate(_:)`` when positions were not recorded. The text has already been parsed
/// successfully, so the scanner can be simple; it still checks every bound, so it cannot crash.
/// Duplicate keys resolve as in the parser: the last occurrence wins.
enum JSONLocator {
    /// The offsets of the value at `pointer` and, for object members, of its key.
    static func find(_ pointer: String, in text: SourceText) -> (value: Int, key: Int?)? {
        guard let tokens = JSONPointer.tokens(of: pointer) else { return nil }
        return text.bytes.withUnsafeBufferPointer { buffer -> (value: Int, key: Int?)? in
            guard let base = buffer.baseAddress else { return nil }
            var scanner = Scanner(p: base, end: buffer.count, i: text.valueStart)
            return scanner.find(tokens)
        }
    }

    private struct Scanner {
        let p: UnsafePointer<UInt8>
        let end: Int
        var i: Int

        mutating func find(_ tokens: [String]) -> (value: Int, key: Int?)? {
            skipWhitespace()
            var found: (value: Int, key: Int?) = (i, nil)
            for token in tokens {
                guard i < end else { return nil }
                if p[i] == 0x7B {
                    guard let member = findMember(token) else { return nil }
                    found = member
                } else if p[i] == 0x5B {
                    guard let index = JSONPointer.arrayIndex(token), let element = findElement(index) else {
                        return nil
                    }
                    found = (element, nil)
                } else {
                    return nil
                }
                i = found.value
            }
            return found
        }

        /// `i` is at `{`: the last member named `key` (compared by bytes, like the parser's maps do).
        mutating func findMember(_ token: String) -> (value: Int, key: Int?)? {
            let key = Array(token.utf8)
            i += 1
            var found: (value: Int, key: Int?)?
            var scratch: [UInt8] = []
            while true {
                skipWhitespace()
                guard i < end else { return found }
                if p[i] == 0x7D { return found }
                if p[i] == 0x2C {
                    i += 1
                    continue
                }
                guard p[i] == 0x22 else { return found }
                let keyOffset = i
                guard readString(into: &scratch) else { return found }
                skipWhitespace()
                guard i < end, p[i] == 0x3A else { return found }
                i += 1
                skipWhitespace()
                // Equal bytes are equal keys (canonically equivalent strings are two keys, as in JavaScript).
                if scratch == key {
                    found = (i, keyOffset)
                }
                guard skipValue() else { return found }
            }
        }

        /// `i` is at `[`: the offset of element `index`.
        mutating func findElement(_ index: Int) -> Int? {
            i += 1
            var count = 0
            while true {
                skipWhitespace()
                guard i < end, p[i] != 0x5D else { return nil }
                if p[i] == 0x2C {
                    i += 1
                    continue
                }
                if count == index { return i }
                guard skipValue() else { return nil }
                count += 1
            }
        }

        mutating func skipWhitespace() {
            while i < end, p[i] == 0x20 || p[i] == 0x0A || p[i] == 0x0D || p[i] == 0x09 { i += 1 }
        }

        /// Skips one value (with everything nested in it); `false` at the end of the text.
        mutating func skipValue() -> Bool {
            var depth = 0
            repeat {
                guard i < end else { return false }
                switch p[i] {
                case 0x22:
                    guard skipString() else { return false }
                case 0x7B, 0x5B:
                    depth += 1
                    i += 1
                case 0x7D, 0x5D:
                    depth -= 1
                    i += 1
                case 0x2C, 0x3A, 0x20, 0x0A, 0x0D, 0x09:
                    i += 1
                default:
                    // A number or literal: up to the next delimiter.
                    while i < end {
                        let b = p[i]
                        if b == 0x2C || b == 0x7D || b == 0x5D || b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 {
                            break
                        }
                        i += 1
                    }
                }
            } while depth > 0
            return true
        }

        /// `i` is at `"`: moves past the closing quote.
        mutating func skipString() -> Bool {
            i += 1
            while i < end {
                switch p[i] {
                case 0x22:
                    i += 1
                    return true
                case 0x5C: i += 2
                default: i += 1
                }
            }
            return false
        }

        /// `i` is at `"`: decodes the string's UTF-8 into `out` and moves past the closing quote.
        mutating func readString(into out: inout [UInt8]) -> Bool {
            out.removeAll(keepingCapacity: true)
            i += 1
            while i < end {
                let b = p[i]
                if b == 0x22 {
                    i += 1
                    return true
                }
                guard b == 0x5C else {
                    out.append(b)
                    i += 1
                    continue
                }
                guard i + 1 < end else { return false }
                let c = p[i + 1]
                i += 2
                switch c {
                case 0x62: out.append(0x08)
                case 0x66: out.append(0x0C)
                case 0x6E: out.append(0x0A)
                case 0x72: out.append(0x0D)
                case 0x74: out.append(0x09)
                case 0x75:
                    guard var scalar = hex4() else { return false }
                    if scalar >= 0xD800, scalar <= 0xDBFF, i + 1 < end, p[i] == 0x5C, p[i + 1] == 0x75 {
                        i += 2
                        guard let low = hex4() else { return false }
                        scalar = 0x10000 &+ ((scalar &- 0xD800) &<< 10) &+ (low &- 0xDC00)
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { return false }
                    out.append(contentsOf: String(Character(unicode)).utf8)
                default: out.append(c)
                }
            }
            return false
        }

        mutating func hex4() -> UInt32? {
            guard i + 4 <= end else { return nil }
            var result: UInt32 = 0
            for _ in 0..<4 {
                let b = p[i]
                let digit: UInt32
                switch b {
                case 0x30...0x39: digit = UInt32(b - 0x30)
                case 0x41...0x46: digit = UInt32(b - 0x41 + 10)
                case 0x61...0x66: digit = UInt32(b - 0x61 + 10)
                default: return nil
                }
                result = result << 4 | digit
                i += 1
            }
            return result
        }
    }
}
