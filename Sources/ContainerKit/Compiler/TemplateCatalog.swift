/// Builds macro kinds and tag kinds from a template code and its parameters. Both formats use it: the
/// compiled resource passes its `vtp_` parameters (prefix removed), the export its parameter list.
package enum TemplateCatalog {
    /// Firebase's short auto-event names and the full names GTM's `__e` reports for them.
    static let firebaseEventNames: [String: String] = [
        "_f": "first_open", "_v": "first_visit", "_iap": "in_app_purchase", "_e": "user_engagement",
        "_s": "session_start", "_ssr": "session_start_with_rollout", "_au": "app_update", "_ui": "app_remove",
        "_ab": "app_background", "_ou": "os_update", "_cd": "app_clear_data", "_ae": "app_exception",
        "_nf": "notification_foreground", "_nr": "notification_receive", "_no": "notification_open",
        "_nd": "notification_dismiss", "_cmp": "firebase_campaign", "_cmpx": "invalid_campaign",
        "_vs": "screen_view", "_ar": "ad_reward", "_asr": "app_store_refund",
        "_assc": "app_store_subscription_convert", "_assr": "app_store_subscription_renew",
        "_asse": "app_store_subscription_cancel",
    ]

    /// The short-name table of a v5 container's own `__e`: its runtime's `__e_main` sets
    /// `b = {"_f": "first_open", …}` (an object literal, opcode 8, of string pairs) and reports `b[name] || name`.
    /// Containers built at different times carry different tables (an older one has no `_vs`); `nil` when the
    /// runtime has no such function.
    static func firebaseEventNames(inRuntime runtime: Value?) -> [String: String]? {
        guard case .array(let functions)? = runtime else { return nil }
        for case .array(let function) in functions where function.count > 2 && function[1] == "__e_main" {
            return firstStringTable(in: .array(function))
        }
        return nil
    }

    /// The first object literal (`[8, key, value, …]`) of string pairs in `code`, depth first.
    private static func firstStringTable(in code: Value) -> [String: String]? {
        guard case .array(let items) = code else { return nil }
        if items.count >= 3, items.count % 2 == 1, case .int(8) = items[0] {
            var table: [String: String] = [:]
            var index = 1
            while index + 1 < items.count, case .string(let key) = items[index],
                case .string(let value) = items[index + 1]
            {
                table[key] = value
                index += 2
            }
            if index == items.count { return table }
        }
        for item in items {
            if let table = firstStringTable(in: item) { return table }
        }
        return nil
    }

    /// Built-in macro codes (compiled `__x` and legacy `_x`) and what they read.
    static let builtIns: [String: BuiltIn] = [
        "cid": .containerID, "ctv": .containerVersion, "r": .random, "ai": .appID, "an": .appName,
        "av": .appVersionCode, "avn": .appVersionName, "p": .platform, "l": .language, "ov": .osVersion,
        "sv": .sdkVersion, "dn": .deviceName, "rs": .resolution, "ate": .advertisingTrackingEnabled,
        "aid": .advertiserID, "gtmv": .sdkVersion, "rv": .sdkVersion,
    ]

    /// The auto-event variable types (`__aev` `varType`) that read a `gtm.*` value of the event, and its key.
    static let autoEventKeys: [String: String] = [
        "ELEMENT": "element", "CLASSES": "elementClasses", "ID": "elementId", "TARGET": "elementTarget",
        "HISTORY_CHANGE_SOURCE": "historyChangeSource", "HISTORY_NEW_STATE": "newHistoryState",
        "HISTORY_NEW_URL_FRAGMENT": "newUrlFragment", "HISTORY_OLD_STATE": "oldHistoryState",
        "HISTORY_OLD_URL_FRAGMENT": "oldUrlFragment",
    ]

    /// Macro codes that only make sense in a browser or need JavaScript.
    static let browserMacros: Set<String> = [
        "jsm", "d", "aev", "j", "awec", "gtes", "gtcs", "ctv_web", "vis",
        "ed", "rh", "hid", "ev",
    ]

    /// The code without its `__` or `_` prefix: `__md` → `md`, `_func` → `func`.
    package static func bareCode(_ function: String) -> String {
        if function.hasPrefix("__") { return String(function.dropFirst(2)) }
        if function.hasPrefix("_") { return String(function.dropFirst(1)) }
        return function
    }

    package static func literalString(_ expr: Expr?) -> String? {
        if case .literal(let value)? = expr {
            switch value {
            case .undefined, .null: return nil
            default: return value.jsString
            }
        }
        return nil
    }

    /// The pattern of a regex-table row whose key is `key`: with full match, `^` + key + `$` as gtm.js builds it
    /// (`new RegExp("^" + key + "$")`), not grouped — so in `a|b` the anchors bind to the first and the last
    /// alternative only, as in GTM.
    package static func regexTablePattern(_ key: String, fullMatch: Bool) -> String {
        fullMatch ? "^" + key + "$" : key
    }

    /// Whether `expr` is a variable reference or a template holding one (`{{prefix}}id`).
    static func readsAVariable(_ expr: Expr) -> Bool {
        switch expr {
        case .macro: return true
        case .template(let parts): return parts.contains(where: readsAVariable)
        default: return false
        }
    }

    static func literalBool(_ expr: Expr?) -> Bool? {
        if case .literal(let value)? = expr {
            switch value {
            case .bool(let b): return b
            case .string(let s): return s == "true" ? true : (s == "false" ? false : nil)
            case .int(let i): return i != 0
            default: return nil
            }
        }
        return nil
    }

    static func literalNumber(_ expr: Expr?) -> Double? {
        if case .literal(let value)? = expr { return value.jsNumber }
        return nil
    }

    /// The default-value expression when `setDefaultValue` is on.
    static func defaultValue(_ params: [String: Expr]) -> Expr? {
        guard literalBool(params["setDefaultValue"]) == true else { return nil }
        return params["defaultValue"] ?? .literal(.undefined)
    }

    /// A parameter list as a lookup table; a repeated key keeps its first value.
    static func lookup(_ parameters: [(key: String, value: Expr)]) -> [String: Expr] {
        Dictionary(parameters, uniquingKeysWith: { first, _ in first })
    }

    /// The macro kind for template `function` with `parameters` (unknown templates are unsupported).
    static func macroKind(
        function: String,
        parameters: [(key: String, value: Expr)],
        pointer: String,
        output: inout CompilerOutput
    ) -> MacroKind {
        let params = lookup(parameters)
        let code = bareCode(function)
        switch code {
        case "e": return .eventName
        case "md":
            var key = literalString(params["key"])
            let eventType = literalString(params["eventType"])
            if eventType == "SUGGESTED" {
                // `__md_main`: the first data key, in order, that ends in `Param` and holds a value.
                key = parameters.lazy.filter { $0.key.hasSuffix("Param") }.compactMap { literalString($0.value) }.first
            }
            guard let key, !key.isEmpty else {
                output.noteUnsupported(
                    "event parameter variable without a constant key (it evaluates to undefined)",
                    pointer: pointer
                )
                return .constant(.literal(.undefined))
            }
            return .eventParameter(
                key: key,
                nestedPath: nestedPath(key),
                defaultValue: defaultValue(params),
                checksEcommerce: eventType == "SUGGESTED" && literalBool(params["checkEcommerceValue"]) == true
            )
        case "v":
            if let nameExpr = params["name"], readsAVariable(nameExpr) {
                // `{{prefix}}id`: GTM resolves the reference, then reads the name it made.
                let version = literalNumber(params["dataLayerVersion"]) ?? 1
                return .computedDataLayer(
                    name: nameExpr,
                    version: version == 1 ? 1 : 2,
                    defaultValue: defaultValue(params)
                )
            }
            guard let name = literalString(params["name"]).map(dataLayerName), !name.isEmpty else {
                output.noteUnsupported(
                    "data layer variable without a constant name (it evaluates to undefined)",
                    pointer: pointer
                )
                return .constant(.literal(.undefined))
            }
            // GTM reads version 1 when the field is missing.
            let version = literalNumber(params["dataLayerVersion"]) ?? 1
            if version == 1 { return .rawDataLayer(name: name, defaultValue: defaultValue(params)) }
            return .dataLayer(name: name, nestedPath: nestedPath(name), defaultValue: defaultValue(params))
        case "fup":
            guard let key = literalString(params["key"]), !key.isEmpty else {
                output.noteUnsupported(
                    "user property variable without a constant key (it evaluates to undefined)",
                    pointer: pointer
                )
                return .constant(.literal(.undefined))
            }
            return .userProperty(key: key, defaultValue: defaultValue(params))
        case "c":
            return .constant(params["value"] ?? .literal(.undefined))
        case "dbg":
            // Debug Mode: true only in GTM's preview, which a server is not (an export's DEBUG_MODE likewise).
            return .constant(.literal(.bool(false)))
        case "uv":
            // Undefined Value: gtm.js's `__uv` returns undefined, here as on a page.
            return .constant(.literal(.undefined))
        case "smm":
            return .lookupTable(
                input: params["input"] ?? .literal(.undefined),
                rows: tableRows(params["map"], keyColumn: "key", valueColumn: "value"),
                defaultValue: defaultValue(params)
            )
        case "remm":
            let ignoreCase = literalBool(params["ignoreCase"]) ?? false
            let fullMatch = literalBool(params["fullMatch"]) ?? false
            let options: RegexPattern.Options = ignoreCase ? .ignoreCase : []
            var rows: [MacroKind.RegexRow] = []
            for row in tableRows(params["map"], keyColumn: "key", valueColumn: "value") {
                guard readsAVariable(row.key) else {
                    let source = literalString(row.key) ?? ""
                    let pattern = try? RegexPattern(
                        Self.regexTablePattern(source, fullMatch: fullMatch),
                        options: options
                    )
                    rows.append(MacroKind.RegexRow(source: source, pattern: pattern, value: row.value))
                    continue
                }
                rows.append(MacroKind.RegexRow(source: "", pattern: nil, value: row.value, variableKey: row.key))
            }
            return .regexTable(
                input: params["input"] ?? .literal(.undefined),
                rows: rows,
                replace: literalBool(params["replaceAfterMatch"]) ?? false,
                defaultValue: defaultValue(params),
                options: options,
                fullMatch: fullMatch
            )
        case "aev":
            // An auto-event variable reads the event's `gtm.*` value its listener pushed (gtm.js: `gtm[key] !== undefined
            // ? gtm[key] : vtp_defaultValue`); the types that read the page (text, attributes, a URL's parts, a form's
            // fields) stay browser-only.
            let type = literalString(params["varType"]) ?? ""
            guard let key = autoEventKeys[type] else {
                output.noteUnsupported(
                    "browser-only variable type '\(function)' (\(type.isEmpty ? "no type" : type))",
                    pointer: pointer
                )
                return .unsupported
            }
            let name = "gtm." + key
            return .dataLayer(name: name, nestedPath: nestedPath(name), defaultValue: params["defaultValue"])
        case "u", "f":
            let variable = URLVariable(
                component: literalString(params["component"]) ?? "URL",
                stripWww: params["stripWww"],
                defaultPages: params["defaultPages"],
                queryKey: params["queryKey"],
                multipleQueryKeys: params["multiQueryKeys"],
                ignoresEmptyQueryValue: params["ignoreEmptyQueryParam"],
                customSource: code == "u" ? params["customUrlSource"] : nil
            )
            return code == "u" ? .url(variable) : .referrer(variable)
        case "k":
            return .cookie(name: params["name"] ?? .literal(.string("")), decodes: params["decodeCookie"])
        case "funcm":
            return .functionCall(
                classPath: params["classPath"] ?? .literal(.undefined),
                arguments: argumentTable(params["functionArgument"])
            )
        case "func":
            let name = literalString(params["function_call_macro_name"]) ?? ""
            return .legacyFunctionCall(name: name, arguments: params["additional_params"] ?? .map([]))
        default:
            if let builtIn = builtIns[code] { return .builtIn(builtIn) }
            let what: String
            if browserMacros.contains(code) {
                what = "browser-only variable type '\(function)'"
            } else if code == "gas" {
                // Mobile containers use GA Settings too (for `__ua` tags): not browser-only, just not run here.
                what = "Google Analytics settings variable type '\(function)'"
            } else {
                what = output.templateLabel("variable type", function)
            }
            output.noteUnsupported(what, pointer: pointer)
            return .unsupported
        }
    }

    /// The tag kind for template `function` with `params`.
    static func tagKind(
        function: String,
        parameters: [(key: String, value: Expr)],
        pointer: String,
        output: inout CompilerOutput
    ) -> TagDef.Kind {
        let params = lookup(parameters)
        switch bareCode(function) {
        case "funct":
            return .functionCall(
                classPath: params["classPath"] ?? .literal(.undefined),
                arguments: argumentTable(params["functionArgument"])
            )
        case "func":
            return .legacyFunctionCall(
                name: literalString(params["function_call_macro_name"]) ?? "",
                arguments: params["additional_params"] ?? .map([])
            )
        case "paused":
            return .paused
        default:
            output.noteUnsupported(output.templateLabel("tag type", function), pointer: pointer)
            return .unsupported
        }
    }

    /// A GTM table (`["list", ["map", "key", K, "value", V], …]`) as a map expression `{K: V, …}`.
    /// Anything else is kept as it is (a macro that yields a map, for instance).
    static func argumentTable(_ expr: Expr?) -> Expr {
        guard let expr else { return .map([]) }
        switch expr {
        case .list:
            let rows = tableRows(expr, keyColumn: "key", valueColumn: "value")
            return .distinctMap(rows.map { Expr.MapEntry(key: $0.key, value: $0.value) })
        case .literal(.array(let list)):
            return argumentTable(.list(list.map { Expr.literal($0) }))
        case .literal(.undefined), .literal(.null):
            return .map([])
        default:
            return expr
        }
    }

    /// The rows of a table parameter: each row a map with a key column and a value column.
    static func tableRows(_ expr: Expr?, keyColumn: String, valueColumn: String) -> [(key: Expr, value: Expr)] {
        var rows: [(key: Expr, value: Expr)] = []
        let elements: [Expr]
        switch expr {
        case .list(let items)?: elements = items
        case .literal(.array(let items))?: elements = items.map { .literal($0) }
        default: return []
        }
        for element in elements {
            switch element {
            case .map(let entries):
                var key: Expr?
                var value: Expr?
                for entry in entries {
                    switch literalString(entry.key) {
                    case keyColumn?: key = entry.value
                    case valueColumn?: value = entry.value
                    default: continue
                    }
                }
                if let key { rows.append((key, value ?? .literal(.undefined))) }
            case .literal(.object(let map)):
                if let key = map[keyColumn] { rows.append((.literal(key), .literal(map[valueColumn] ?? .undefined))) }
            default:
                continue
            }
        }
        return rows
    }

    /// A data-layer variable's name as gtm.js's `__v` reads it: an escaped dot (`a\.b`, as GTM's help suggests for
    /// a key with dots) is a dot (`name.replace(/\\\./g, ".")`), so `a\.b` reads what `a.b` reads.
    static func dataLayerName(_ name: String) -> String {
        name.contains("\\.") ? name.replacingAll("\\.", with: ".") : name
    }

    static func splitPath(_ key: String) -> [String] {
        key.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    /// `key` split at its dots when it has any; otherwise empty. A variable's path is read on every push by
    /// every session: an array of one segment would have its reference count written by all of them (a
    /// cache line every core shares), the empty array's count is never written, and the key itself is the
    /// one segment.
    static func nestedPath(_ key: String) -> [String] {
        let path = splitPath(key)
        return path.count > 1 ? path : []
    }

    /// The predicate operator for a compiled code (`_eq`) or an export condition type (`EQUALS`, `equals`).
    static func predicateOperator(_ name: String) -> PredicateOperator {
        if let op = PredicateOperator(rawValue: name), op != .unsupported { return op }
        switch name.uppercased().replacingAll("_", with: "") {
        case "EQUALS": return .equals
        case "CONTAINS": return .contains
        case "STARTSWITH": return .startsWith
        case "ENDSWITH": return .endsWith
        case "MATCHREGEX": return .regex
        case "GREATER": return .greaterThan
        case "GREATEROREQUALS": return .greaterOrEquals
        case "LESS": return .lessThan
        case "LESSOREQUALS": return .lessOrEquals
        default: return .unsupported
        }
    }

    /// Builds a predicate, compiling its pattern when the right side is a constant.
    static func predicate(
        function: String,
        op: PredicateOperator,
        arg0: Expr,
        arg1: Expr,
        ignoreCase: Bool,
        negate: Bool,
        pointer: String,
        output: inout CompilerOutput
    ) -> PredicateDef {
        var def = PredicateDef(
            function: function,
            op: op,
            arg0: arg0,
            arg1: arg1,
            ignoreCase: ignoreCase,
            negate: negate,
            pattern: nil,
            patternError: nil,
            origin: Origin(pointer: pointer)
        )
        if op == .unsupported { output.noteUnsupported("condition operator '\(function)'", pointer: pointer) }
        if op == .regex, case .literal(let literal) = arg1 {
            do {
                def.pattern = try RegexPattern(literal.jsString, options: ignoreCase ? .ignoreCase : [])
            } catch {
                def.patternError = error
            }
        }
        return def
    }
}
