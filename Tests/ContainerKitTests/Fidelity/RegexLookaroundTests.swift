import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// Conditions and regex tables with lookaround or backreferences match as `new RegExp(pattern)` does in
    /// gtm.js (issue 42, point 5), on the backtracking matcher; a match that runs out of its step budget is a
    /// counted, logged non-match that the trace names.
    @Suite struct RegexLookaroundTests {
        @Test func aRegexTableWithLookaheadReturnsItsRowNotTheDefault() throws {
            // gtm.js `__remm`: `new RegExp("^" + key + "$", "gi")` (full match, ignore case), first row that tests true.
            let container = try Fidelity.resource(
                macro: """
                    {"function": "__remm", "vtp_input": ["macro", 2], "vtp_fullMatch": true, "vtp_ignoreCase": true,
                     "vtp_setDefaultValue": true, "vtp_defaultValue": "other", "vtp_map": ["list",
                       ["map", "key", "(?!.*test).*checkout.*", "value", "checkout"],
                       ["map", "key", "(\\\\w+)-\\\\1", "value", "echo"]]}
                    """,
                more: #", {"function": "__v", "vtp_name": "page", "vtp_dataLayerVersion": 2}"#,
                web: true
            )
            func value(_ page: String) -> Value? {
                Fidelity.arguments(container, before: [["page": .string(page)]])?["value"]
            }
            #expect(value("/Checkout/step1") == "checkout")
            #expect(value("/checkout/test") == "other")
            #expect(value("abc-abc") == "echo")
            #expect(value("abc-abd") == "other")
        }

        @Test func aConditionWithLookbehindHolds() throws {
            let container = try TestContainers.load(
                json: #"""
                    var data = {"resource": {"version": "1", "macros": [{"function": "__e"},
                      {"function": "__v", "vtp_name": "price", "vtp_dataLayerVersion": 2}],
                      "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}],
                      "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                                     {"function": "_re", "arg0": ["macro", 1], "arg1": "(?<=\\$)\\d+(?!\\d)"}],
                      "rules": [[["if", 0, 1], ["add", 0]]]}};
                    """#,
                file: "gtm.js"
            )
            #expect(Fidelity.arguments(container, before: [["price": "$42"]]) != nil)
            #expect(Fidelity.arguments(container, before: [["price": "42"]]) == nil)
        }

        /// A pattern that explodes (nested quantifiers in a lookahead) on a long value: the condition is false,
        /// the runtime counts it, warns once for the pattern, and the debug trace says why.
        @Test func aMatchThatRunsOutOfItsBudgetIsACountedLoggedNonMatch() throws {
            let container = try TestContainers.load(
                json: #"""
                    var data = {"resource": {"version": "1", "macros": [{"function": "__e"},
                      {"function": "__v", "vtp_name": "v", "vtp_dataLayerVersion": 2}],
                      "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}],
                      "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                                     {"function": "_re", "arg0": ["macro", 1], "arg1": "^(?=(a+)+b)"}],
                      "rules": [[["if", 0, 1], ["add", 0]]]}};
                    """#,
                file: "gtm.js"
            )
            let logger = InMemoryLogger()
            let manager = TagManager(logger: logger)
            manager.add(container)
            manager.register(tagHandler: RecordingHandler(), for: "t")
            let layer = manager.makeDataLayer(debug: true)
            let long = String(repeating: "a", count: 10_000)
            layer.push(["v": .string(long)])
            let first = layer.push(event: "e")
            layer.push(event: "e")
            #expect(first.fired.isEmpty)
            #expect(manager.regexBudgetExceededCount == 2)
            let warnings = logger.messages(at: .warning).filter { $0.contains("step") }
            #expect(warnings.count == 1)
            let reason = try #require(first.trace?.tags.first?.reason)
            #expect(reason.contains("ran out of its step budget"), "\(reason)")
            // A short value answers: no match, and nothing counted.
            layer.push(["v": "aab"])
            #expect(!layer.push(event: "e").fired.isEmpty)
            #expect(manager.regexBudgetExceededCount == 2)
        }
    }
}
