import ContainerKit
import Testing

extension Fidelity {
    /// GTM's exports leave out a parameter's `"value"` when it is the empty string; the compiled form of the
    /// same field is `""` (issue 24, point 2).
    @Suite struct EmptyExportParameterTests {
        static func export(variable: String, argument: String) -> String {
            """
            {"exportFormatVersion": 2, "containerVersion": {
              "container": {"publicId": "GTM-EMPTY1", "usageContext": ["ANDROID_SDK_5"]},
              "variable": [\(variable)],
              "trigger": [{"triggerId": "2", "name": "E", "type": "CUSTOM_EVENT", "customEventFilter": [
                {"type": "EQUALS", "parameter": [{"type": "TEMPLATE", "key": "arg0", "value": "{{_event}}"},
                  {"type": "TEMPLATE", "key": "arg1", "value": "e"}]}]}],
              "tag": [{"tagId": "3", "name": "T", "type": "funct", "firingTriggerId": ["2"], "parameter": [
                {"type": "TEMPLATE", "key": "classPath", "value": "t"},
                {"type": "LIST", "key": "functionArgument", "list": [\(argument)]}]}]
            }}
            """
        }

        static func pair(_ key: String, _ value: String?) -> String {
            let valueMember = value.map { #", "value": "\#($0)""# } ?? ""
            return """
                {"type": "MAP", "map": [{"type": "TEMPLATE", "key": "key", "value": "\(key)"},
                  {"type": "TEMPLATE", "key": "value"\(valueMember)}]}
                """
        }

        @Test func anArgumentWithoutAValueReachesTheHandlerAsTheEmptyString() throws {
            let container = try TestContainers.load(
                json: Self.export(variable: "", argument: Self.pair("partner", nil) + ", " + Self.pair("n", "1"))
            )
            let arguments = try #require(Fidelity.arguments(container))
            #expect(arguments == ["partner": "", "n": "1"])
        }

        @Test func anEmptyDefaultValueIsTheEmptyString() throws {
            let variable = """
                {"variableId": "1", "name": "Plan", "type": "v", "parameter": [
                  {"type": "TEMPLATE", "key": "name", "value": "plan"},
                  {"type": "INTEGER", "key": "dataLayerVersion", "value": "2"},
                  {"type": "BOOLEAN", "key": "setDefaultValue", "value": "true"},
                  {"type": "TEMPLATE", "key": "defaultValue"}]}
                """
            let container = try TestContainers.load(
                json: Self.export(variable: variable, argument: Self.pair("plan", "[{{Plan}}]"))
            )
            #expect(Fidelity.arguments(container) == ["plan": "[]"])
        }

        @Test func aConstantWithoutAValueIsTheEmptyString() throws {
            let variable =
                #"{"variableId": "1", "name": "Empty", "type": "c", "parameter": [{"type": "TEMPLATE", "key": "value"}]}"#
            let container = try TestContainers.load(
                json: Self.export(variable: variable, argument: Self.pair("empty", "{{Empty}}"))
            )
            #expect(Fidelity.arguments(container) == ["empty": ""])
        }
    }
}
