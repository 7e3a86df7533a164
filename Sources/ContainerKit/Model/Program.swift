/// The compiled, format-independent form of a container: every reference resolved to an index,
/// patterns compiled, rules indexed by the event names they require. Immutable once built.
package struct Program: Sendable {
    package var macros: [MacroDef] = []
    package var predicates: [PredicateDef] = []
    package var rules: [RuleDef] = []
    package var tags: [TagDef] = []
    /// Flat value-collection entries (legacy default containers), read by the typed getters.
    package var flatValues: ValueMap = ValueMap()
    /// Macro index by display name, for typed getters and `{{Name}}` lookups.
    package var macroByName: [String: Int] = [:]
    /// Rules whose `if` clause requires an exact event name, by that name.
    package var rulesByEvent: [String: [Int]] = [:]
    /// Rules that may pass for any event (no exact event-name requirement), in container order.
    package var unindexedRules: [Int] = []
    /// Tags in firing order: priority descending, then container order.
    package var tagOrder: [Int] = []
    /// Web semantics: string conditions compare an undefined operand as the text `undefined` instead of
    /// failing, numeric conditions convert with JavaScript's `Number()`, and a lookup table's repeated key
    /// takes its last row (decided once at compile time from ``ContainerPlatform``).
    package var undefinedComparesAsText = false
    /// The Firebase short event names (`_vs`) and the long ones `__e` reports for them (`screen_view`): a v5
    /// container's own table, from its runtime's `__e_main`; ``TemplateCatalog/firebaseEventNames`` for a mobile
    /// container without one; empty for a web container, whose `__e` reports the name as pushed.
    package var firebaseEventNames: [String: String] = [:]
}

/// A compiled value expression (a container literal, `["macro", i]`, `["template", …]`, …).
package indirect enum Expr: Sendable {
    case literal(Value)
    case macro(Int)
    case template([Expr])
    case list([Expr])
    case map([MapEntry])
    case escape(Expr, [Int])
    /// `["tag", index, stopOnFailure]`, only inside setup/teardown lists.
    case tag(Int, Int)
    /// A `{{Name}}` reference that names nothing (export format); evaluates to undefined.
    case unresolved(String)

    package struct MapEntry: Sendable {
        package var key: Expr
        package var value: Expr
    }

    /// A map expression whose constant string keys are distinct: a repeated constant key keeps its first
    /// position and takes its last value (what inserting the entries in order would give). Every map the
    /// compilers build goes through here, so the evaluator may append constant keys without searching.
    package static func distinctMap(_ entries: [MapEntry]) -> Expr {
        var position: [String: Int] = [:]
        var out: [MapEntry] = []
        out.reserveCapacity(entries.count)
        for entry in entries {
            if case .literal(.string(let key)) = entry.key {
                if let existing = position[key] {
                    out[existing].value = entry.value
                    continue
                }
                position[key] = out.count
            }
            out.append(entry)
        }
        return .map(out)
    }

    /// Whether the expression reads no macro (its value is fixed at compile time).
    package var isConstant: Bool {
        switch self {
        case .literal, .tag, .unresolved: return true
        case .macro: return false
        case .template(let parts), .list(let parts): return parts.allSatisfy(\.isConstant)
        case .map(let entries): return entries.allSatisfy { $0.key.isConstant && $0.value.isConstant }
        case .escape(let inner, _): return inner.isConstant
        }
    }

    /// Every macro index the expression reads, in order of appearance.
    package func forEachMacro(_ body: (Int) -> Void) {
        switch self {
        case .literal, .tag, .unresolved: return
        case .macro(let i): body(i)
        case .template(let parts), .list(let parts): for p in parts { p.forEachMacro(body) }
        case .map(let entries):
            for e in entries {
                e.key.forEachMacro(body)
                e.value.forEachMacro(body)
            }
        case .escape(let inner, _): inner.forEachMacro(body)
        }
    }
}

/// Where a part of the container came from in the source document.
package struct Origin: Sendable {
    /// JSON pointer to the part (e.g. `/resource/macros/3`, `/containerVersion/variable/2`).
    package var pointer: String
}

package struct MacroDef: Sendable {
    package var function: String
    package var name: String?
    package var kind: MacroKind
    /// Every `vtp_`/export parameter, compiled (for traces and lint).
    package var parameters: [(key: String, value: Expr)] = []
    package var format: ValueFormat = ValueFormat()
    package var origin: Origin

    /// Whether the macro is evaluated again at each reference (a function-call variable: its handler is asked each
    /// time, as GTM's runtimes do), not once per event.
    package var isEvaluatedPerReference: Bool {
        switch kind {
        case .functionCall, .legacyFunctionCall: return true
        default: return false
        }
    }
}

