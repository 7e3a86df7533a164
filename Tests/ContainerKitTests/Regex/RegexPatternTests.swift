import Testing

@testable import ContainerKit

/// One row of the matching table: the expected groups of the first match (nil: no match) and where it starts.
struct RegexCase: Sendable, CustomTestStringConvertible {
    var pattern: String
    var subject: String
    var groups: [String?]?
    var offset = 0
    var options: RegexPattern.Options = []

    var testDescription: String {
        "/\(pattern)/\(options.contains(.ignoreCase) ? "i" : "") on \(subject.debugDescription)"
    }
}

private func hit(_ pattern: String, _ subject: String, _ groups: [String?], at offset: Int = 0) -> RegexCase {
    RegexCase(pattern: pattern, subject: subject, groups: groups, offset: offset)
}

private func miss(_ pattern: String, _ subject: String) -> RegexCase {
    RegexCase(pattern: pattern, subject: subject, groups: nil)
}

private func hitIgnoringCase(
    _ pattern: String,
    _ subject: String,
    _ groups: [String?],
    at offset: Int = 0
) -> RegexCase {
    RegexCase(pattern: pattern, subject: subject, groups: groups, offset: offset, options: .ignoreCase)
}

private let table: [RegexCase] = [
    // Literals and the dot.
    hit("abc", "xxabcxx", ["abc"], at: 2),
    miss("abc", "ab"),
    hit("", "abc", [""]),
    hit("a.c", "abc", ["abc"]),
    miss("a.c", "a\nc"),
    hit("a.c", "a🎉c", ["a🎉c"]),
    hit("a.c", "a\rc", ["a\rc"]),
    // Anchors and word boundaries.
    hit("^abc", "abcabc", ["abc"]),
    miss("^abc", "xabc"),
    hit("abc$", "abcabc", ["abc"], at: 3),
    hit("^$", "", [""]),
    miss("^$", "a"),
    hit("^a|b", "cb", ["b"], at: 1),
    hit("\\bfoo\\b", "a foo b", ["foo"], at: 2),
    miss("\\bfoo\\b", "afoo"),
    hit("\\Boo\\B", "foox", ["oo"], at: 1),
    hit("\\b", "  ab", [""], at: 2),
    miss("é\\b", "é"),
    // Classes.
    hit("[abc]+", "xxbcay", ["bca"], at: 2),
    hit("[^a-z0-9_]+", "ab-!?c", ["-!?"], at: 2),
    hit("[a-]+", "x-a-y", ["-a-"], at: 1),
    hit("[\\]\\-]+", "a]-]b", ["]-]"], at: 1),
    hit("[.]", "a.b", ["."], at: 1),
    hit("[\\d.]+", "v1.25x", ["1.25"], at: 1),
    hit("[\\w-]+", "!foo-bar_1!", ["foo-bar_1"], at: 1),
    hit("[^]", "\n", ["\n"]),
    miss("a[]b", "ab"),
    hit("[\\b]", "a\u{08}", ["\u{08}"], at: 1),
    hit("[\\x41-\\x43]+", "xABCD", ["ABC"], at: 1),
    hit("[^\\s]+", "  xy z", ["xy"], at: 2),
    // Class escapes.
    hit("\\d+", "abc123def", ["123"], at: 3),
    hit("\\D+", "12ab34", ["ab"], at: 2),
    hit("\\w+", "  hello_1 ", ["hello_1"], at: 2),
    hit("\\W+", "ab, cd", [", "], at: 2),
    hit("\\s+", "a \t\nb", [" \t\n"], at: 1),
    hit("\\S+", "  xy  ", ["xy"], at: 2),
    hit("\\s", "a\u{00A0}b", ["\u{00A0}"], at: 1),
    miss("\\w", "é"),
    // Character escapes.
    hit("\\t\\n\\r\\f\\v", "\t\n\r\u{0C}\u{0B}", ["\t\n\r\u{0C}\u{0B}"]),
    hit("\\x41\\u0042", "ABC", ["AB"]),
    hit("\\uD83D\\uDE00", "😀", ["😀"]),
    hit("a\\.b", "axb a.b", ["a.b"], at: 4),
    hit("\\/path\\/", "/path/", ["/path/"]),
    hit("\\\\", "a\\b", ["\\"], at: 1),
    hit("\\0", "a\u{0}b", ["\u{0}"], at: 1),
    hit("\\cJ", "\n", ["\n"]),
    hit("\\$\\^\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|", "$^*+?()[]{}|", ["$^*+?()[]{}|"]),
    // Groups.
    hit("(a)(b)?(c)", "ac", ["ac", "a", nil, "c"]),
    hit("(?:ab)+", "ababx", ["abab"]),
    hit("(?<year>\\d{4})-(?<month>\\d{2})", "on 2024-05-17", ["2024-05", "2024", "05"], at: 3),
    hit("((a)|b)+", "ab", ["ab", "b", nil]),
    hit("(a*)*", "b", ["", nil]),
    hit("(a*)+", "b", ["", ""]),
    hit("(a|ab)(c|bcd)(d*)", "abcd", ["abcd", "a", "bcd", ""]),
    hit("(z)((a+)?(b+)?(c))*", "zaacbbbcac", ["zaacbbbcac", "z", "ac", "a", nil, "c"]),
    // Alternation priority.
    hit("a|ab", "ab", ["a"]),
    hit("ab|a", "ab", ["ab"]),
    hit("(foo|foobar)bar", "foobar", ["foobar", "foo"]),
    hit("x(a|b|c)y", "xcy", ["xcy", "c"]),
    hit("a|", "b", [""]),
    // Quantifiers, greedy and lazy.
    hit("a*", "aaa", ["aaa"]),
    hit("a*?", "aaa", [""]),
    hit("a+?", "aaa", ["a"]),
    hit("a??b", "ab", ["ab"]),
    hit("<.+>", "<a><b>", ["<a><b>"]),
    hit("<.+?>", "<a><b>", ["<a>"]),
    hit("a{2}", "aaaa", ["aa"]),
    hit("a{2,}", "aaaa", ["aaaa"]),
    hit("a{2,3}", "aaaa", ["aaa"]),
    hit("a{2,3}?", "aaaa", ["aa"]),
    hit("a{0}b", "ab", ["b"], at: 1),
    hit("(a+)(a*?)(a+)", "aaaa", ["aaaa", "aaa", "", "a"]),
    hit("(a+?)(a*)", "aaaa", ["aaaa", "a", "aaa"]),
    // A brace that is not a quantifier is literal.
    hit("x{,2}", "x{,2}", ["x{,2}"]),
    hit("a{", "a{", ["a{"]),
    hit("{}", "{}", ["{}"]),
    hit("a{1,x}", "a{1,x}", ["a{1,x}"]),
    hit("]}", "]}", ["]}"]),
    // Empty matches.
    hit("x*", "abc", [""]),
    hit("(?:)", "abc", [""]),
    hit("$", "abc", [""], at: 3),
    hit("(|a)+", "aa", ["aa", "a"]),
    hit("(a|)+b", "aab", ["aab", "a"]),
    hit("(?:(a)|b)*?c", "abc", ["abc", nil]),
    hit("(a|b)*?(b)", "abb", ["ab", "a", "b"]),
    hit("(?:|a)*", "aa", ["aa"]),
    // Ignore case.
    hitIgnoringCase("hello", "Say HELLO", ["HELLO"], at: 4),
    hitIgnoringCase("[a-z]+", "ABC", ["ABC"]),
    hitIgnoringCase("[^a-z]+", "ABC1", ["1"], at: 3),
    hitIgnoringCase("[Q]", "q", ["q"]),
    hitIgnoringCase("é", "É", ["É"]),
    hitIgnoringCase("Σ", "σ", ["σ"]),
    hitIgnoringCase("ǅ", "ǆ", ["ǆ"]),
    RegexCase(pattern: "straße", subject: "STRASSE", groups: nil, options: .ignoreCase),
    hit("(?i)abc", "xABC", ["ABC"], at: 1),
    hitIgnoringCase("^hello", "HELLO world", ["HELLO"]),
    hitIgnoringCase("^[é]", "Éa", ["É"]),
    miss("abc", "ABC"),
    // Unicode: one scalar at a time.
    hit("caf.", "café", ["café"]),
    hit("cafe.", "cafe\u{301}", ["cafe\u{301}"]),
    hit("[é]", "é", ["é"]),
    hit("[😀-😂]", "😁", ["😁"]),
    hit("^.$", "😀", ["😀"]),
    miss("^.$", "👍🏽"),
    hit("^..$", "👍🏽", ["👍🏽"]),
    hit("ü+", "xüüx", ["üü"], at: 1),
    hit("(é)(🎉)", "aé🎉", ["é🎉", "é", "🎉"], at: 1),
]

