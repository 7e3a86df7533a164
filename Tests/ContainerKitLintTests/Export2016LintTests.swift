import ContainerKitLint
import TestSupport
import Testing

/// Lint on a 2016 export (format 1.3), whose enabled built-in variables are listed in
/// `container.enabledBuiltInVariable` (issue 42, point 7): `{{Event}}` is a variable, not a dangling reference.
struct Export2016LintTests {
    @Test func theEnabledBuiltInVariablesOfA2016ExportAreNoDanglingReferences() {
        let findings = Linter().lint(bytes: Array(Fixtures.mobileExport2016.utf8), file: "x.json")
        #expect(!findings.contains { $0.ruleID == "dangling_reference" }, "\(findings)")
        #expect(!findings.contains { $0.ruleID == "unused_variable" }, "\(findings)")
        #expect(!findings.contains { $0.severity == .error }, "\(findings)")
    }
}
