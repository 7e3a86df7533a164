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
        var out = ""
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
        switch value {
        case .undefined, .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .double(let d):
            guard d.isFinite else {
                out += "null"
                return
            }
            let text = Value.jsNumberString(d)
            out += text
            if keepsNumberTypes, !text.utf8.contains(where: { $0 == 0x2E || $0 == 0x65 || $0 == 0x45 }) {
                out += ".0"
            }
        case .string(let s): writeString(s, into: &out)
        case .array(let list):
            out += "["
            for (i, element) in list.enumerated() {
                if i > 0 { out += "," }
                write(element, into: &out, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
            }
            out += "]"
        case .object(let map):
            out += "{"
            var first = true
            let keys = sortedKeys ? map.keys.sorted() : map.keys
            for key in keys {
                guard let element = map[key], !element.isUndefined else { continue }
                if !first { out += "," }
                first = false
                writeString(key, into: &out)
                out += ":"
                write(element, into: &out, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
            }
            out += "}"
        }
    }

    /// Appends `s` as a JSON string literal, escaping quotes, backslashes and control characters.
    public static func writeString(_ s: String, into out: inout String) {
        out += "\""
        var needsEscape = false
        for byte in s.utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {
            needsEscape = true
            break
        }
        if !needsEscape {
            out += s
        } else {
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case "\u{08}": out += "\\b"
                case "\u{0C}": out += "\\f"
                default:
                    if scalar.value < 0x20 {
                        let hex = String(scalar.value, radix: 16)
                        out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                    } else {
                        out.unicodeScalars.append(scalar)
                    }
                }
            }
        }
        out += "\""
    }
}

extension Value: CustomStringConvertible {
    /// The compact JSON text of the value (`undefined` prints as `undefined`).
    public var description: String {
        if case .undefined = self { return "undefined" }
        return JSONWriter.string(self)
    }
}
