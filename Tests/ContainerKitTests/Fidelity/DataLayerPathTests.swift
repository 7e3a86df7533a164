import ContainerKit
import Testing

extension Fidelity {
    /// A version-2 data-layer variable reads its dotted name as gtm.js does (`Ph`: property by property, a `null` on
    /// the way is `false`), and its name with escaped dots as `__v` does (`a\.b` is `a.b`).
    @Suite struct DataLayerPathTests {
        static func variable(_ name: String, default defaultValue: String? = nil) -> String {
            let fallback = defaultValue.map { #", "vtp_setDefaultValue": true, "vtp_defaultValue": "\#($0)""# } ?? ""
            return #"{"function": "__v", "vtp_name": "\#(name)", "vtp_dataLayerVersion": 2\#(fallback)}"#
        }

        func value(_ macro: String, web: Bool, after pushes: [ValueMap]) throws -> Value? {
            Fidelity.arguments(try Fidelity.resource(macro: macro, web: web), before: pushes)?["value"]
        }

        /// GA4's advice is to push `{ecommerce: null}` before each ecommerce event: until the next one, a variable
        /// reading `ecommerce.transaction_id` is `false` in a web container, and its default value does not apply.
        @Test func aNullOnTheWayIsFalseInAWebContainer() throws {
            let macro = Self.variable("ecommerce.transaction_id", default: "DEF")
            #expect(try value(macro, web: true, after: [["ecommerce": .null]]) == false)
            #expect(try value(macro, web: true, after: []) == "DEF")
            #expect(try value(macro, web: true, after: [["ecommerce": ["transaction_id": "T-1"]]]) == "T-1")
            // The last value itself is returned as it is, null included.
            #expect(try value(macro, web: true, after: [["ecommerce": ["transaction_id": .null]]]) == .null)
            // A mobile SDK reads a missing value there: the default applies.
            #expect(try value(macro, web: false, after: [["ecommerce": .null]]) == "DEF")
        }

        /// Property access reads an array's or a string's `length` and their elements by index.
        @Test func lengthAndIndexesReadArraysAndStringsInAWebContainer() throws {
            let pushed: [ValueMap] = [["items": ["a", "b"], "s": "héllo"]]
            #expect(try value(Self.variable("items.length"), web: true, after: pushed) == 2)
            #expect(try value(Self.variable("items.1"), web: true, after: pushed) == "b")
            #expect(try value(Self.variable("items.01"), web: true, after: pushed) == nil)
            #expect(try value(Self.variable("s.length"), web: true, after: pushed) == 5)
            #expect(try value(Self.variable("s.1"), web: true, after: pushed) == "é")
            #expect(try value(Self.variable("items.length"), web: false, after: pushed) == nil)
        }

        /// `a\.b` (a name escaping its dot, as GTM's help suggests) reads `a.b`: `__v` turns `\.` into `.` first.
        @Test func anEscapedDotInANameIsADot() throws {
            let pushed: [ValueMap] = [["a.b": "literal"]]
            for web in [true, false] {
                #expect(try value(Self.variable(#"a\\.b"#), web: web, after: pushed) == "literal")
            }
            let raw = #"{"function": "__v", "vtp_name": "a\\.b", "vtp_dataLayerVersion": 1}"#
            #expect(try value(raw, web: true, after: pushed) == "literal")
        }
    }
}
