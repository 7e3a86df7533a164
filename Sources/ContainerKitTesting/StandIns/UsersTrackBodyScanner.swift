import ContainerKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Reads a `/users/track` body the way the stand-in needs it, in one pass over its bytes: checks that it is
/// one JSON object (every value well formed, nesting at most 64 deep), counts the elements of its
/// `events`, `purchases` and `attributes` arrays and collects the `title` property of each event object.
/// It builds no value tree (the stand-in runs in the benchmark's process, so its parsing is measured too).
package struct UsersTrackBodyScanner {
    /// What a body holds.
    package struct Summary: Equatable {
        package var events = 0
        package var purchases = 0
        package var attributes = 0
        package var titles: [String] = []

        /// Nothing counted.
        package init() {}
    }

    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0
    private static let maximumDepth = 64

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The summary of `body`, or `nil` when it is not one well-formed JSON object.
    package static func scan(_ body: UnsafeBufferPointer<UInt8>) -> Summary? {
        var scanner = UsersTrackBodyScanner(body)
        return scanner.body()
    }

    /// The summary of `body`, or `nil` when it is not one well-formed JSON object.
    package static func scan(_ body: [UInt8]) -> Summary? { body.withUnsafeBufferPointer { scan($0) } }

    private mutating func body() -> Summary? {
        var summary = Summary()
        skipSpace()
        let wellFormed = members { scanner, key in
            switch key.escaped ? nil : Self.topLevelKey(scanner.bytes, key.range) {
            case .events?:
                guard let count = scanner.array(collectingTitles: &summary.titles) else { return false }
                summary.events = count
            case .purchases?:
                var unused: [String] = []
                guard let count = scanner.array(collectingTitles: &unused, titles: false) else { return false }
                summary.purchases = count
            case .attributes?:
                var unused: [String] = []
                guard let count = scanner.array(collectingTitles: &unused, titles: false) else { return false }
                summary.attributes = count
            case nil:
                return scanner.value()
            }
            return true
        }
        guard wellFormed else { return nil }
        skipSpace()
        return index == bytes.count ? summary : nil
    }

    private enum TopLevelKey { case events, purchases, attributes }

    private static func topLevelKey(_ bytes: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> TopLevelKey? {
        let key = UnsafeBufferPointer(rebasing: bytes[range])
        if key.elementsEqual("events".utf8) { return .events }
        if key.elementsEqual("purchases".utf8) { return .purchases }
        if key.elementsEqual("attributes".utf8) { return .attributes }
        return nil
    }

    /// A top-level array's element count (0 when the value is not an array); with `titles`, the `title`
    /// property of each element that is an object.
    private mutating func array(collectingTitles found: inout [String], titles: Bool = true) -> Int? {
        guard peek == 0x5B else { return value() ? 0 : nil }
        index += 1
        guard enter() else { return nil }
        defer { depth -= 1 }
        skipSpace()
        if take(0x5D) { return 0 }
        var count = 0
        repeat {
            skipSpace()
            if titles && peek == 0x7B {
                guard eventObject(&found) else { return nil }
            } else {
                guard value() else { return nil }
            }
            count += 1
            skipSpace()
        } while take(0x2C)
        return take(0x5D) ? count : nil
    }

    /// An event object; its `properties.title`, when a string, goes to `found`.
    private mutating func eventObject(_ found: inout [String]) -> Bool {
        members { scanner, key in
            guard scanner.keyIs(key, "properties"), scanner.peek == 0x7B else { return scanner.value() }
            return scanner.members { scanner, key in
                guard scanner.keyIs(key, "title"), scanner.peek == 0x22 else { return scanner.value() }
                guard let title = scanner.string() else { return false }
                found.append(scanner.text(title))
                return true
            }
        }
    }

    private func keyIs(_ key: (range: Range<Int>, escaped: Bool), _ name: StaticString) -> Bool {
        guard !key.escaped else { return text(key).utf8.elementsEqual(name.utf8Buffer) }
        return key.range.count == name.utf8CodeUnitCount
            && memcmp(bytes.baseAddress! + key.range.lowerBound, name.utf8Start, key.range.count) == 0
    }

    /// An object at `index`, calling `member` for each member's value (with the key read).
    private mutating func members(
        _ member: (inout UsersTrackBodyScanner, (range: Range<Int>, escaped: Bool)) -> Bool
    ) -> Bool {
        guard take(0x7B), enter() else { return false }
        defer { depth -= 1 }
        skipSpace()
        if take(0x7D) { return true }
        repeat {
            skipSpace()
            guard let key = string() else { return false }
            skipSpace()
            guard take(0x3A) else { return false }
            skipSpace()
            guard member(&self, key) else { return false }
            skipSpace()
        } while take(0x2C)
        return take(0x7D)
    }

    // MARK: Values

    /// Skips one well-formed value.
    private mutating func value() -> Bool {
        guard let byte = peek else { return false }
        switch byte {
        case 0x22: return string() != nil
        case 0x7B: return members { scanner, _ in scanner.value() }
        case 0x5B:
            index += 1
            guard enter() else { return false }
            defer { depth -= 1 }
            skipSpace()
            if take(0x5D) { return true }
            repeat {
                skipSpace()
                guard value() else { return false }
                skipSpace()
            } while take(0x2C)
            return take(0x5D)
        case 0x74: return literal("true")
        case 0x66: return literal("false")
        case 0x6E: return literal("null")
        default: return number()
        }
    }

    private mutating func enter() -> Bool {
        depth += 1
        return depth <= Self.maximumDepth
    }

    private mutating func literal(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count,
            UnsafeBufferPointer(rebasing: bytes[index..<(index + count)]).elementsEqual(word.utf8Buffer)
        else { return false }
        index += count
        return true
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func number() -> Bool {
        _ = take(0x2D)
        guard let first = peek, Self.isDigit(first) else { return false }
        index += 1
        if first != 0x30 { skipDigits() }
        if take(0x2E) {
            guard let digit = peek, Self.isDigit(digit) else { return false }
            skipDigits()
        }
        if peek == 0x65 || peek == 0x45 {
            index += 1
            if peek == 0x2B || peek == 0x2D { index += 1 }
            guard let digit = peek, Self.isDigit(digit) else { return false }
            skipDigits()
        }
        return true
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private mutating func skipDigits() {
        while let byte = peek, Self.isDigit(byte) { index += 1 }
    }

    /// A string at `index`: the range of its contents and whether it holds escapes; `nil` when malformed.
    private mutating func string() -> (range: Range<Int>, escaped: Bool)? {
        guard take(0x22) else { return nil }
        let start = index
        var escaped = false
        while index < bytes.count {
            // The common bytes (neither a quote, a backslash nor a control character), eight at a time.
            index = JSONByteWriter.firstByteToEscape(in: bytes, from: index)
            guard index < bytes.count else { break }
            let byte = bytes[index]
            if byte == 0x22 {
                index += 1
                return (start..<(index - 1), escaped)
            }
            if byte < 0x20 { return nil }
            if byte == 0x5C {
                escaped = true
                index += 1
                guard let next = peek else { return nil }
                switch next {
                case 0x22, 0x5C, 0x2F, 0x62, 0x66, 0x6E, 0x72, 0x74: index += 1
                case 0x75:
                    guard index + 5 <= bytes.count,
                        bytes[(index + 1)..<(index + 5)].allSatisfy({ HexDigit.value($0) != nil })
                    else { return nil }
                    index += 5
                default: return nil
                }
                continue
            }
            index += 1
        }
        return nil
    }

    /// The text of a string read by ``string()``, escapes decoded (by the package's JSON parser: escaped
    /// strings are rare in these bodies).
    private func text(_ string: (range: Range<Int>, escaped: Bool)) -> String {
        let raw = UnsafeBufferPointer(rebasing: bytes[string.range])
        guard string.escaped else { return String(decoding: raw, as: UTF8.self) }
        let quoted = UnsafeBufferPointer(rebasing: bytes[(string.range.lowerBound - 1)..<(string.range.upperBound + 1)])
        guard case .string(let text)? = try? Value(jsonBytes: Array(quoted)) else { return "" }
        return text
    }

    // MARK: Bytes

    private var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func take(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }
}

extension StaticString {
    fileprivate var utf8Buffer: UnsafeBufferPointer<UInt8> {
        UnsafeBufferPointer(start: utf8Start, count: utf8CodeUnitCount)
    }
}
