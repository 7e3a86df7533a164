import ContainerKit
import Testing

private func lint(_ json: String, file: String = "GTM-DEPTH1.json") -> [LintFinding] {
    Linter().lint(bytes: Array(json.utf8), file: file)
}

/// Unused variables of compiled gtm.js resources, which have no names: reported by index and pointer.
struct UnnamedUnusedVariableTests {
    static let script = """
        // gtm.js
        (function(){
        var data = {"resource": {"version": "3",
          "macros": [{"function": "__e"},
                     {"function": "__v", "vtp_name": "cart.total", "vtp_dataLayerVersion": 2},
                     {"function": "__v", "vtp_name": "gtm.element", "vtp_dataLayerVersion": 1},
                     {"function": "__aev", "vtp_varType": "TEXT"},
                     {"function": "__u", "vtp_component": "URL"},
                     {"function": "__u", "vtp_component": "QUERY", "vtp_queryKey": "utm_source"},
                     {"function": "__v", "vtp_name": "user.id", "vtp_dataLayerVersion": 2}],
          "tags": [{"function": "__html", "tag_id": 1, "vtp_html": ["template", "<b>", ["macro", 6], "</b>"]}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.js"}],
          "rules": [[["if", 0], ["add", 0]]]}};
        })();
        """

    @Test func unusedUnnamedVariablesAreReportedByIndexAndPointer() throws {
        let findings = lint(Self.script, file: "GTM-DEPTH1.js").filter { $0.ruleID == "unused_variable" }
        #expect(findings.map(\.pointer) == ["/resource/macros/1", "/resource/macros/5"])
        #expect(findings.first?.message == "variable macro 1 ('__v') is not used by any tag, trigger or variable")
        #expect(findings.first?.location?.line == 5)
    }
}
