import ContainerKit
import Testing

extension Fidelity {
    /// An event parameter variable (`__md`) reads its key as the v5 runtime's `__md_main` does: a dotted key is walked
    /// property by property (never read as one name with dots), a list's or a string's `length` included; the event's
    /// own name is not a parameter; a suggested parameter's key is the first `…Param` data key, in order, with a value.
    @Suite struct EventParameterPathTests {
        static func variable(_ key: String) -> String {
            #"{"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "\#(key)", "vtp_setDefaultValue": true, "vtp_defaultValue": "dflt"}"#
        }

        func value(_ key: String, _ parameters: ValueMap) throws -> Value? {
            Fidelity.arguments(try Fidelity.resource(macro: Self.variable(key)), parameters: parameters)?["value"]
        }

        @Test func aDottedKeyIsWalkedNeverReadAsOneName() throws {
            #expect(try value("a.b", ["a.b": "flat"]) == "dflt")
            #expect(try value("a.b", ["a.b": "flat", "a": ["b": "nested"]]) == "nested")
            #expect(try value("a.b", ["a": .null]) == "dflt")
            let items: ValueMap = ["items": [["id": "p1"], ["id": "p2"]], "name": "abc"]
            #expect(try value("items.0.id", items) == "p1")
            #expect(try value("items.length", items) == 2)
            #expect(try value("name.length", items) == 3)
        }

        @Test func theEventsNameIsNotAParameter() throws {
            #expect(try value("event", [:]) == "dflt")
        }

        @Test func aSuggestedKeyIsTheFirstParamKeyInOrderThatHoldsAValue() throws {
            let macro = """
                {"function": "__md", "vtp_eventType": "SUGGESTED", "vtp_zzzParam": "b", "vtp_aaaParam": "a"}
                """
            let container = try Fidelity.resource(macro: macro)
            #expect(Fidelity.arguments(container, parameters: ["a": "A", "b": "B"])?["value"] == "B")
            let bare = #"{"function": "__md", "vtp_eventType": "SUGGESTED", "vtp_Param": "b"}"#
            #expect(Fidelity.arguments(try Fidelity.resource(macro: bare), parameters: ["b": "B"])?["value"] == "B")
        }
    }
}
