import ContainerKit
import ContainerKitTesting
import Testing

/// A tag ContainerKit does not run (a GA4 event, custom HTML) is reported `unsupported` with its fields evaluated,
/// as gtm.js evaluates them before running a tag, when the runtime is asked to (`containerkit run` and `diff` do):
/// what it would send is visible without a trace. A service's runtime does not pay for it.
struct UnsupportedTagTests {
    @Test func anUnsupportedTagsFieldsAreEvaluatedWithoutATrace() throws {
        let container = try TestContainers.resource(
            macros:
                #"[{"function": "__e"}, {"function": "__v", "vtp_name": "ecommerce.value", "vtp_dataLayerVersion": 2}]"#,
            tags: #"[{"function": "__gaawe", "tag_id": 7, "vtp_eventName": "purchase", "#
                + #""vtp_eventParameters": ["list", ["map", "name", "value", "value", ["macro", 1]]]}]"#,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "purchase"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#
        )
        let manager = TagManager(logger: InMemoryLogger(), evaluatesUnsupportedTags: true)
        manager.add(container)
        let fired = manager.makeDataLayer().push(event: "purchase", parameters: ["ecommerce": ["value": 12.5]]).fired
        let tag = try #require(fired.first)
        #expect(tag.status == .unsupported)
        #expect(tag.parameters["eventName"] == "purchase")
        #expect(tag.parameters["eventParameters"] == [["name": "value", "value": 12.5]])

        let service = TagManager(logger: InMemoryLogger())
        service.add(container)
        let plain = try #require(service.makeDataLayer().push(event: "purchase").fired.first)
        #expect(plain.status == .unsupported && plain.parameters.isEmpty)
    }
}
