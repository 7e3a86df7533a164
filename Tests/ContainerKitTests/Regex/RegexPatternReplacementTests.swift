import Testing

@testable import ContainerKit

struct RegexPatternReplacementTests {
    private func expand(_ source: String, _ subject: String, _ template: String) throws -> String {
        let pattern = try RegexPattern(source)
        let match = try #require(pattern.firstMatch(in: subject))
        return pattern.expandReplacement(template, match: match, in: subject)
    }

    @Test(arguments: [
        ("(\\w+)@(\\w+)", "mail bob@example now", "$2 at $1", "example at bob"),
        ("(\\w+)@(\\w+)", "bob@example", "[$&]", "[bob@example]"),
        ("(\\w+)@(\\w+)", "bob@example", "$$1 costs $$", "$1 costs $"),
        ("(a)(b)?", "a", "<$2>", "<>"),
        ("(a)", "a", "$2$0$x$", "$2$0$x$"),
        ("(a)", "a", "$01-$1$1", "a-aa"),
        ("(a)", "a", "$10", "a0"),
        ("a", "a", "$1 $&", "$1 a"),
        ("(é)(🎉)", "xé🎉y", "$2$1", "🎉é"),
        ("(a)", "a", "", ""),
        ("(a)", "a", "$", "$"),
        // `` $` `` and `$'`: the subject before and after the match; `$<n>` is literal without named groups.
        ("(a)", "a", "$`$'$<n>", "$<n>"),
        ("(a)", "xay", "[$`|$'|$<n>]", "[x|y|$<n>]"),
    ])
    func templateExpandsLikeJavaScript(_ source: String, _ subject: String, _ template: String, _ expected: String)
        throws
    {
        #expect(try expand(source, subject, template) == expected)
    }

    @Test func twoDigitGroupNumbersWinWhenTheGroupExists() throws {
        let source = String(repeating: "(.)", count: 12)
        let subject = "abcdefghijkl"
        #expect(try expand(source, subject, "$12$11$1") == "lka")
        #expect(try expand(source, subject, "$13") == "a3")
        #expect(try expand(source, subject, "$012") == "a2")
    }
}
