/// Writes ``Value``s as compact JSON text.
///
/// Keys keep their insertion order, integers stay integers, and non-finite numbers and `undefined`
/// (which JSON cannot express) are written as `null` (inside maps, undefined entries are left out).
public enum JSONWriter {
    /// Returns the compact JSON text of `value`.
    /// - Parameters:
    ///   - sortedKeys: write object members sorted by key instead of in insertion order.
    ///   - keepsNumberTypes: write whole floating-point numbers with a fraction (`2.0`, not JavaScript's
    ///     `2`), so that reading the text back gives `.double` again, not `.int`.
    public static func string(_ value: Value, sortedKeys: Bool = false, keepsNumberTypes: Bool = false) -> String {
        String(decoding: bytes(value, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes), as: UTF8.self)
    }

    /// Returns the UTF-8 bytes of ``string(_:sortedKeys:keepsNumberTypes:)`` (for an HTTP body or a file,
    /// without making a `String` first).
    public static func bytes(_ value: Value, sortedKeys: Bool = false, keepsNumberTypes: Bool = false) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(value, into: &out, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
        return out
    }

    /// Appends the compact JSON text of `value` to `out` (see ``string(_:sortedKeys:keepsNumberTypes:)``).
    public static func write(
        _ value: Value,
        into out: inout String,
        sortedKeys: Bool = false,
        keepsNumberTypes: Bool = false
    ) {
        out += string(value, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
    }

    /// Appends the compact JSON text of `value` to `out` as UTF-8 bytes (see
    /// ``string(_:sortedKeys:keepsNumberTypes:)``). Growing a byte array is much cheaper than growing a
    /// `String` piece by piece, so every other writing method goes through this one.
    public static func write(
        _ value: Value,
        into out: inout [UInt8],
        sortedKeys: Bool = false,
        keepsNumberTypes: Bool = false
    ) {
        switch value {
        case .undefined, .null: append("null", to: &out)
        case .bool(let b): append(b ? "true" : "false", to: &out)
        case .int(let i): appendInteger(i, to: &out)
        case .double(let d):
            guard d.isFinite else {
                append("null", to: &out)
                return
            }
            let text = Value.jsNumberString(d)
            out.append(contentsOf: text.utf8)
            if keepsNumberTypes, !text.utf8.contains(where: { $0 == 0x2E || $0 == 0x65 || $0 == 0x45 }) {
                append(".0", to: &out)
            }
        case .string(let s): writeString(s, into: &out)
        case .array(let list):
            out.append(0x5B)
            for (i, element) in list.enumerated() {
                if i > 0 { out.append(0x2C) }
                write(element, into: &out, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
            }
            out.append(0x5D)
        case .object(let map):
            out.append(0x7B)
            var first = true
            if sortedKeys {
                for key in map.keys.sorted() {
                    guard let element = map[key], !element.isUndefined else { continue }
                    if !first { out.append(0x2C) }
                    first = false
                    writeString(key, into: &out)
                    out.append(0x3A)
                    write(element, into: &out, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
                }
            } else {
                for (key, element) in map where !element.isUndefined {
                    if !first { out.append(0x2C) }
                    first = false
                    writeString(key, into: &out)
                    out.append(0x3A)
                    write(element, into: &out, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
                }
            }
            out.append(0x7D)
        }
    }

    /// Appends `s` as a JSON string literal, escaping quotes, backslashes and control characters.
    public static func writeString(_ s: String, into out: inout String) {
        var bytes: [UInt8] = []
        writeString(s, into: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// Appends `s` as a JSON string literal (UTF-8 bytes), escaping quotes, backslashes and control
    /// characters.
    public static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(0x22)
        var text = s
        text.withUTF8 { utf8 in
            var start = 0
            for (i, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
                start = i + 1
                switch byte {
                case 0x22: append("\\\"", to: &out)
                case 0x5C: append("\\\\", to: &out)
                case 0x0A: append("\\n", to: &out)
                case 0x0D: append("\\r", to: &out)
                case 0x09: append("\\t", to: &out)
                case 0x08: append("\\b", to: &out)
                case 0x0C: append("\\f", to: &out)
                default:
                    append("\\u00", to: &out)
                    out.append(hexDigits[Int(byte >> 4)])
                    out.append(hexDigits[Int(byte & 0xF)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        out.append(0x22)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    private static func append(_ literal: StaticString, to out: inout [UInt8]) {
        literal.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(0x2D) }
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[23 - count] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            } while magnitude > 0
            out.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(24 - count)...]))
        }
    }
}

extension Value: CustomStringConvertible {
    /// The compact JSON text of the value (`undefined` prints as `undefined`).
    public var description: String {
        if case .undefined = self { return "undefined" }
        return JSONWriter.string(self)
    }
}