struct RegexPatternTests {
    @Test(arguments: table)
    func firstMatchFindsTheExpectedGroups(_ row: RegexCase) throws {
        let pattern = try RegexPattern(row.pattern, options: row.options)
        let match = pattern.firstMatch(in: row.subject)
        #expect(pattern.matches(row.subject) == (row.groups != nil))
        guard let expected = row.groups else {
            #expect(match == nil)
            return
        }
        let found = try #require(regexMatchSummary(match, in: row.subject))
        #expect(found.groups == expected)
        #expect(found.offset == row.offset)
        #expect(pattern.captureCount == expected.count - 1)
    }

    @Test func tableCoversAtLeastSixtyCases() {
        #expect(table.count >= 60)
    }

    @Test func groupZeroIsTheMatchRange() throws {
        let subject = "id=42; id=7"
        let match = try #require(try RegexPattern("id=(\\d+)").firstMatch(in: subject))
        #expect(match.groups[0] == match.range)
        #expect(subject[match.range] == "id=42")
        #expect(match.groups.count == 2)
    }

    @Test func rangesAreValidIndicesIntoTheSubject() throws {
        let subject = "naïve 👍🏽 café"
        let match = try #require(try RegexPattern("(🏽) (caf.)").firstMatch(in: subject))
        #expect(String(subject.unicodeScalars[match.range]) == "🏽 café")
        let group = try #require(match.groups[2])
        #expect(String(subject.unicodeScalars[group]) == "café")
        #expect(subject[group.upperBound...].isEmpty)
    }

