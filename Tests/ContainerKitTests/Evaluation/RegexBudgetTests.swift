import ContainerKit
import ContainerKitTesting
import Testing

/// Bounded work per evaluation: a pattern that would need more than the step budget on a value does not
/// match, and the run says so once.
struct RegexBudgetTests {
    /// The pattern of the reliability probe: 3.4 s per push on a 10 KB value before the budget.
    static let costly = "(.{1,1000}){24}z"
    static let longValue = String(repeating: "a", count: 10_000)

    @Test func aMatchGivesUpWhenTheBudgetRunsOut() throws {
        let pattern = try RegexPattern("(.{1,100}){8}z")
        let subject = String(repeating: "a", count: 2_000)
        #expect(throws: RegexBudgetExceeded(stepBudget: 1_000)) { try pattern.matches(subject, stepBudget: 1_000) }
        #expect(throws: RegexBudgetExceeded(stepBudget: 1_000)) {
            try pattern.firstMatch(in: subject, stepBudget: 1_000)
        }
        #expect(try pattern.matches(subject, stepBudget: .max) == false)
        #expect(try pattern.matches(subject + "z", stepBudget: .max))
    }

    @Test func ordinaryPatternsStayFarInsideTheDefaultBudget() throws {
        let subject = String(repeating: "song-title ", count: 1_000) + "42"
        #expect(try RegexPattern(#"\d+$"#).matches(subject, stepBudget: RegexPattern.defaultStepBudget))
        #expect(try RegexPattern("^(premium|free)-(\\w+)").firstMatch(in: subject, stepBudget: 100_000) == nil)
    }

    @Test func aRegexConditionOverBudgetIsFalseWithOneWarning() throws {
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(
            try TestContainers.resource(
                macros: #"[{"function": "__e"}, {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "v"}]"#,
                tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}]"#,
                predicates: #"[{"function": "_re", "arg0": ["macro", 1], "arg1": "\#(Self.costly)"}]"#,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
        )
        let layer = manager.makeDataLayer()
        #expect(layer.push(event: "e", parameters: ["v": .string(Self.longValue)]).fired.isEmpty)
        #expect(layer.push(event: "e", parameters: ["v": .string(Self.longValue + "z")]).fired.isEmpty)
        #expect(
            layer.push(event: "e", parameters: ["v": .string(String(repeating: "a", count: 30) + "z")]).fired.count == 1
        )
        let warnings = logger.entries.filter { $0.level == .warning && $0.message.contains("steps") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.metadata["pattern"] == Self.costly && warnings.first?.metadata["place"] == "_re")
    }

    @Test func aRegexTableRowOverBudgetDoesNotMatchWithOneWarning() throws {
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(
            try TestContainers.resource(
                macros: """
                    [{"function": "__v", "vtp_name": "plan"},
                     {"function": "__remm", "instance_name": "regex", "vtp_input": ["macro", 0],
                      "vtp_map": ["list", ["map", "key", "\(Self.costly)", "value", "costly"],
                                  ["map", "key", "^a", "value", "plain"]]}]
                    """
            )
        )
        let layer = manager.makeDataLayer()
        layer.push(["plan": .string(Self.longValue)])
        #expect(layer.string(forKey: "regex") == "plain")
        layer.push(["plan": .string(Self.longValue + "b")])
        #expect(layer.string(forKey: "regex") == "plain")
        #expect(logger.entries.filter { $0.metadata["place"] == "__remm" }.count == 1)
    }

    @Test func anInvalidConstantPatternWarnsOnceWhenEvaluated() throws {
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(
            try TestContainers.resource(
                macros: #"[{"function": "__e"}, {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "v"}]"#,
                tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}]"#,
                predicates: #"[{"function": "_re", "arg0": ["macro", 1], "arg1": "(unclosed"}]"#,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
        )
        let layer = manager.makeDataLayer()
        #expect(layer.push(event: "e", parameters: ["v": "x"]).fired.isEmpty)
        #expect(layer.push(event: "e", parameters: ["v": "y"]).fired.isEmpty)
        let warnings = logger.entries.filter { $0.level == .warning && $0.metadata["pattern"] == "(unclosed" }
        #expect(warnings.count == 1)
        #expect(warnings.first?.message == "invalid regular expression; the condition is false")
    }
}
