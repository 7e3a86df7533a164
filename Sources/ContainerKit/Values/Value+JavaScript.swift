/// JavaScript-style conversions, used wherever GTM compares or renders values.
extension Value {
    /// The string JavaScript's `String(value)` would give: `42` → `"42"`, `true` → `"true"`,
    /// `undefined` → `"undefined"`, a list → its elements joined by commas, a map → `"[object Object]"`.
    public var jsString: String {
        switch self {
        case .undefined: return "undefined"
        case .null: return "null"
        case .bool(let b): return b ? "true" : "false"
        case .int(let i): return String(i)
        case .double(let d): return Value.jsNumberString(d)
        case .string(let s): return s
        case .array(let list):
            var out = ""
            for (i, element) in list.enumerated() {
                if i > 0 { out += "," }
                switch element {
                case .undefined, .null: break
                default: out += element.jsString
                }
            }
            return out
        case .object: return "[object Object]"
        }
    }

    /// The number a numeric comparison sees, or `nil` when the value is not numeric.
    ///
    /// Numbers are themselves; strings are numeric when, after trimming spaces, they are a decimal
    /// literal (`"42"`, `"-1.5"`, `"1e3"`). Booleans, empty strings, lists and maps are not numeric,
    /// so a numeric predicate against them is false.
    public var jsNumber: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d.isNaN ? nil : d
        case .string(let s): return Value.parseDecimal(s)
        default: return nil
        }
    }

    /// GTM's boolean reading of a value: `true`, non-zero numbers and the string `"true"` (any case).
    public var gtmBool: Bool {
        switch self {
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .double(let d): return d != 0 && !d.isNaN
        case .string(let s): return s.lowercased() == "true"
        default: return false
        }
    }

    /// Renders a double the way JavaScript's `Number.prototype.toString` does (ECMA-262 Number::toString):
    /// the shortest digits that read back as the same double (Swift's `description` finds them), written
    /// as an integer or a decimal fraction while the decimal exponent lies in −7 < n ≤ 21, and in
    /// exponent form (`1e+21`, `1.5e-7`) outside it.
    static func jsNumberString(_ d: Double) -> String {
        if d.isNaN { return "NaN" }
        if d.isInfinite { return d < 0 ? "-Infinity" : "Infinity" }
        if d == 0 { return "0" }
        if d == d.rounded(), abs(d) < 1e18 { return String(Int64(d)) }
        // Swift's shortest round-trip form: "123.456", "1e-05", "1.2345678901234567e+19".
        var digits: [UInt8] = []
        digits.reserveCapacity(24)
        var pointPosition = 0  // digits before the decimal point, leading zeros dropped
        var exponent = 0
        var seenPoint = false
        var negativeExponent = false
        var inExponent = false
        for byte in d.description.utf8 {
            if inExponent {
                switch byte {
                case 0x2D: negativeExponent = true
                case 0x30...0x39: exponent = exponent * 10 + Int(byte - 0x30)
                default: break
                }
                continue
            }
            switch byte {
            case 0x2E: seenPoint = true
            case 0x65, 0x45: inExponent = true
            case 0x30...0x39:
                if digits.isEmpty && byte == 0x30 {
                    if seenPoint { pointPosition -= 1 }
                } else {
                    digits.append(byte)
                    if !seenPoint { pointPosition += 1 }
                }
            default: break
            }
        }
        while digits.count > 1, digits.last == 0x30 { digits.removeLast() }
        let n = pointPosition + (negativeExponent ? -exponent : exponent)
        let k = digits.count
        var out: [UInt8] = []
        out.reserveCapacity(k + 8)
        if d < 0 { out.append(0x2D) }
        if k <= n && n <= 21 {
            out += digits
            out += repeatElement(0x30, count: n - k)
        } else if 0 < n && n <= 21 {
            out += digits[..<n]
            out.append(0x2E)
            out += digits[n...]
        } else if -6 < n && n <= 0 {
            out += [0x30, 0x2E]
            out += repeatElement(0x30, count: -n)
            out += digits
        } else {
            out.append(digits[0])
            if k > 1 {
                out.append(0x2E)
                out += digits[1...]
            }
            out.append(0x65)
            out.append(n - 1 < 0 ? 0x2D : 0x2B)
            out += String(abs(n - 1)).utf8
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Parses a trimmed decimal literal without Foundation; `nil` if it is not one.
    static func parseDecimal(_ s: String) -> Double? {
        var utf8 = Substring(s).utf8[...]
        while let f = utf8.first, f == 0x20 || f == 0x09 || f == 0x0A || f == 0x0D { utf8 = utf8.dropFirst() }
        while let l = utf8.last, l == 0x20 || l == 0x09 || l == 0x0A || l == 0x0D { utf8 = utf8.dropLast() }
        guard !utf8.isEmpty else { return nil }
        // Only digits, one sign, one dot and an exponent are allowed; Double(_:) accepts "nan", "inf", hex.
        var sawDigit = false
        for byte in utf8 {
            switch byte {
            case 0x30...0x39: sawDigit = true
            case 0x2B, 0x2D, 0x2E, 0x45, 0x65: continue
            default: return nil
            }
        }
        guard sawDigit else { return nil }
        return Double(Substring(utf8))
    }
}
