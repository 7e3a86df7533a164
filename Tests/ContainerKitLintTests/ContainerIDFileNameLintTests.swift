import ContainerKit
import ContainerKitLint
import Testing

struct ContainerIDFileNameLintTests {
    static let resource = #"{"resource": {"version": "1", "macros": [{"function": "__e"}]}}"#

    @Test(arguments: ["com.example.app__GTM-ABC123.json", "my.app.GTM-ABC123.json"])
    func lintDoesNotWarnWhenTheIDIsInADottedFileName(file: String) {
        let findings = Linter().lint(bytes: Array(Self.resource.utf8), file: file)
        #expect(!findings.contains { $0.ruleID == "file_name_container_id" })
    }
}
