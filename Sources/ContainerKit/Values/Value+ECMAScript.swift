/// ECMAScript conversions GTM's web runtime applies: `Number(value)` and truthiness.
extension Value {
    /// JavaScript's `Number(value)` (ECMA-262 ToNumber), what GTM's web runtime compares with `<`, `<=`,
    /// `>`, `>=`: `null`, `""`, `false` and `[]` are `0`; `true` is `1`; a string is trimmed of white
    /// space and read as a decimal literal, `Infinity`, or a `0x` / `0o` / `0b` integer; an array is read
    /// as its `String()` form (`[42]` → `42`); undefined, a map and any other string are `NaN`.
    package var jsToNumber: Double {
        switch self {
        case .undefined: return .nan
        case .null: return 0
        case .bool(let b): return b ? 1 : 0
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .string(let s): return Value.stringToNumber(s)
        case .array: return Value.stringToNumber(jsString)
        case .object: return .nan
        }
    }

    /// JavaScript's truthiness: `false`, `0`, `NaN`, `""`, `null` and undefined are false; everything else
    /// (objects and arrays included, even empty ones) is true.
    var isTruthy: Bool {
        switch self {
        case .undefined, .null: return false
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .double(let d): return d != 0 && !d.isNaN
        case .string(let s): return !s.isEmpty
        default: return true
        }
    }

    /// ECMA-262 StringToNumber.
    static func stringToNumber(_ s: String) -> Double {
        var scalars = Substring(s).unicodeScalars[...]
        while let f = scalars.first, isJSWhiteSpace(f) { scalars = scalars.dropFirst() }
        while let l = scalars.last, isJSWhiteSpace(l) { scalars = scalars.dropLast() }
        let text = Substring(scalars)
        if text.isEmpty { return 0 }
        switch text {
        case "Infinity", "+Infinity": return .infinity
        case "-Infinity": return -.infinity
        default: break
        }
        let bytes = Array(text.utf8)
        if bytes.count > 2, bytes[0] == 0x30 {
            let radix: Int
            switch bytes[1] {
            case 0x78, 0x58: radix = 16
            case 0x6F, 0x4F: radix = 8
            case 0x62, 0x42: radix = 2
            default: radix = 0
            }
            if radix != 0 {
                var value = 0.0
                for byte in bytes[2...] {
                    let digit: Int
                    switch byte {
                    case 0x30...0x39: digit = Int(byte - 0x30)
                    case 0x61...0x66: digit = Int(byte - 0x61) + 10
                    case 0x41...0x46: digit = Int(byte - 0x41) + 10
                    default: return .nan
                    }
                    guard digit < radix else { return .nan }
                    value = value * Double(radix) + Double(digit)
                }
                return value
            }
        }
        // StrDecimalLiteral: sign? (digits [. digits?] | . digits) ([eE] sign? digits)?
        var i = 0
        if bytes[i] == 0x2B || bytes[i] == 0x2D { i += 1 }
        var mantissaDigits = 0
        while i < bytes.count, (0x30...0x39).contains(bytes[i]) {
            i += 1
            mantissaDigits += 1
        }
        if i < bytes.count, bytes[i] == 0x2E {
            i += 1
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) {
                i += 1
                mantissaDigits += 1
            }
        }
        guard mantissaDigits > 0 else { return .nan }
        if i < bytes.count, bytes[i] == 0x65 || bytes[i] == 0x45 {
            i += 1
            if i < bytes.count, bytes[i] == 0x2B || bytes[i] == 0x2D { i += 1 }
            var exponentDigits = 0
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) {
                i += 1
                exponentDigits += 1
            }
            guard exponentDigits > 0 else { return .nan }
        }
        guard i == bytes.count else { return .nan }
        return Double(text) ?? .nan
    }

    /// ECMA-262 WhiteSpace and LineTerminator: what `Number()` trims.
    private static func isJSWhiteSpace(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F,
            0x3000, 0xFEFF:
            return true
        default:
            return false
        }
    }
}
