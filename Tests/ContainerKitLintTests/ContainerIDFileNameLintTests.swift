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

extension ContainerIDFileNameLintTests {
    @Test(arguments: [("container.json", "GTM-XXXX.json"), ("container.plist", "GTM-XXXX.plist")])
    func aFileNameWithoutAnIDIsToldTheNameOfItsOwnKind(file: String, expected: String) {
        let findings = Linter().lint(bytes: Array(Self.resource.utf8), file: file)
        let finding = findings.first { $0.ruleID == "file_name_container_id" }
        #expect(
            finding?.message
                == "no container id in file name '\(file)' (expected \(expected)) nor in the content, so the runtime "
                + "calls it 'GTM-UNKNOWN'"
        )
    }
}
