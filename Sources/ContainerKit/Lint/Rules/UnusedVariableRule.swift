/// Variables (macros) that no tag, trigger or other variable reads.
///
/// Built-in variables are never reported: those of exports, their compiled forms (`__e`, `__ai`, `__an`,
/// …, and suggested Firebase event parameters, `__md` with `eventType` `SUGGESTED`) and unnamed macros
/// of compiled resources (web gtm.js drops names; GTM adds unnamed macros its own code reads). Named
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
            """#
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
        var findings: [LintFinding] = []
        for (i, macro) in program.macros.enumerated() where !used[i] && !Self.isBuiltIn(i, program) {
            if case .constant = macro.kind, !input.configuration.reportUnusedConstants { continue }
            let message = "variable \(program.macroLabel(i)) is not used by any tag, trigger or variable"
            findings.append(input.finding(Self.description, message, at: macro.origin.pointer))
        }
        return findings
    }

    /// Whether macro `index` is a built-in variable rather than one a person defined.
    private static func isBuiltIn(_ index: Int, _ program: Program) -> Bool {
        let macro = program.macros[index]
        if program.isExportBuiltIn(index) || macro.name == nil { return true }
        switch macro.kind {
        case .builtIn, .eventName: return true
        case .eventParameter:
            return macro.parameters.contains { $0.key == "eventType" && $0.value.literalText == "SUGGESTED" }
        default: return false
        }
    }
}
