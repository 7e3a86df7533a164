import ContainerKit
import Testing

extension Fidelity {
    /// Numbers print as JavaScript's `Number::toString` prints them (ECMA-262): the shortest round-trip
    /// digits, in exponent form only when the decimal exponent is ≥ 21 or ≤ −7 (issue 24, point 5).
    @Suite struct NumberToStringTests {
        @Test(arguments: [
            (0.00001, "0.00001"), (0.000001, "0.000001"), (1e-7, "1e-7"), (-1e-7, "-1e-7"), (1.5e-7, "1.5e-7"),
            (1e20, "100000000000000000000"), (1e21, "1e+21"), (12_345_678_901_234_567_000.0, "12345678901234567000"),
            (9_223_372_036_854_775_808.0, "9223372036854776000"), (123.456, "123.456"), (-0.5, "-0.5"),
            (0.1 + 0.2, "0.30000000000000004"), (1.5e300, "1.5e+300"), (Double.leastNonzeroMagnitude, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"), (123e-20, "1.23e-18"), (2.5, "2.5"), (-0.0, "0"),
            (100, "100"), (1e18, "1000000000000000000"), (1.25e19, "12500000000000000000"), (0.001, "0.001"),
        ])
        func doublesPrintAsJavaScriptPrintsThem(value: Double, expected: String) {
            #expect(Value.double(value).jsString == expected)
        }

        @Test func templatesStringPredicatesAndLookupKeysUseTheJavaScriptForm() throws {
            let container = try TestContainers.resource(
                macros: """
                    [{"function": "__e"}, {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "n"},
                     {"function": "__smm", "vtp_input": ["macro", 1], "vtp_map": ["list",
                       ["map", "key", "100000000000000000000", "value", "big"],
                       ["map", "key", "0.00001", "value", "small"]]}]
                    """,
                tags: """
                    [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "vtp_functionArgument": ["list",
                      ["map", "key", "text", "value", ["template", "n=", ["macro", 1]]],
                      ["map", "key", "row", "value", ["macro", 2]]]}]
                    """,
                predicates: """
                    [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                     {"function": "_sw", "arg0": ["macro", 1], "arg1": "0.0000"}]
                    """,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
            #expect(
                Fidelity.arguments(container, parameters: ["n": .double(1e20)]) == [
                    "text": "n=100000000000000000000", "row": "big",
                ]
            )
            #expect(
                Fidelity.arguments(container, parameters: ["n": .double(0.00001)]) == [
                    "text": "n=0.00001", "row": "small",
                ]
            )
        }

        @Test func aStringPredicateComparesTheJavaScriptForm() throws {
            let container = try TestContainers.resource(
                macros: #"[{"function": "__e"}, {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "n"}]"#,
                tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}]"#,
                predicates: """
                    [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                     {"function": "_eq", "arg0": ["macro", 1], "arg1": "0.00001"}]
                    """,
                rules: #"[[["if", 0, 1], ["add", 0]]]"#
            )
            #expect(Fidelity.arguments(container, parameters: ["n": .double(0.00001)]) == [:])
            #expect(Fidelity.arguments(container, parameters: ["n": .double(0.0001)]) == nil)
        }
    }
}
