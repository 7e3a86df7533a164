import ContainerKit
import Testing

@testable import ContainerKitLint

/// Lint findings that must follow what GTM is (issue 24, point 10).
struct FidelityLintTests {
    private func lint(_ text: String, file: String = "GTM-TEST.json") -> [LintFinding] {
        Linter().lint(bytes: Array(text.utf8), file: file)
    }

    @Test func aRefusedServerExportGetsOnlyItsRefusal() {
        let findings = lint(
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"container": {"publicId": "GTM-SRV2", "usageContext": ["SERVER"]},
              "tag": [{"tagId": "1", "name": "T", "type": "sgtmgaaw", "firingTriggerId": ["9"]},
                      {"tagId": "1", "name": "T", "type": "x"}],
              "trigger": [{"triggerId": "3", "name": "A", "type": "CUSTOM_EVENT"}]}}
            """#,
            file: "GTM-SRV1.json"
        )
        #expect(findings.map(\.ruleID) == ["unknown_format"])
    }

    @Test(arguments: ["wGTM-TAG-export.json", "xGTM-K1T5.json"])
    func aGTMTokenAfterALowerCaseLetterIsNoContainerID(file: String) {
        #expect(ContainerCompiler.containerID(embeddedIn: file) == nil)
        let findings = lint(#"{"resource": {"macros": [{"function": "__e"}]}}"#, file: file)
        #expect(findings.contains { $0.ruleID == "file_name_container_id" })
    }

    @Test(arguments: ["app_GTM-K1T5.json", "app.GTM-K1T5.json", "APPGTM-K1T5.json", "GTM-K1T5_v2.json"])
    func aGTMTokenAfterOtherCharactersStillIsOne(file: String) {
        #expect(ContainerCompiler.containerID(embeddedIn: file) == "GTM-K1T5")
    }

    @Test func anUnusedFirstPartyCookieVariableAndAnUnnamedConstantAreReported() {
        let findings = lint(
            #"""
            {"resource": {"macros": [{"function": "__e"}, {"function": "__k", "vtp_name": "session_cookie"},
              {"function": "__c", "vtp_value": "unnamed"}, {"function": "__c", "instance_name": "Named", "vtp_value": "x"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"}]}}
            """#
        )
        let unused = findings.filter { $0.ruleID == "unused_variable" }.map(\.pointer)
        #expect(unused == ["/resource/macros/1", "/resource/macros/2"])
    }

    /// A compiled paused tag keeps only its type: a variable only it read looks unused, and the finding says so.
    @Test func anUnusedVariableOfAContainerWithPausedTagsMayBeAPausedTags() {
        let macros = #"[{"function": "__e"}, {"function": "__v", "vtp_name": "n", "vtp_dataLayerVersion": 2}]"#
        let predicates = #""predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "buy"}]"#
        let paused = lint(
            #"{"resource": {"macros": \#(macros), "tags": [{"function": "__paused", "tag_id": 1, "#
                + #""vtp_originalTagType": "__html"}], \#(predicates)}}"#
        )
        let message = paused.first { $0.ruleID == "unused_variable" }?.message
        #expect(message?.hasSuffix("(or only by a paused tag, whose fields a compiled container drops)") == true)
        let plain = lint(#"{"resource": {"macros": \#(macros), \#(predicates)}}"#)
        #expect(plain.first { $0.ruleID == "unused_variable" }?.message.hasSuffix("tag, trigger or variable") == true)
    }

    @Test func webComparisonsWithConstantsNumberConvertsAreNotReported() {
        func findings(_ operand: String, web: Bool) -> Int {
            let data = """
                {"resource": {"macros": [{"function": "__e"}, {"function": "__v", "vtp_name": "n", "vtp_dataLayerVersion": 2}],
                  "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}],
                  "predicates": [{"function": "_gt", "arg0": ["macro", 1], "arg1": \(operand)}],
                  "rules": [[["if", 0], ["add", 0]]]}}
                """
            let text = web ? "// gtm.js\nvar data = \(data);\n" : data
            return lint(text, file: web ? "GTM-WEB1.js" : "GTM-APP1.json").filter {
                $0.ruleID == "non_numeric_comparison"
            }
            .count
        }
        #expect(findings(#""""#, web: true) == 0)
        #expect(findings("null", web: true) == 0)
        #expect(findings(#""0x10""#, web: true) == 0)
        #expect(findings(#""abc""#, web: true) == 1)
        #expect(findings(#""""#, web: false) == 1)
    }
}

extension FidelityLintTests {
    @Test func everyTagThatNeedsConsentIsReportedWithItsTypes() {
        let findings = Linter().lint(
            bytes: Array(
                #"""
                {"resource": {"tags": [
                  {"function": "__funct", "tag_id": 1, "vtp_classPath": "A", "consent": ["list", "ad_storage", "analytics_storage"]},
                  {"function": "__funct", "tag_id": 2, "vtp_classPath": "A", "consent": ["list"]},
                  {"function": "__funct", "tag_id": 3, "vtp_classPath": "A", "consent": ["list", "ad_storage"]}],
                  "rules": [[["add", 0, 1, 2]]]}}
                """#.utf8
            ),
            file: "GTM-TEST.json"
        ).filter { $0.ruleID == "consent_implicit_default" }
        #expect(findings.map(\.pointer) == ["/resource/tags/0/consent", "/resource/tags/2/consent"])
        #expect(findings.first?.message.contains("'ad_storage', 'analytics_storage'") == true)
    }
}
