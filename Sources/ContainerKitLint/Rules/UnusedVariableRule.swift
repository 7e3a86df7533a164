import ContainerKit

/// Variables (macros) that no tag, trigger or other variable reads.
///
/// Built-in variables are never reported: those of exports and their compiled forms (`__e`, `__ai`, `__an`,
/// …, suggested Firebase event parameters — `__md` with `eventType` `SUGGESTED` — and, in web gtm.js
/// data, the enabled built-ins: `gtm.*` data-layer reads, `__aev`, page URL and referrer parts without a
/// custom source, `__dbg`, …). Compiled gtm.js resources drop variable names, so their other unused
/// macros are reported by index and JSON pointer (`macro 176 ('__jsm')` at `/resource/macros/176`); so are
/// a first-party cookie variable (`__k`, a user variable, not a built-in) and an unnamed constant. Named
/// constants (`__c`, export type `c`) are skipped unless `report_unused_constants` is on: host apps may
/// read them through typed getters, as legacy value collections are read.
struct UnusedVariableRule: LintRule {
    static let description = RuleDescription(
        id: "unused_variable",
        name: "Unused Variable",
        description:
            "A variable is read by no tag, trigger or other variable (named constants are skipped by default).",
        severity: .warning,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e", "instance_name": "Event Name"},
              {"function": "__md", "instance_name": "Price", "vtp_key": "price", "vtp_eventType": "CUSTOM"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__v", "vtp_name": "cart.total",
              "vtp_dataLayerVersion": 2}, {"function": "__v", "vtp_name": "gtm.element", "vtp_dataLayerVersion": 1}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__k", "vtp_name": "session_cookie"},
              {"function": "__c", "vtp_value": "unnamed"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e", "instance_name": "Event Name"},
              {"function": "__c", "instance_name": "Banner Text", "vtp_value": "Welcome"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"}]}}
            """#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "variable": [{"name": "Greeting", "type": "c"}], "builtInVariable": [{"type": "EVENT", "name": "Event"}]}}
            """#,
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__aev", "vtp_varType": "TEXT"},
              {"function": "__v", "vtp_name": "gtm.element", "vtp_dataLayerVersion": 1}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let program = input.program, !program.macros.isEmpty else { return [] }
        let count = program.macros.count
        var used = Array(repeating: false, count: count)
        func mark(_ index: Int) { if index >= 0 && index < count { used[index] = true } }
        for i in 0..<count {
            program.forEachReference(ofMacro: i) { if $0 != i { mark($0) } }
        }
        for predicate in program.predicates {
            predicate.arg0.forEachMacro(mark)
            predicate.arg1.forEachMacro(mark)
        }
        for tag in program.tags {
            for parameter in tag.parameters { parameter.value.forEachMacro(mark) }
        }
        // A compiled paused tag keeps only its type (`__paused`, `vtp_originalTagType`): what it read is gone, so a
        // variable only it used looks unused.
        let paused = program.tags.contains { tag in
            if case .paused = tag.kind { return tag.function == "__paused" }
            return false
        }
        let tail = paused ? " (or only by a paused tag, whose fields a compiled container drops)" : ""
        var findings: [LintFinding] = []
        for (i, macro) in program.macros.enumerated() where !used[i] && !Self.isBuiltIn(i, program) {
            if case .constant = macro.kind, macro.name?.isEmpty == false, !input.configuration.reportUnusedConstants {
                continue
            }
            let message = "variable \(program.macroLabel(i)) is not used by any tag, trigger or variable\(tail)"
            findings.append(input.finding(Self.description, message, at: macro.origin.pointer))
        }
        return findings
    }

    /// Codes of web built-in variables as gtm.js compiles them (Click/Form/Error/Video…, Debug Mode, …).
    static let webBuiltInCodes: Set<String> = [
        "__aev", "__dbg", "__hid", "__ctv", "__cid", "__r", "__env", "__gtes", "__gtcs", "__ctv_web", "__vis",
        "__uv", "__ev", "__ed", "__rh",
    ]

    /// Whether macro `index` is a built-in variable rather than one a person defined.
    private static func isBuiltIn(_ index: Int, _ program: Program) -> Bool {
        let macro = program.macros[index]
        if program.isExportBuiltIn(index) { return true }
        if macro.name == nil, isUnnamedBuiltIn(macro) { return true }
        switch macro.kind {
        case .builtIn, .eventName: return true
        case .eventParameter:
            return macro.parameters.contains { $0.key == "eventType" && $0.value.literalText == "SUGGESTED" }
        default: return false
        }
    }

    /// Whether an unnamed macro (compiled gtm.js drops names) has the shape of an enabled built-in: a `gtm.*`
    /// data-layer read, a web built-in code, or a page URL or referrer part without a query key or custom
    /// source. User variables of those shapes are not reported (missing one is better than a false alarm).
    private static func isUnnamedBuiltIn(_ macro: MacroDef) -> Bool {
        if webBuiltInCodes.contains(macro.function) { return true }
        switch macro.kind {
        case .dataLayer(let name, _, _), .rawDataLayer(let name, _): return name.hasPrefix("gtm.")
        default: break
        }
        if macro.function == "__u" || macro.function == "__f" {
            return !macro.parameters.contains { $0.key == "queryKey" || $0.key == "customUrlSource" }
        }
        return false
    }
}
