import Testing

@testable import ContainerKit
@testable import ContainerKitLint

/// The lint rule delegates to the regex engine's analysis: a pattern is risky when one string can be
/// matched in exponentially many ways by a backtracking engine.
struct RegexBacktrackingTests {
    @Test(arguments: ["(a+)+", "^(a*)*$", "(x+y?)+z", "(a{2,})+", "(?:\\d+)*x", "([a-z]+)+$", "(a{2,5})+", "(a|a)*"])
    func ambiguousNestedRepetitionIsRisky(pattern: String) {
        #expect(RegexBacktrackingRule.backtrackingRisk(in: pattern) != nil, "'\(pattern)' should be risky")
    }

    @Test(arguments: ["(ab)+", "a+b+", "(a|b)?c*", "[(a+)]+", "\\(a+\\)+", "((ab)+c)*", "^screen_(view|open)$", ""])
    func unambiguousPatternsAreSafe(pattern: String) {
        #expect(RegexBacktrackingRule.backtrackingRisk(in: pattern) == nil, "'\(pattern)' should be safe")
    }

    @Test func theRiskNamesTheNestedQuantifier() throws {
        let risk = try #require(RegexBacktrackingRule.backtrackingRisk(in: "^x(a+)+$"))
        #expect(risk.contains("'(a+)+'"))
    }
}
