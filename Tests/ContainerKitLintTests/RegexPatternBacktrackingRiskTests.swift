import ContainerKitLint
import Testing

@testable import ContainerKit

struct RegexPatternBacktrackingRiskTests {
    @Test(arguments: [
        "(a+)+",
        "^(a+)+$",
        "(a*)*",
        "(.*a)+",
        "(\\w+\\s?)*",
        "(x+x+)+y",
        "(a|a)*",
        "(a|aa)+$",
        "(\\d{1,3})+$",
        "^([a-zA-Z0-9])(([\\-.]|[_]+)?([a-zA-Z0-9]+))*(@){1}[a-z0-9]+[.]{1}"
            + "(([a-z]{2,3})|([a-z]{2,3}[.]{1}[a-z]{2,3}))$",
        "(?:x(a|a)*y)+",
        "(\\s*,?\\s*)*$",
        "(a?){25}a{25}",
        "(\\s|.)*",
        "(\\w|\\d)+",
        "^(\\d+)*$",
    ])
    func riskyPatternIsReported(_ source: String) {
        #expect(RegexPattern.backtrackingRisk(in: source) != nil)
    }

    @Test(arguments: [
        "^(played|paused) (song|video)$",
        ".*",
        "a+b+",
        "(ab)+",
        "\\d+(\\.\\d+)*",
        "(a+b)+",
        "(\\w+\\.)*\\w+@example\\.com",
        "^(?:\\d{1,3}\\.){3}\\d{1,3}$",
        "(a|ab)*c",
        "^/products/([^/]+)/?$",
        "\\bpage_view\\b",
        "[a-z]+@[a-z]+\\.[a-z]+",
        "(a+){3}",
        "(a?){3}",
        "(.|\\n)*",
        ".*foo.*",
        "^([a-z0-9]+(-[a-z0-9]+)*\\.)+[a-z]{2,}$",
        "([^/]+/)*page",
        "(?:",
        "",
    ])
    func safePatternIsNotReported(_ source: String) {
        #expect(RegexPattern.backtrackingRisk(in: source) == nil)
    }

    @Test func descriptionNamesTheNestedQuantifier() {
        #expect(
            RegexPattern.backtrackingRisk(in: "^(a+)+$")
                == "nested quantifier '(a+)+' can take exponential time in backtracking engines"
        )
        #expect(RegexPattern.backtrackingRisk(in: "x(.*a)+y")?.contains("'(.*a)+'") == true)
    }

    @Test func descriptionNamesTheOverlappingAlternation() {
        #expect(
            RegexPattern.backtrackingRisk(in: "^(a|a)*$")
                == "quantified alternation '(a|a)*' has overlapping branches, which can take exponential time "
                + "in backtracking engines"
        )
        #expect(RegexPattern.backtrackingRisk(in: "(?:x(a|a)*y)+")?.contains("'(a|a)*'") == true)
    }

    @Test func descriptionNamesTheCountedOptionalRepetition() {
        #expect(RegexPattern.backtrackingRisk(in: "^(a?){25}a{25}$")?.hasPrefix("quantifier '(a?){25}'") == true)
    }

    @Test func descriptionIsLowercase() throws {
        let description = try #require(RegexPattern.backtrackingRisk(in: "(\\w+\\s?)*"))
        #expect(description == description.lowercased())
    }

    @Test func hugePatternFallsBackToTheSyntacticCheck() {
        let long = String(repeating: "[a-z]", count: 300)
        #expect(RegexPattern.backtrackingRisk(in: long) == nil)
        #expect(RegexPattern.backtrackingRisk(in: long + "(b+)+") != nil)
    }

    /// Soups of pattern syntax (every pair of pieces) are analysed without trapping, whether or not they parse.
    @Test func arbitraryPatternTextNeverTraps() {
        let pieces = [
            "(", ")", "(?:", "(?<n>", "(?=", "[", "]", "[^", "-", "\\", "\\d", "\\b", "\\u{1F600}", "{", "}", "{2}",
            "{1,}", "*", "+", "?", "|", "^", "$", ".", "a", "é", "😀",
        ]
        for first in pieces {
            for second in pieces {
                _ = RegexPattern.backtrackingRisk(in: first + second + first)
                _ = RegexPattern.backtrackingRisk(in: "(" + first + second + ")+")
            }
        }
    }
}
