import ContainerKit
import Testing

struct ContainerIDFileNameTests {
    static let resource = #"{"resource": {"version": "1", "macros": [{"function": "__e"}]}}"#

    @Test(arguments: [
        ("GTM-5HM9ZRX.json", "GTM-5HM9ZRX"),
        ("vendor__app__GTM-5HM9ZRX.json", "GTM-5HM9ZRX"),
        ("com.example.app__GTM-ABC123.json", "GTM-ABC123"),
        ("my.app.GTM-ABC123.json", "GTM-ABC123"),
        ("assets/containers/com.example.GTM-XY12.plist.json", "GTM-XY12"),
        ("GTM-WDF9SGJ_v6.json.js", "GTM-WDF9SGJ"),
        ("owner__GTM-v5-Example__GTM-MZTK5QP.json", "GTM-MZTK5QP"),
        ("container.json", "GTM-UNKNOWN"),
        ("vendor__GTM-Function-Call__GTM-Android_Examples.json", "GTM-UNKNOWN"),
        ("GTM-.json", "GTM-UNKNOWN"),
        ("gtm-lower.json", "GTM-UNKNOWN"),
    ])
    func containerIDIsFoundAnywhereInTheFileName(file: String, id: String) throws {
        let container = try ContainerLoader().load(bytes: Array(Self.resource.utf8), file: file)
        #expect(container.id == id)
    }

    @Test(arguments: ["com.example.app__GTM-ABC123.json", "my.app.GTM-ABC123.json"])
    func lintDoesNotWarnWhenTheIDIsInADottedFileName(file: String) {
        let findings = Linter().lint(bytes: Array(Self.resource.utf8), file: file)
        #expect(!findings.contains { $0.ruleID == "file_name_container_id" })
    }
}