/// GTM's value conversions applied after a macro computes its value (`convert_null_to`, export `formatValue`).
package struct ValueFormat: Sendable {
    package enum CaseConversion: Sendable { case lowercase, uppercase }
    package var caseConversion: CaseConversion?
    package var convertNullTo: Expr?
    package var convertUndefinedTo: Expr?
    package var convertTrueTo: Expr?
    package var convertFalseTo: Expr?

    package var isEmpty: Bool {
        caseConversion == nil && convertNullTo == nil && convertUndefinedTo == nil && convertTrueTo == nil
            && convertFalseTo == nil
    }
}

package enum BuiltIn: String, Sendable, CaseIterable {
    case containerID, containerVersion, random, appID, appName, appVersionCode, appVersionName
    case platform, language, osVersion, sdkVersion, deviceName, resolution
    case advertisingTrackingEnabled, advertiserID, eventNumber
}

/// The parameters of a URL (`__u`) or Referrer (`__f`) variable, as gtm.js reads them.
package struct URLVariable: Sendable {
    /// `vtp_component` as written: `URL` (or none) for the whole URL, else a part gtm.js names (`HOST`, `PATH`,
    /// `QUERY`, `FRAGMENT`, `PROTOCOL`, `PORT`, `EXTENSION`).
    package var component: String
    package var stripWww: Expr?
    package var defaultPages: Expr?
    package var queryKey: Expr?
    /// `vtp_multiQueryKeys`: the query key is a list (or a comma-separated text) of keys, the first present wins.
    package var multipleQueryKeys: Expr?
    /// `vtp_ignoreEmptyQueryParam`: with several keys, a key whose value is empty is passed over.
    package var ignoresEmptyQueryValue: Expr?
    /// `vtp_customUrlSource` (`__u` only): the URL to read instead of the page's, when it is truthy.
    package var customSource: Expr?

    package init(
        component: String,
        stripWww: Expr? = nil,
        defaultPages: Expr? = nil,
        queryKey: Expr? = nil,
        multipleQueryKeys: Expr? = nil,
        ignoresEmptyQueryValue: Expr? = nil,
        customSource: Expr? = nil
    ) {
        self.component = component
        self.stripWww = stripWww
        self.defaultPages = defaultPages
        self.queryKey = queryKey
        self.multipleQueryKeys = multipleQueryKeys
        self.ignoresEmptyQueryValue = ignoresEmptyQueryValue
        self.customSource = customSource
    }
}

package enum MacroKind: Sendable {
    case eventName
    /// `__md`: a key of the pushed message; a dotted key missing as such walks nested maps along
    /// `nestedPath` (the key split at its dots; empty for a key without one, see
    /// ``TemplateCatalog/nestedPath(_:)``). With `checksEcommerce` (a suggested parameter with
    /// `checkEcommerceValue`), a missing undotted key is looked up in `items[0]`, then `promotions[0]`, as the
    /// container runtime's `__md` does.
    case eventParameter(key: String, nestedPath: [String], defaultValue: Expr?, checksEcommerce: Bool = false)
    /// `__v` version 2: a value of the merged model by dotted path: the member `name` when `nestedPath` is
    /// empty (a name without a dot), else along `nestedPath`.
    case dataLayer(name: String, nestedPath: [String], defaultValue: Expr?)
    /// `__v` version 1 (also when the version is missing): the last raw value pushed under the literal
    /// key `name`, dots and all, without merging.
    case rawDataLayer(name: String, defaultValue: Expr?)
    /// `__v` whose name holds a variable reference (`{{prefix}}id`): the name is evaluated first, then read
    /// as ``dataLayer(name:path:defaultValue:)`` (version 2) or ``rawDataLayer(name:defaultValue:)`` does.
    case computedDataLayer(name: Expr, version: Int, defaultValue: Expr?)
    /// `__fup`: a Firebase user property of the session (``DataLayer/setUserProperty(_:forKey:)``).
    case userProperty(key: String, defaultValue: Expr?)
    case constant(Expr)
    case builtIn(BuiltIn)
    /// `__smm`: first row whose key equals the input (string forms, case-sensitive).
    case lookupTable(input: Expr, rows: [(key: Expr, value: Expr)], defaultValue: Expr?)
    /// `__remm`: first row whose pattern matches the input.
    /// `options` and `fullMatch`: how a row's key becomes its pattern (kept for keys that read a variable).
    case regexTable(
        input: Expr,
        rows: [RegexRow],
        replace: Bool,
        defaultValue: Expr?,
        options: RegexPattern.Options,
        fullMatch: Bool
    )
    /// `__funcm`: calls the registered macro handler for the class path.
    case functionCall(classPath: Expr, arguments: Expr)
    /// Legacy `_func` macro: calls the handler registered under the function name.
    case legacyFunctionCall(name: String, arguments: Expr)
    /// `__u`: the page's URL or a part of it (Page URL, Page Hostname, Page Path, a URL variable), or of the URL its
    /// custom source gives. The page's URL is the data layer's `gtm.url` (version 1) when pushed, else the
    /// session's ``ClientContext/pageURL``; undefined when neither is known.
    indirect case url(URLVariable)
    /// `__f`: the referrer or a part of it: the data layer's `gtm.referrer` (version 1), else the session's
    /// ``ClientContext/referrer``; undefined when neither is known.
    indirect case referrer(URLVariable)
    /// `__k`: the value of the first cookie named `name` (URI-decoded with `decodes`): of the data layer's
    /// `gtm.cookie` (version 1) when pushed, else of the session's ``ClientContext/cookies``; undefined when neither
    /// is known.
    indirect case cookie(name: Expr, decodes: Expr?)
    /// A macro type ContainerKit cannot evaluate on a server (`__jsm`, `__d`, `__k`, …): undefined.
    case unsupported

    package struct RegexRow: Sendable {
        /// The row's pattern as written (a constant key); `""` for a key that reads a variable.
        package var source: String
        /// The compiled pattern (with GTM's full-match anchors); `nil` when the key does not compile or reads a
        /// variable.
        package var pattern: RegexPattern?
        package var value: Expr
        /// A key that reads a variable (`{{Path Prefix}}.*`): evaluated, and compiled as a pattern, per event.
        package var variableKey: Expr? = nil
    }
}

