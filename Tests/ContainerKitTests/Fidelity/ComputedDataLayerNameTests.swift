import ContainerKit
import Testing

extension Fidelity {
    /// A data-layer variable whose name holds a variable reference (`{{prefix}}id`) reads the name GTM's
    /// `__v` makes by resolving the reference first (issue 24, point 6).
    @Suite struct ComputedDataLayerNameTests {
        @Test func aCompiledNameWithAMacroReadsTheNameItMakes() throws {
            let container = try Fidelity.resource(
                macro: """
                    {"function": "__v", "vtp_name": ["template", ["macro", 2], "id"], "vtp_dataLayerVersion": 2,
                     "vtp_setDefaultValue": true, "vtp_defaultValue": "none"}
                    """,
                more: #", {"function": "__v", "vtp_name": "prefix", "vtp_dataLayerVersion": 2}"#,
                web: true
            )
            #expect(
                Fidelity.arguments(container, before: [["prefix": "user.", "user": ["id": "u1"]]]) == ["value": "u1"]
            )
            #expect(Fidelity.arguments(container, before: [["prefix": "order_", "order_id": 7]]) == ["value": 7])
            #expect(Fidelity.arguments(container, before: [["prefix": "gone."]]) == ["value": "none"])
        }

        @Test func versionOneReadsTheRawValueOfTheNameItMakes() throws {
            let container = try Fidelity.resource(
                macro: #"{"function": "__v", "vtp_name": ["template", ["macro", 2], ".id"]}"#,
                more: #", {"function": "__c", "vtp_value": "user"}"#,
                web: true
            )
            #expect(Fidelity.arguments(container, before: [["user.id": "raw"]]) == ["value": "raw"])
        }

        @Test func anExportNameWithAReferenceIsResolved() throws {
            let json = """
                {"exportFormatVersion": 2, "containerVersion": {
                  "container": {"publicId": "GTM-NAME1", "usageContext": ["WEB"]},
                  "variable": [
                    {"variableId": "1", "name": "prefix", "type": "c", "parameter": [
                      {"type": "TEMPLATE", "key": "value", "value": "cart."}]},
                    {"variableId": "2", "name": "Item", "type": "v", "parameter": [
                      {"type": "TEMPLATE", "key": "name", "value": "{{prefix}}item"},
                      {"type": "INTEGER", "key": "dataLayerVersion", "value": "2"}]}],
                  "trigger": [{"triggerId": "3", "name": "E", "type": "CUSTOM_EVENT", "customEventFilter": [
                    {"type": "EQUALS", "parameter": [{"type": "TEMPLATE", "key": "arg0", "value": "{{_event}}"},
                      {"type": "TEMPLATE", "key": "arg1", "value": "e"}]}]}],
                  "tag": [{"tagId": "4", "name": "T", "type": "funct", "firingTriggerId": ["3"], "parameter": [
                    {"type": "TEMPLATE", "key": "classPath", "value": "t"},
                    {"type": "LIST", "key": "functionArgument", "list": [{"type": "MAP", "map": [
                      {"type": "TEMPLATE", "key": "key", "value": "item"},
                      {"type": "TEMPLATE", "key": "value", "value": "{{Item}}"}]}]}]}]
                }}
                """
            let container = try TestContainers.load(json: json, file: "GTM-NAME1.json")
            #expect(!container.unsupported.contains { $0.message.contains("data layer variable") })
            #expect(Fidelity.arguments(container, before: [["cart": ["item": "sku-1"]]]) == ["item": "sku-1"])
        }
    }
}
