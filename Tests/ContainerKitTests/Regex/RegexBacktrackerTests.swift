import ContainerKit
import Testing

/// The backtracking matcher that runs patterns with lookaround and backreferences (issue 42, point 5).
struct RegexBacktrackerTests {
    /// One match as JavaScript's `RegExp.prototype.exec` gave it under node: the match's range (UTF-16 offsets,
    /// ASCII subjects) and its groups, `nil` for a group that did not participate.
    struct JSCase: Sendable, CustomTestStringConvertible {
        var pattern: String
        var subject: String
        var match: Range<Int>?
        var groups: [String?]?

        init(_ pattern: String, _ subject: String, _ match: Range<Int>?, _ groups: [String?]?) {
            (self.pattern, self.subject, self.match, self.groups) = (pattern, subject, match, groups)
        }

        var testDescription: String { "/\(pattern)/ on \"\(subject)\"" }
    }

    /// Generated with node (`new RegExp(pattern).exec(subject)`; a leading `(?i)` as the `i` flag).
    static let javaScript: [JSCase] = [
        JSCase("^(?!.*debug).*screen", "app_screen", 0..<10, []),
        JSCase("^(?!.*debug).*screen", "debug_screen", nil, nil),
        JSCase("^(?!.*debug).*screen", "screen_debug", nil, nil),
        JSCase(#"(?<=\$)\d+(\.\d\d)?"#, "cost $42.50 now", 6..<11, [".50"]),
        JSCase(#"(?<=\$)\d+(\.\d\d)?"#, "42", nil, nil),
        JSCase(#"(?<=\$)\d+(\.\d\d)?"#, "$7", 1..<2, [nil]),
        JSCase(#"(?<!\$)\b\d+"#, "$42 and 17", 8..<10, []),
        JSCase(#"(?<!\$)\b\d+"#, "$1", nil, nil),
        JSCase(#"^(?=.*[A-Z])(?=.*\d).{8,}$"#, "Passw0rdX", 0..<9, []),
        JSCase(#"^(?=.*[A-Z])(?=.*\d).{8,}$"#, "password1", nil, nil),
        JSCase(#"^(?=.*[A-Z])(?=.*\d).{8,}$"#, "SHORT1", nil, nil),
        JSCase(#"(\w)\1"#, "hello", 2..<4, ["l"]),
        JSCase(#"(\w)\1"#, "abc", nil, nil),
        JSCase(#"(\w)\1"#, "aabb", 0..<2, ["a"]),
        JSCase(#"(?<q>['"]).*?\k<q>"#, "say 'hi' now", 4..<8, ["'"]),
        JSCase(#"(?<q>['"]).*?\k<q>"#, #"x"y""#, 1..<4, [#"""#]),
        JSCase(#"(?<q>['"]).*?\k<q>"#, "'no", nil, nil),
        JSCase(#"^(a+)\1$"#, "aaaa", 0..<4, ["aa"]),
        JSCase(#"^(a+)\1$"#, "aaa", nil, nil),
        JSCase(#"^(a+)\1$"#, "aa", 0..<2, ["a"]),
        JSCase(#"(?=(\d{3}))"#, "12345", 0..<0, ["123"]),
        JSCase("x(?=y)|x(?!z)", "xz xy", 3..<4, []),
        JSCase("x(?=y)|x(?!z)", "xz", nil, nil),
        JSCase("x(?=y)|x(?!z)", "xq", 0..<1, []),
        JSCase("(?<=(a)|b)c", "bc", 1..<2, [nil]),
        JSCase("(?<=(a)|b)c", "ac", 1..<2, ["a"]),
        JSCase("(?<=(a)|b)c", "c", nil, nil),
        JSCase(#"(?<=\1(a))b"#, "aab", 2..<3, ["a"]),
        JSCase(#"(?<=\1(a))b"#, "ab", nil, nil),
        JSCase(#"(a)|\1b"#, "b", 0..<1, [nil]),
        JSCase(#"(a)|\1b"#, "ab", 0..<1, ["a"]),
        JSCase(#"^(?:(?=(\w))\1)+$"#, "abc", 0..<3, ["c"]),
        JSCase(#"^(?:(?=(\w))\1)+$"#, "ab c", nil, nil),
        JSCase("(?=a)*b", "b", 0..<1, []),
        JSCase("(?=a)*b", "ab", 1..<2, []),
        JSCase("(?i)(?<=A)b", "ab", 1..<2, []),
        JSCase("(?i)(?<=A)b", "AB", 1..<2, []),
        JSCase("(?i)(?<=A)b", "Ab", 1..<2, []),
        JSCase("(?<=^|/)products(?=/|$)", "/shop/products/1", 6..<14, []),
        JSCase("(?<=^|/)products(?=/|$)", "/productsX", nil, nil),
        JSCase("(?<=^|/)products(?=/|$)", "products", 0..<8, []),
        JSCase("^(?!(?:checkout|cart)$)[a-z]+$", "cart", nil, nil),
        JSCase("^(?!(?:checkout|cart)$)[a-z]+$", "carts", 0..<5, []),
        JSCase("^(?!(?:checkout|cart)$)[a-z]+$", "checkout", nil, nil),
        JSCase("^(?!(?:checkout|cart)$)[a-z]+$", "home", 0..<4, []),
        JSCase(#"(.)(?!\1)"#, "aab", 1..<2, ["a"]),
        JSCase(#"(.)(?!\1)"#, "aaa", 2..<3, ["a"]),
        JSCase(#"\b(\w+)\s+\1\b"#, "the the cat", 0..<7, ["the"]),
        JSCase(#"\b(\w+)\s+\1\b"#, "the theme", nil, nil),
        JSCase("(?<!^)x", "xax", 2..<3, []),
        JSCase("(?<!^)x", "x", nil, nil),
        JSCase("(?<=a+)b", "aaab", 3..<4, []),
        JSCase("(?<=a+)b", "b", nil, nil),
        JSCase(#"(?<=(\d+)(\d+))$"#, "1053", 4..<4, ["1", "053"]),
        JSCase(#"(a*)*b\1"#, "aab", 2..<3, [nil]),
        JSCase(#"(a*)*b\1"#, "b", 0..<1, [nil]),
        JSCase(#"(?:(a)|b)*\1"#, "aba", 0..<2, [nil]),
        JSCase(#"(?:(a)|b)*\1"#, "bb", 0..<2, [nil]),
        // An optional iteration that matches empty fails, and JavaScript backtracks into it.
        JSCase(#"b(\s*?){1,2}(?=)"#, "ab _", 1..<3, [" "]),
        JSCase("b(?: *?|A){0,1}(?=)", "b A", 0..<2, []),
        JSCase("[ab][^ ] (?: *?|A {0,2})?(?=)", "bac A", 1..<5, []),
    ]

    /// The Pike VM ends such a loop instead (a known difference of the linear-time engine, documented at
    /// ``RegexNode/hasOptionalNullableIteration``).
    @Test func theLinearEngineEndsAnEmptyOptionalIteration() throws {
        #expect(try RegexPattern("b(?: *?|A){0,1}").firstMatch(in: "b A").map { "b A"[$0.range] } == "b")
        #expect(try RegexParser("b(?: *?|A){0,1}").root.hasOptionalNullableIteration)
    }

    @Test(arguments: javaScript)
    func matchesAsJavaScriptDoes(_ expected: JSCase) throws {
        let pattern = try RegexPattern(expected.pattern)
        #expect(pattern.usesBacktracking)
        let found = pattern.firstMatch(in: expected.subject)
        let utf8 = expected.subject.utf8
        func offsets(_ range: Range<String.Index>) -> Range<Int> {
            utf8.distance(
                from: utf8.startIndex,
                to: range.lowerBound
            )..<utf8.distance(
                from: utf8.startIndex,
                to: range.upperBound
            )
        }
        #expect(found.map { offsets($0.range) } == expected.match)
        #expect(found.map { $0.groups.dropFirst().map { $0.map { String(expected.subject[$0]) } } } == expected.groups)
        #expect(pattern.matches(expected.subject) == (expected.match != nil))
    }

    /// Nested quantifiers inside a lookahead take exponential time on a run of `a`s: on 100 KB the match stops
    /// once it has used its budget (counted in instructions executed, not time) and gives no answer. (A
    /// lookahead is atomic, so `^(?=(a|aa)+$)b` is no such pattern: it answers false in 800,010 steps.)
    @Test func nestedQuantifiersInALookaheadOnALongInputStopAtTheirBudget() throws {
        let subject = String(repeating: "a", count: 100_000)
        for source in ["(?=(a+)+b)", "^(?=(a|aa)+b)", #"(?=(\w*)*!)"#] {
            let pattern = try RegexPattern(source)
            let budget = RegexPattern.defaultStepBudget
            let (matched, steps) = try #require(pattern.backtrackingSteps(subject, stepBudget: budget))
            #expect(matched == nil, "\(source)")
            #expect(steps == budget + 1, "\(source)")
            #expect(throws: RegexBudgetExceeded(stepBudget: budget)) {
                try pattern.matches(subject, stepBudget: budget)
            }
        }
    }

    /// The backtrack stack is explicit: a loop over 100 KB inside a lookahead needs no recursion per scalar and
    /// answers within the budget when the pattern is linear.
    @Test func aLinearLookaheadOverALongInputAnswers() throws {
        let subject = String(repeating: "ab", count: 50_000)
        let pattern = try RegexPattern("^(?=(?:a|b)*$)a")
        let (matched, steps) = try #require(
            pattern.backtrackingSteps(subject, stepBudget: RegexPattern.defaultStepBudget)
        )
        #expect(matched == true)
        #expect(steps < 1_000_000)
        #expect(try pattern.matches(subject + "c", stepBudget: RegexPattern.defaultStepBudget) == false)
    }

    @Test func wholeMatchAndReplacementWork() throws {
        let pattern = try RegexPattern(#"(\w+)(?=@)"#)
        #expect(pattern.wholeMatch(in: "user@") == nil)
        #expect(try RegexPattern(#"(\w)\1+"#).wholeMatch(in: "aaaa") != nil)
        let match = try #require(pattern.firstMatch(in: "mail user@example.com"))
        #expect(pattern.expandReplacement("<$1>", match: match, in: "mail user@example.com") == "<user>")
    }

    @Test func ignoreCaseAppliesToBackreferences() throws {
        let pattern = try RegexPattern(#"(a)\1"#, options: .ignoreCase)
        #expect(pattern.matches("aA"))
        #expect(!(try RegexPattern(#"(a)\1"#)).matches("aA"))
    }

    /// Patterns without lookaround or backreferences stay on the linear-time engine.
    @Test func otherPatternsStayLinear() throws {
        #expect(!(try RegexPattern("^(a+)+$")).usesBacktracking)
        #expect(try RegexPattern(#"\1(a)"#).usesBacktracking)
        #expect(!(try RegexPattern(#"(?:x)[(?=]\k"#)).usesBacktracking)
    }
}