    /// A search from a later position (a global replace's next match) sees the text before it: `^` holds only at the
    /// subject's start, `\b` and lookbehind read the character before the position. Both engines, and a literal.
    @Test func aSearchFromAPositionSeesTheTextBeforeIt() throws {
        let subject = "abab"
        let second = subject.index(subject.startIndex, offsetBy: 2)
        func start(_ pattern: String, from index: String.Index) throws -> Int? {
            let match = try RegexPattern(pattern).firstMatch(in: subject, from: index, stepBudget: 1 << 20)
            return match.map { subject.distance(from: subject.startIndex, to: $0.range.lowerBound) }
        }
        #expect(try start("ab", from: second) == 2)
        #expect(try start("(a)b", from: subject.index(after: subject.startIndex)) == 2)
        #expect(try start("^a", from: second) == nil)
        #expect(try start("\\ba", from: second) == nil)
        #expect(try start("(?<=b)a", from: second) == 2)
        #expect(try start("(?<=b)a", from: subject.endIndex) == nil)
        #expect(try start("x*", from: subject.endIndex) == 4)
        #expect(try start("^a", from: subject.startIndex) == 0)
    }

    @Test func wholeMatchRequiresTheEntireSubject() throws {
        let alternatives = try RegexPattern("a|ab")
        #expect(regexMatchSummary(alternatives.firstMatch(in: "ab"), in: "ab")?.groups == ["a"])
        #expect(regexMatchSummary(alternatives.wholeMatch(in: "ab"), in: "ab")?.groups == ["ab"])
        let digits = try RegexPattern("\\d+")
        #expect(digits.firstMatch(in: "123x") != nil)
        #expect(digits.wholeMatch(in: "123x") == nil)
        #expect(digits.wholeMatch(in: "x123") == nil)
        #expect(regexMatchSummary(digits.wholeMatch(in: "123"), in: "123")?.groups == ["123"])
        let lazy = try RegexPattern("(a+?)")
        #expect(regexMatchSummary(lazy.wholeMatch(in: "aaa"), in: "aaa")?.groups == ["aaa", "aaa"])
        #expect(regexMatchSummary(try RegexPattern("").wholeMatch(in: ""), in: "")?.groups == [""])
        #expect(try RegexPattern("").wholeMatch(in: "a") == nil)
    }

    @Test func wholeMatchOfPureLiteralComparesTheWholeSubject() throws {
        let literal = try RegexPattern("page_view")
        #expect(literal.wholeMatch(in: "page_view") != nil)
        #expect(literal.wholeMatch(in: "page_view2") == nil)
        #expect(literal.firstMatch(in: "a page_view").map { regexMatchSummary($0, in: "a page_view")?.offset } == 2)
    }

    @Test func searchSkipsToALiteralPrefix() throws {
        let pattern = try RegexPattern("event=(\\w+)")
        let subject = String(repeating: "x", count: 1_000) + "event=click&event=scroll"
        #expect(regexMatchSummary(pattern.firstMatch(in: subject), in: subject)?.groups == ["event=click", "click"])
        #expect(pattern.matches(subject))
        #expect(!pattern.matches(String(repeating: "event", count: 100)))
    }

    @Test func sourceAndOptionsAreKept() throws {
        let pattern = try RegexPattern("a+", options: .ignoreCase)
        #expect(pattern.source == "a+")
        #expect(pattern.options == .ignoreCase)
    }

    @Test func capturesInsideRepetitionResetEachIteration() throws {
        let pattern = try RegexPattern("(?:(a)|(b))+")
        #expect(regexMatchSummary(pattern.firstMatch(in: "ab"), in: "ab")?.groups == ["ab", nil, "b"])
    }

    @Test func patternsWorkConcurrently() async throws {
        let pattern = try RegexPattern("(\\w+)@(\\w+)\\.com")
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<8 {
                group.addTask { pattern.firstMatch(in: "mail user\(index)@example.com now") != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results == Array(repeating: true, count: 8))
    }
}
