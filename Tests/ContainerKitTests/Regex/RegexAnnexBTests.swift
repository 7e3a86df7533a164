import Testing

@testable import ContainerKit

/// JavaScript's rules outside Unicode mode (ECMAScript Annex B), which `new RegExp(pattern)` in GTM's web
/// runtime follows: what each escape, class and quantifier form matches.
struct RegexAnnexBTests {
    /// A pattern, a subject, and the first match's text (`nil`: no match).
    struct Row: Sendable, CustomTestStringConvertible {
        var pattern: String
        var subject: String
        var match: String?
        var testDescription: String { "/\(pattern)/ on \(subject.debugDescription)" }
    }

    static let rows: [Row] = [
        // Identity escapes: any character but `c` (and `k` with named groups) stands for itself.
        Row(pattern: #"\q"#, subject: "aqb", match: "q"),
        Row(pattern: #"a\-b"#, subject: "a-b", match: "a-b"),
        Row(pattern: #"\/path\/"#, subject: "/path/", match: "/path/"),
        Row(pattern: #"a\ b"#, subject: "a b", match: "a b"),
        Row(pattern: #"\e\g\h\i\j\l\m\o\y\z"#, subject: "eghijlmoyz", match: "eghijlmoyz"),
        Row(pattern: #"\E\Q\_\@\%"#, subject: "EQ_@%", match: "EQ_@%"),
        Row(pattern: #"\é"#, subject: "é", match: "é"),
        // `\p` and `\P` are letters outside Unicode mode; `{L}` is no quantifier, so it is literal text.
        Row(pattern: #"\p{L}"#, subject: "xp{L}", match: "p{L}"),
        Row(pattern: #"\P"#, subject: "P", match: "P"),
        // `\k` is `k` when the pattern has no named groups.
        Row(pattern: #"\k<n>"#, subject: "k<n>", match: "k<n>"),
        Row(pattern: #"\k"#, subject: "k", match: "k"),
        // `\x` and `\u` without their hex digits are the letters themselves.
        Row(pattern: #"\x4g"#, subject: "x4g", match: "x4g"),
        Row(pattern: #"\xZ"#, subject: "xZ", match: "xZ"),
        Row(pattern: #"\u12"#, subject: "u12", match: "u12"),
        Row(pattern: #"\x41\u0042"#, subject: "AB", match: "AB"),
        // `\u{…}` is `u` and a quantifier outside Unicode mode.
        Row(pattern: #"^\u{3}$"#, subject: "uuu", match: "uuu"),
        Row(pattern: #"\u{1F600}"#, subject: "u{1F600}", match: "u{1F600}"),
        Row(pattern: #"\u{41}"#, subject: "A", match: nil),
        // Legacy octal escapes: up to three digits, at most \377.
        Row(pattern: #"\01"#, subject: "\u{1}", match: "\u{1}"),
        Row(pattern: #"\101"#, subject: "A", match: "A"),
        Row(pattern: #"\377"#, subject: "\u{FF}", match: "\u{FF}"),
        Row(pattern: #"\400"#, subject: "\u{20}0", match: "\u{20}0"),
        Row(pattern: #"\08"#, subject: "\u{0}8", match: "\u{0}8"),
        // `\N` above the number of groups is octal; `\8` and `\9` are digits.
        Row(pattern: #"\1"#, subject: "\u{1}", match: "\u{1}"),
        Row(pattern: #"(a)\2"#, subject: "a\u{2}", match: "a\u{2}"),
        Row(pattern: #"\8\9"#, subject: "89", match: "89"),
        Row(pattern: #"\18"#, subject: "\u{1}8", match: "\u{1}8"),
        // `\c` with a letter is a control character; without one it is a backslash, then `c`.
        Row(pattern: #"\cj"#, subject: "\n", match: "\n"),
        Row(pattern: #"\c1"#, subject: #"\c1"#, match: #"\c1"#),
        Row(pattern: #"\c"#, subject: #"a\c"#, match: #"\c"#),
        Row(pattern: #"[\c1]"#, subject: "\u{11}", match: "\u{11}"),
        Row(pattern: #"[\c_]"#, subject: "\u{1F}", match: "\u{1F}"),
        Row(pattern: #"[\c*]+"#, subject: #"c\*"#, match: #"c\*"#),
        // Classes: `\b` is backspace, `\B` is `B`, `\-` a dash, octal and identity escapes work inside.
        Row(pattern: #"[\b]"#, subject: "\u{8}", match: "\u{8}"),
        Row(pattern: #"[\B]"#, subject: "aB", match: "B"),
        Row(pattern: #"[a\-z]+"#, subject: "-az", match: "-az"),
        Row(pattern: #"[\1]"#, subject: "\u{1}", match: "\u{1}"),
        Row(pattern: #"[\8]"#, subject: "8", match: "8"),
        Row(pattern: #"[\q]"#, subject: "q", match: "q"),
        Row(pattern: #"[\d-z]+"#, subject: "5-z", match: "5-z"),
        Row(pattern: #"[%-\d]+"#, subject: "%-7", match: "%-7"),
        Row(pattern: #"[]a]"#, subject: "a", match: nil),
        Row(pattern: #"[^]"#, subject: "\n", match: "\n"),
        // `]`, `{` and `}` are literals where they form no class end or quantifier.
        Row(pattern: #"a]"#, subject: "a]", match: "a]"),
        Row(pattern: #"a{"#, subject: "a{", match: "a{"),
        Row(pattern: #"a{1"#, subject: "a{1", match: "a{1"),
        Row(pattern: #"a{,2}"#, subject: "a{,2}", match: "a{,2}"),
        Row(pattern: #"a{x}"#, subject: "a{x}", match: "a{x}"),
        Row(pattern: #"}"#, subject: "}", match: "}"),
        Row(pattern: #"x{2,}?"#, subject: "xxxx", match: "xx"),
        // A lone surrogate is valid and never matches well-formed text; a written pair is one character.
        Row(pattern: #"a\uD800|b"#, subject: "ab", match: "b"),
        Row(pattern: #"\uD83D\uDE00"#, subject: "😀", match: "😀"),
        // Group names may hold `$` and non-ASCII letters.
        Row(pattern: #"(?<$year>\d{4})"#, subject: "2024", match: "2024"),
        Row(pattern: #"(?<année>\d+)"#, subject: "12", match: "12"),
    ]

    @Test(arguments: rows)
    func patternMatchesAsJavaScriptDoes(_ row: Row) throws {
        let pattern = try RegexPattern(row.pattern)
        let found = pattern.firstMatch(in: row.subject).map { String(row.subject[$0.range]) }
        #expect(found == row.match)
    }

    /// Patterns JavaScript refuses: GTM itself never matches them, and the error says it is not a limitation.
    @Test(arguments: [
        #"(?<n>a)\k"#, #"(?<n>a)\k<m"#, #"(?<n>a)\k<m>"#, #"(?<n>a)[\k]"#, "(?P<n>a)", "a**", "{2}", "x{3,2}", "(a",
        "[b-a]", #"a\"#, "a(?i)b",
    ])
    func javaScriptRefusesThesePatterns(_ source: String) {
        #expect(throws: RegexPatternError.self) { try RegexPattern(source) }
        do { _ = try RegexPattern(source) } catch { #expect(error.code == .invalidRegex) }
    }

    /// Valid JavaScript beyond this engine's limits: refused, and marked as a limitation. (Lookaround and
    /// backreferences run on the backtracking matcher: see ``RegexBacktrackerTests``.)
    @Test(arguments: ["a{1001}", #"\u{1001}"#, "(?:a{1000}){1000}"])
    func validJavaScriptThisEngineDoesNotRunIsMarkedUnsupported(_ source: String) {
        do {
            _ = try RegexPattern(source)
            Issue.record("the pattern compiled")
        } catch {
            #expect(error.code == .unsupportedRegex)
        }
    }
}
