import ContainerKit
import Testing

extension Fidelity {
    /// Web containers compare numbers as GTM's web runtime does, through JavaScript's `Number()`; mobile
    /// containers keep the SDKs' rule: false unless both sides are numeric (issue 24, point 4).
    @Suite struct NumericComparisonTests {
        /// A container whose tag fires on event `e` when the data-layer value `n` `op` `operand` holds.
        static func container(web: Bool, op: String, operand: String) throws -> Container {
            let json = """
                {"resource": {"version": "1", "macros": [{"function": "__e"},
                  {"function": "__v", "vtp_name": "n", "vtp_dataLayerVersion": 2}],
                  "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}],
                  "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                    {"function": "\(op)", "arg0": ["macro", 1], "arg1": \(operand)}],
                  "rules": [[["if", 0, 1], ["add", 0]]]}}
                """
            return try TestContainers.load(
                json: web ? "var data = \(json);" : json,
                file: web ? "gtm.js" : "GTM-TEST1.json"
            )
        }

        static func fires(_ container: Container, _ value: Value) -> Bool {
            Fidelity.arguments(container, before: [["n": value]]) != nil
        }

        static let webCases: [(Value, String, String, Bool)] = [
            (.null, "_ge", "0", true), (.null, "_lt", "1", true), ("", "_le", "0", true),
            (.bool(true), "_ge", "1", true),
            (.bool(false), "_lt", "1", true), (.array([]), "_ge", "0", true), (.array([42]), "_ge", "42", true),
            (.array([1, 2]), "_ge", "0", false),
            ("0x10", "_ge", "16", true), ("0x10", "_gt", "16", false), (" 12 ", "_ge", "12", true),
            ("\t12\n", "_le", "12", true), ("Infinity", "_gt", "1e308", true), ("-Infinity", "_lt", "-1e308", true),
            ("12px", "_ge", "0", false), ("0b101", "_ge", "5", true), ("0o17", "_ge", "15", true),
            ("1e3", "_ge", "1000", true), (".5", "_gt", "0.4", true), ("5.", "_ge", "5", true),
            (.object(["a": 1]), "_ge", "0", false), ("abc", "_lt", "1", false), (7, "_gt", "\"\"", true),
        ]

        @Test(arguments: webCases)
        func webComparisonsConvertWithNumber(value: Value, op: String, operand: String, expected: Bool) throws {
            let container = try Self.container(web: true, op: op, operand: operand)
            #expect(Self.fires(container, value) == expected)
        }

        @Test func anUndefinedOperandIsNaNOnTheWeb() throws {
            let container = try Self.container(web: true, op: "_ge", operand: "0")
            #expect(Fidelity.arguments(container) == nil)
        }

        @Test(arguments: [
            (Value.null, "_ge", "0"), ("", "_le", "0"), (.bool(true), "_ge", "1"), (.array([]), "_ge", "0"),
            (.array([42]), "_ge", "42"),
            ("0x10", "_ge", "16"), ("Infinity", "_gt", "1"),
        ])
        func mobileComparisonsAreFalseForNonNumericValues(value: Value, op: String, operand: String) throws {
            let container = try Self.container(web: false, op: op, operand: operand)
            #expect(!Self.fires(container, value))
        }

        @Test func mobileComparisonsReadNumericStrings() throws {
            let container = try Self.container(web: false, op: "_ge", operand: "12")
            #expect(Self.fires(container, " 12 "))
            #expect(Self.fires(container, 12.5))
        }
    }
}
