import Testing

@testable import ContainerKit

/// A pattern that must not compile: a fragment of the expected message and the expected scalar offset.
struct RegexErrorCase: Sendable, CustomTestStringConvertible {
    var pattern: String
    var message: String
    var offset: Int

    var testDescription: String {
        pattern.count > 40 ? "\(pattern.prefix(20))… (\(pattern.unicodeScalars.count) scalars)" : pattern
    }
}

private func error(_ pattern: String, _ message: String, at offset: Int) -> RegexErrorCase {
    RegexErrorCase(pattern: pattern, message: message, offset: offset)
}

private let errors: [RegexErrorCase] = [
    error("(ab", "missing ')' to close '('", at: 0),
    error("a(b(c)", "missing ')' to close '('", at: 1),
    error("ab)", "unmatched ')'", at: 2),
    error("[abc", "unterminated character class '['", at: 0),
    error("x[^", "unterminated character class '['", at: 1),
    error("x[z-a]", "range out of order in character class 'z-a'", at: 2),
    error("*a", "nothing to repeat before '*'", at: 0),
    error("a**", "nothing to repeat before '*'", at: 2),
    error("a+?+", "nothing to repeat before '+'", at: 3),
    error("a{2}{3}", "nothing to repeat before '{3}'", at: 4),
    error("(|+)", "nothing to repeat before '+'", at: 2),
    error("{2}", "nothing to repeat before '{2}'", at: 0),
    error("^*", "nothing to repeat before '*'", at: 1),
    error("\\b+", "nothing to repeat before '+'", at: 2),
    error("ab\\", "pattern ends with an unfinished escape '\\'", at: 2),
    error("a{1001}", "repetition count over 1000 in '{1001}'", at: 1),
    error("a{2,1001}", "repetition count over 1000 in '{2,1001}'", at: 1),
    error("a{3,2}", "numbers out of order in '{3,2}'", at: 1),
    error(String(repeating: "a", count: 10_001), "pattern is too long (over 10000 characters)", at: 10_000),
    error("(?:a{1000}){1000}", "pattern is too complex", at: 0),
    error("x(a{1,1000}){50}", "pattern is too complex", at: 1),
    // Annex B lets a lookahead be quantified, not a lookbehind.
    error("(?<=a)*b", "nothing to repeat before '*'", at: 6),
    error("(?<!a){2}b", "nothing to repeat before '{2}'", at: 6),
    error(
        "(?<n>a)\\k",
        "invalid named reference '\\k' (the pattern has named groups, so '\\k' needs '<name>' of one of them)",
        at: 7
    ),
    // Outside Unicode mode `\u{110000}` is `u` repeated 110000 times: valid JavaScript, over this engine's limit.
    error("\\u{110000}", "repetition count over 1000 in '{110000}'", at: 2),
    error("(?<n>a)(?<n>b)", "duplicate group name 'n'", at: 10),
    error("(?<1a>x)", "invalid group name in '(?<1'", at: 0),
    error("a(?i)b", "inline flag '(?i)' is only supported at the start of the pattern", at: 1),
    error("(?x)", "unknown group syntax '(?x'", at: 0),
    error(
        String(repeating: "(", count: 201) + "a" + String(repeating: ")", count: 201),
        "groups nested more than 200 deep at '('",
        at: 200
    ),
    // Offsets count Unicode scalars, not UTF-16 units or characters.
    error("é(", "missing ')' to close '('", at: 1),
    error("😀😀)", "unmatched ')'", at: 2),
    error("e\u{301}e\u{301}*+", "nothing to repeat before '+'", at: 5),
]

struct RegexPatternErrorTests {
    @Test(arguments: errors)
    func invalidPatternReportsMessageAndOffset(_ row: RegexErrorCase) {
        do {
            _ = try RegexPattern(row.pattern)
            Issue.record("the pattern compiled")
        } catch {
            #expect(error.message == row.message)
            #expect(error.location?.column == row.offset + 1)
            #expect(error.location?.line == 1)
            // The byte offset: the UTF-8 length of the scalars before the problem.
            let before = row.pattern.unicodeScalars.prefix(row.offset)
            #expect(error.location?.offset == before.reduce(0) { $0 + $1.utf8.count })
        }
    }

    @Test func errorMessagesAreLowercase() {
        for row in errors {
            #expect(row.message.first?.isLowercase == true, "\(row.message)")
        }
    }

    @Test func limitsAreInclusive() throws {
        _ = try RegexPattern(String(repeating: "a", count: 10_000))
        _ = try RegexPattern("a{1000}")
        _ = try RegexPattern(String(repeating: "(", count: 200) + "a" + String(repeating: ")", count: 200))
    }
}
