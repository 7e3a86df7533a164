import ContainerKitBrazeLint
import Foundation
import Testing

@testable import ContainerKit
@testable import ContainerKitLint

struct LinterTests {
    private func lint(
        _ text: String,
        file: String = "GTM-TEST.json",
        configuration: LintConfiguration = LintConfiguration()
    ) -> [LintFinding] {
        Linter(configuration: configuration, catalog: Linter.allRules).lint(bytes: Array(text.utf8), file: file)
    }

    /// Whether the JSON reader records positions (the placeholder reader does not).
    static let readerRecordsPositions: Bool = {
        let loader = ContainerLoader(options: LoadOptions(recordPositions: true))
        let document = try? loader.readDocument(bytes: Array("{\n  \"a\": 1\n}".utf8), file: nil)
        return document?.location(of: "/a") != nil
    }()

    @Test func danglingReferencesAreAllReportedWithPointers() {
        let text = #"""
            {"resource": {"macros": [{"function": "__c", "vtp_value": ["template", ["macro", 7], ["macro", 0]]}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "A",
                "setup_tags": ["list", ["tag", 3, 0]]}],
              "predicates": [{"function": "_eq", "arg0": ["macro", -1], "arg1": "x"}],
              "rules": [[["if", 0, 5], ["add", 0, 9]]]}}
            """#
        let dangling = lint(text).filter { $0.ruleID == "dangling_reference" }
        #expect(
            dangling.map(\.pointer).sorted() == [
                "/resource/macros/0/vtp_value/1",
                "/resource/predicates/0/arg0",
                "/resource/rules/0/0/2",
                "/resource/rules/0/1/2",
                "/resource/tags/0/setup_tags/1",
            ]
        )
        #expect(dangling.contains { $0.message == "macro reference '7' does not name one of the 1 macros" })
        #expect(dangling.contains { $0.message == "rule refers to tag '9', but there is only 1 tag" })
    }

    @Test func findingsInAnXMLPropertyListContainerSayTheLineAndColumn() throws {
        let json = #"""
            {"resource": {"macros": [{"function": "__c", "vtp_value": "x"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "A"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 4], "arg1": "x"}],
              "rules": [[["if", 0], ["add", 0]]]}}
            """#
        let object = try JSONSerialization.jsonObject(with: Data(json.utf8))
        let plist = try PropertyListSerialization.data(fromPropertyList: object, format: .xml, options: 0)
        let findings = Linter(catalog: Linter.allRules).lint(bytes: [UInt8](plist), file: "GTM-TEST.plist")
        let dangling = try #require(findings.first { $0.ruleID == "dangling_reference" })
        #expect(dangling.pointer == "/resource/predicates/0/arg0")
        // Foundation writes each element on a line of its own: the reference is the <array> after <key>arg0</key>.
        let lines = String(decoding: plist, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let keyLine = try #require(lines.firstIndex { $0.contains("<key>arg0</key>") })
        let column = lines[keyLine + 1].prefix { $0 == "\t" }.count + 1
        #expect(lines[keyLine + 1].contains("<array>"))
        #expect(dangling.location?.description == "\(keyLine + 2):\(column)")
        #expect(findings.allSatisfy { $0.location != nil }, "\(findings)")
    }

    @Test func unresolvedExportNamesAndTriggersAreReported() {
        let text = #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "container": {"publicId": "GTM-TEST"},
              "tag": [{"tagId": "1", "name": "Call", "type": "funct", "firingTriggerId": ["2", "3"],
                "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "{{Class}} and {{Nope}}"}]}],
              "trigger": [{"triggerId": "2", "name": "Go", "type": "CUSTOM_EVENT"}],
              "variable": [{"variableId": "4", "name": "Class", "type": "c"}]}}
            """#
        let dangling = lint(text).filter { $0.ruleID == "dangling_reference" }
        #expect(
            dangling.map(\.message).sorted() == [
                "'{{Nope}}' names no variable or enabled built-in variable",
                "tag 'Call' refers to trigger '3', which does not exist",
            ]
        )
        #expect(
            dangling.map(\.pointer).sorted() == [
                "/containerVersion/tag/0/firingTriggerId/1",
                "/containerVersion/tag/0/parameter/0/value",
            ]
        )
    }

    @Test func configurationDisablesRulesOverridesSeverityAndEnablesOptInRules() throws {
        let text =
            #"{"resource": {"tags": [{"function": "__paused", "tag_id": 1}, {"function": "__html", "tag_id": 2}]}}"#
        let defaults = lint(text)
        #expect(!defaults.contains { $0.ruleID == "paused_tag" })
        #expect(defaults.contains { $0.ruleID == "unsupported_template" && $0.severity == .warning })

        let configuration = try LintConfiguration(
            json: #"""
                {"opt_in_rules": ["paused_tag"], "disabled_rules": ["tag_never_fires"],
                 "severity": {"unsupported_template": "error"}}
                """#
        )
        let configured = lint(text, configuration: configuration)
        #expect(configured.contains { $0.ruleID == "paused_tag" && $0.severity == .note })
        #expect(configured.contains { $0.ruleID == "unsupported_template" && $0.severity == .error })
        #expect(!configured.contains { $0.ruleID == "tag_never_fires" })
    }

    @Test func brazeClassPathsComeFromTheConfiguration() throws {
        let text = #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "com.example.MyBraze",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "dance"]]}]}}
            """#
        #expect(!lint(text).contains { $0.ruleID == "braze_action" })
        let configuration = try LintConfiguration(json: #"{"braze_class_paths": ["com.example.MyBraze"]}"#)
        let findings = lint(text, configuration: configuration).filter { $0.ruleID == "braze_action" }
        #expect(findings.count == 1)
        #expect(findings.first?.pointer == "/resource/tags/0/vtp_functionArgument/1/4")
        #expect(
            findings.first?.message.hasPrefix("braze tag tag_id 1 ('__funct') has unknown actionType 'dance'") == true
        )
    }

    @Test func brazeKeysLongerThan255CharactersAreReported() {
        let key = String(repeating: "k", count: 256)
        let text = """
            {"resource": {"tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "BrazeGTMTagManager",
              "vtp_functionArgument": ["list", ["map", "key", "actionType", "value", "customAttribute"],
                ["map", "key", "customAttributeKey", "value", "\(key)"]]}]}}
            """
        let findings = lint(text).filter { $0.ruleID == "braze_property" }
        #expect(findings.count == 1)
        #expect(findings.first?.message.hasSuffix("is longer than 255 characters (too_long)") == true)
    }

    @Test func findingsAreSortedByFileThenPosition() {
        let a = LintFinding(ruleID: "b", severity: .error, message: "m", file: "a.json")
        let b = LintFinding(ruleID: "a", severity: .error, message: "m", file: "b.json")
        let c = LintFinding(
            ruleID: "a",
            severity: .error,
            message: "m",
            file: "a.json",
            location: SourceLocation(line: 3, column: 1)
        )
        let report = LintReport(findings: [b, c, a], files: ["a.json", "b.json"])
        #expect(report.findings == [a, c, b])
    }

    @Test func summaryCountsFindingsAndFiles() {
        let error = LintFinding(ruleID: "x", severity: .error, message: "m", file: "a.json")
        let warning = LintFinding(ruleID: "y", severity: .warning, message: "m", file: "a.json")
        #expect(
            LintReport(findings: [error, error, error, warning], files: ["a", "b"]).summary
                == "3 errors, 1 warning in 2 files"
        )
        #expect(LintReport(findings: [], files: ["a", "b", "c", "d", "e"]).summary == "no problems in 5 files")
        #expect(LintReport(findings: [warning], files: ["a"]).strict().summary == "1 error in 1 file")
    }

    @Test(
        .enabled(
            if: LinterTests.readerRecordsPositions,
            "the placeholder JSON reader records no positions; re-run after merging the real reader"
        )
    )
    func findingsCarryLineAndColumnFromTheReader() throws {
        let text =
            "{\"resource\": {\n  \"macros\": [\n    {\"function\": \"__c\", \"vtp_value\": [\"macro\", 3]}\n  ]}}"
        let finding = try #require(lint(text).first { $0.ruleID == "dangling_reference" })
        #expect(finding.location?.line == 3)
        #expect(finding.location?.column == 38)
    }

    @Test func syntaxErrorsKeepTheReaderLocationWhenThereIsOne() throws {
        let finding = try #require(lint("{\"resource\": {\"macros\": [}}").first)
        #expect(finding.ruleID == "syntax_error")
        #expect(finding.severity == .error)
        if LinterTests.readerRecordsPositions { #expect(finding.location?.line == 1) }
    }
}
