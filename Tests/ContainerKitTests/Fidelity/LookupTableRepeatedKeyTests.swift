import ContainerKit
import Testing

extension Fidelity {
    /// GTM's web runtime builds a lookup table row by row into an object, so a repeated key returns its
    /// last row; mobile containers keep the first (issue 24, point 7).
    @Suite struct LookupTableRepeatedKeyTests {
        static let table = """
            {"function": "__smm", "vtp_input": ["macro", 2], "vtp_map": ["list",
              ["map", "key", "a", "value", "first"], ["map", "key", "b", "value", "other"],
              ["map", "key", "a", "value", "last"]], "vtp_setDefaultValue": true, "vtp_defaultValue": "none"}
            """
        static let input = #", {"function": "__v", "vtp_name": "k", "vtp_dataLayerVersion": 2}"#

        @Test func aWebTableReturnsTheLastRowOfARepeatedKey() throws {
            let container = try Fidelity.resource(macro: Self.table, more: Self.input, web: true)
            #expect(Fidelity.arguments(container, before: [["k": "a"]]) == ["value": "last"])
            #expect(Fidelity.arguments(container, before: [["k": "b"]]) == ["value": "other"])
            #expect(Fidelity.arguments(container, before: [["k": "c"]]) == ["value": "none"])
        }

        @Test func aMobileTableReturnsTheFirstRowOfARepeatedKey() throws {
            let container = try Fidelity.resource(macro: Self.table, more: Self.input, web: false)
            #expect(Fidelity.arguments(container, before: [["k": "a"]]) == ["value": "first"])
        }
    }
}
