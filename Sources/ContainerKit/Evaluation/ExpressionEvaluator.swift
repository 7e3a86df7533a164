/// Something that gives the value of macro `index` (the evaluator memoises; constant folding has none).
protocol MacroResolver {
    mutating func resolve(macro index: Int) -> Value
    /// Whether a template prints nothing for a `null` or undefined part, as gtm.js's `parts.join("")` does (web
    /// containers); otherwise it prints `String(part)`.
    var templatesJoinLikeJavaScript: Bool { get }
}

/// Evaluates compiled expressions. Generic over the resolver so the hot path is specialised.
enum ExpressionEvaluator {
    static func evaluate<R: MacroResolver>(_ expr: Expr, _ resolver: inout R) -> Value {
        switch expr {
        case .literal(let value): return value
        case .macro(let index): return resolver.resolve(macro: index)
        case .template(let parts):
            var out = ""
            for part in parts {
                let value = evaluate(part, &resolver)
                if resolver.templatesJoinLikeJavaScript, value == .null || value.isUndefined { continue }
                out += value.jsString
            }
            return .string(out)
        case .list(let items):
            var out: [Value] = []
            out.reserveCapacity(items.count)
            for item in items { out.append(evaluate(item, &resolver)) }
            return .array(out)
        case .map(let entries):
            return .object(evaluateMap(entries, &resolver))
        case .escape(let inner, let codes):
            return escape(evaluate(inner, &resolver), codes: codes)
        case .tag, .unresolved:
            return .undefined
        }
    }

    /// Evaluates a map expression; entries whose value is undefined are left out.
    static func evaluateMap<R: MacroResolver>(_ entries: [Expr.MapEntry], _ resolver: inout R) -> ValueMap {
        var map = ValueMap(minimumCapacity: entries.count)
        // Compiled maps have distinct constant keys (`Expr.distinctMap`): when every key is constant, each
        // entry is appended without searching the map.
        var constantKeys = true
        for entry in entries {
            guard case .literal(.string) = entry.key else {
                constantKeys = false
                break
            }
        }
        if constantKeys {
            for entry in entries {
                guard case .literal(.string(let key)) = entry.key else { continue }
                let value = evaluate(entry.value, &resolver)
                if !value.isUndefined { map.appendNew(key, value) }
            }
            return map
        }
        for entry in entries {
            let value = evaluate(entry.value, &resolver)
            if value.isUndefined { continue }
            let key: String
            if case .literal(.string(let s)) = entry.key {
                key = s
            } else {
                key = evaluate(entry.key, &resolver).jsString
            }
            map[key] = value
        }
        return map
    }

    /// GTM's escaping codes as gtm.js applies them (`case "escape"`): the value is made a string first
    /// (`String(d)`: undefined is `"undefined"`), then each code in order — 7 escapes it for a JavaScript string
    /// (`"` → `\x22`, `<` → `\x3c`, a line break → `\n`, …), 8 makes it a JavaScript string literal (`'…'`, escaped
    /// as 7), 12 is `encodeURIComponent` with `'`, `(` and `)` encoded too, 16 (and any other) leaves it.
    static func escape(_ value: Value, codes: [Int]) -> Value {
        var text = value.jsString
        for code in codes {
            switch code {
            case 7: text = escapeJavaScript(text)
            case 8: text = "'" + escapeJavaScript(text) + "'"
            case 12: text = percentEncode(text)
            default: continue
            }
        }
        return .string(text)
    }

    /// gtm.js's escape 7: the characters of `/[\x00\x08-\x0d\x22\x26\x27\/\x3c-\x3e\\\x85\u2028\u2029]/g`, each
    /// as its table gives it.
    static func escapeJavaScript(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for ch in s.unicodeScalars {
            switch ch {
            case "\u{00}": out += "\\x00"
            case "\u{08}": out += "\\x08"
            case "\t": out += "\\t"
            case "\n": out += "\\n"
            case "\u{0B}": out += "\\x0b"
            case "\u{0C}": out += "\\f"
            case "\r": out += "\\r"
            case "\"": out += "\\x22"
            case "&": out += "\\x26"
            case "'": out += "\\x27"
            case "/": out += "\\/"
            case "<": out += "\\x3c"
            case "=": out += "\\x3d"
            case ">": out += "\\x3e"
            case "\\": out += "\\\\"
            case "\u{85}": out += "\\x85"
            case "\u{2028}": out += "\\u2028"
            case "\u{2029}": out += "\\u2029"
            default: out.unicodeScalars.append(ch)
            }
        }
        return out
    }

    /// gtm.js's escape 12: `encodeURIComponent`, then `'`, `(` and `)` as `%27`, `%28`, `%29`.
    static func percentEncode(_ s: String) -> String {
        var out = ""
        let hex = Array("0123456789ABCDEF".utf8)
        for byte in s.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x5F, 0x2E, 0x21, 0x7E, 0x2A:
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out.unicodeScalars.append("%")
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte >> 4)]))
                out.unicodeScalars.append(Unicode.Scalar(hex[Int(byte & 0x0F)]))
            }
        }
        return out
    }
}

/// Evaluates expressions that read no macro (compile-time folding).
enum ConstantEvaluator: MacroResolver {
    case instance
    mutating func resolve(macro index: Int) -> Value { .undefined }
    /// Not known at folding time: ``ExpressionFolding`` leaves a template with a `null` or undefined part unfolded.
    var templatesJoinLikeJavaScript: Bool { false }

    static func value(of expr: Expr) -> Value {
        var resolver = ConstantEvaluator.instance
        return ExpressionEvaluator.evaluate(expr, &resolver)
    }
}
