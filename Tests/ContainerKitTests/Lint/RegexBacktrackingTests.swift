import Testing

@testable import ContainerKit

struct RegexBacktrackingTests {
    @Test(arguments: ["(a+)+", "^(a*)*$", "((ab)+c)*", "(x+y?)+z", "(a{2,})+", "(?:\\d+)*x", "([a-z]+)+$"])
    func nestedUnboundedQuantifiersAreRisky(pattern: String) {
        #expect(RegexBacktrackingRule.backtrackingRisk(in: pattern) != nil, "'\(pattern)' should be risky")
    }

    @Test(arguments: ["(ab)+", "a+b+", "(a|b)?c*", "[(a+)]+", "\\(a+\\)+", "(a{2,5})+", "^screen_(view|open)$", ""])
    func boundedOrFlatPatternsAreSafe(pattern: String) {
        #expect(RegexBacktrackingRule.backtrackingRisk(in: pattern) == nil, "'\(pattern)' should be safe")
    }

    @Test func theRiskNamesTheNestedQuantifier() {
        #expect(RegexBacktrackingRule.backtrackingRisk(in: "^x(a+)+$") == "nested quantifier '(a+)+'")
    }
}
