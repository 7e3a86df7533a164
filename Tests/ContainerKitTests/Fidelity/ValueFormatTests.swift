import ContainerKit
import Testing

extension Fidelity {
    /// A variable's format options as gtm.js applies them (`Ee.lj`): the case of a string first, then `null`,
    /// `undefined`, `true` and `false`, each converting what the step before left.
    @Suite struct ValueFormatTests {
        /// A data-layer variable reading `k` with `options` (the members of a compiled macro).
        static func variable(_ options: String) -> String {
            #"{"function": "__v", "vtp_name": "k", "vtp_dataLayerVersion": 2, \#(options)}"#
        }

        func value(_ options: String, _ pushed: Value?) throws -> Value? {
            let container = try Fidelity.resource(macro: Self.variable(options), web: true)
            return Fidelity.arguments(container, before: pushed.map { [["k": $0]] } ?? [])?["value"]
        }

        /// A converted value's case is kept: case conversion runs first, on strings only.
        @Test func caseConversionComesFirstAndAConvertedValueKeepsItsCase() throws {
            let options = #""convert_undefined_to": "N/A", "convert_null_to": "Nothing", "convert_case_to": 1"#
            #expect(try value(options, nil) == "N/A")
            #expect(try value(options, .null) == "Nothing")
            #expect(try value(options, "MiXeD") == "mixed")
            #expect(try value(#""convert_case_to": 2"#, "MiXeD") == "MIXED")
            #expect(try value(#""convert_case_to": 2"#, 7) == 7)
        }

        /// Each conversion takes what the one before left: `null` → `true` → `"yes"`.
        @Test func conversionsChainInGTMsOrder() throws {
            let options = #""convert_null_to": true, "convert_true_to": "yes", "convert_false_to": "no""#
            #expect(try value(options, .null) == "yes")
            #expect(try value(options, false) == "no")
            #expect(try value(#""convert_undefined_to": false, "convert_false_to": 0"#, nil) == 0)
        }
    }
}