package enum PredicateOperator: String, Sendable, CaseIterable {
    case equals = "_eq", contains = "_cn", startsWith = "_sw", endsWith = "_ew", regex = "_re"
    case lessThan = "_lt", lessOrEquals = "_le", greaterThan = "_gt", greaterOrEquals = "_ge"
    /// `_lc` (web): the comma-separated list `String(arg0)` has an element equal to `String(arg1)`.
    case listContains = "_lc"
    /// `_css`, `_u`, … : web-only operators, always false here.
    case unsupported

    package var isNumeric: Bool {
        switch self {
        case .lessThan, .lessOrEquals, .greaterThan, .greaterOrEquals: return true
        default: return false
        }
    }

    /// A word for traces: "equals", "contains", ….
    package var phrase: String {
        switch self {
        case .equals: return "equals"
        case .contains: return "contains"
        case .startsWith: return "starts with"
        case .endsWith: return "ends with"
        case .regex: return "matches regex"
        case .lessThan: return "<"
        case .lessOrEquals: return "<="
        case .greaterThan: return ">"
        case .greaterOrEquals: return ">="
        case .listContains: return "list contains"
        case .unsupported: return "(unsupported operator)"
        }
    }
}

package struct PredicateDef: Sendable {
    package var function: String
    package var op: PredicateOperator
    package var arg0: Expr
    package var arg1: Expr
    package var ignoreCase: Bool
    /// Export conditions may be negated; compiled resources express negation with `unless`.
    package var negate: Bool
    /// The compiled pattern for `_re` with a constant `arg1`; `nil` if it is invalid or not constant.
    package var pattern: RegexPattern?
    /// The compile error of a constant invalid pattern (``RegexPatternError/isUnsupported`` tells a pattern
    /// JavaScript refuses from one this engine does not run).
    package var patternError: RegexPatternError?
    package var origin: Origin
    /// The string form of a constant right side, lowercased under `ignoreCase` (computed once at load).
    package var constantText: String? = nil
    /// Whether the left side is the plain event-name macro, which the evaluator reads without a lookup.
    package var testsEventName = false
    /// `any_of` (web): with a list on the right, the predicate holds when it holds for any element.
    package var anyOf = false
}

package struct RuleDef: Sendable {
    package var ifs: [Int] = []
    package var unless: [Int] = []
    package var add: [Int] = []
    package var block: [Int] = []
    /// A label for traces: the export trigger name, or `rule N`.
    package var name: String?
    package var origin: Origin
}

package struct TagDef: Sendable {
    package enum Kind: Sendable {
        case functionCall(classPath: Expr, arguments: Expr)
        case legacyFunctionCall(name: String, arguments: Expr)
        case paused
        /// A tag type ContainerKit does not run: reported as unsupported.
        case unsupported
    }

    package struct Sequenced: Sendable {
        package var tag: Int
        package var stopOnFailure: Bool
    }

    package var function: String
    package var tagID: Int?
    package var name: String?
    package var kind: Kind
    package var priority: Double = 0
    package var oncePerEvent = false
    package var oncePerLoad = false
    package var setupTags: [Sequenced] = []
    package var teardownTags: [Sequenced] = []
    package var parameters: [(key: String, value: Expr)] = []
    /// The consent types GTM checks before firing the tag (compiled `consent`, export `consentSettings`
    /// with status `NEEDED`): the tag runs only when the session's ``ConsentState`` grants them all.
    package var consentTypes: [String] = []
    package var origin: Origin
}
