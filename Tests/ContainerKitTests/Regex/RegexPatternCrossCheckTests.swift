import Foundation
import Testing

@testable import ContainerKit

/// Generates random patterns in the syntax both engines share, noting whether group captures are comparable
/// (JavaScript resets captures inside a repeated group at each iteration; ICU keeps them).
private struct PatternGenerator {
    var random: RegexSeededGenerator
    var capturesComparable = true

    mutating func pattern() -> String {
        capturesComparable = true
        return alternation(depth: 2, insideRepetition: false)
    }

    private mutating func alternation(depth: Int, insideRepetition: Bool) -> String {
        let branches = Int.random(in: 0..<10, using: &random) < 7 ? 1 : Int.random(in: 2...3, using: &random)
        return (0..<branches).map { _ in concatenation(depth: depth, insideRepetition: insideRepetition) }
            .joined(separator: "|")
    }

    private mutating func concatenation(depth: Int, insideRepetition: Bool) -> String {
        (0..<Int.random(in: 1...4, using: &random)).map { _ in item(depth: depth, insideRepetition: insideRepetition) }
            .joined()
    }

    private mutating func item(depth: Int, insideRepetition: Bool) -> String {
        let roll = Int.random(in: 0..<100, using: &random)
        if roll < 6 { return ["^", "$", "\\b", "\\B"].randomElement(using: &random)! }
        let quantifier =
            Int.random(in: 0..<100, using: &random) < 35
            ? ["*", "+", "?", "{1,2}", "{2}", "{0,2}", "{2,}"].randomElement(using: &random)!
                + (Bool.random(using: &random) ? "?" : "")
            : ""
        return atom(depth: depth, insideRepetition: insideRepetition || !quantifier.isEmpty) + quantifier
    }

    private mutating func atom(depth: Int, insideRepetition: Bool) -> String {
        let roll = Int.random(in: 0..<100, using: &random)
        if depth > 0 && roll < 25 {
            let capturing = Bool.random(using: &random)
            if capturing && insideRepetition { capturesComparable = false }
            let body = alternation(depth: depth - 1, insideRepetition: insideRepetition)
            return (capturing ? "(" : "(?:") + body + ")"
        }
        if roll < 70 { return ["a", "b", "c", "A", "1", " "].randomElement(using: &random)! }
        return [".", "[ab]", "[^a]", "[a-c]", "\\d", "\\w", "\\s", "\\W", "[^ ]", "[b-c1]"]
            .randomElement(using: &random)!
    }

    mutating func subject() -> String {
        let alphabet: [Character] = ["a", "a", "b", "b", "c", "A", "B", "1", " ", "_", "-"]
        return String((0..<Int.random(in: 0...10, using: &random)).map { _ in alphabet.randomElement(using: &random)! })
    }
}

struct RegexPatternCrossCheckTests {
    /// The match of `regex` in `subject` as string ranges (nil entries for groups that did not participate).
    private func foundationMatch(_ regex: NSRegularExpression, in subject: String) -> [Range<String.Index>?]? {
        let whole = NSRange(subject.startIndex..., in: subject)
        guard let result = regex.firstMatch(in: subject, range: whole) else { return nil }
        return (0..<result.numberOfRanges).map { Range(result.range(at: $0), in: subject) }
    }

    /// Whether a quantifier applies to something that can match empty. ICU ends such loops differently from
    /// JavaScript (which this engine follows), e.g. `(?:1??(?:c*){0,2})*[b-c1]` on "11b": ICU "1", JavaScript "11b".
    private func repeatsNullable(_ node: RegexNode) -> Bool {
        switch node {
        case .empty, .literal, .dot, .set, .assertion, .backreference: return false
        case .group(let body, _), .lookaround(let body, _, _): return repeatsNullable(body)
        case .concat(let items), .alternation(let items): return items.contains(where: repeatsNullable)
        case .repetition(let body, _, let max, _, _): return (max ?? 2) > 1 && body.isNullable || repeatsNullable(body)
        }
    }

    /// The backtracking matcher (issue 42, point 5) and the linear-time engine implement the same JavaScript
    /// semantics: behind an always-true lookahead `(?=)`, which sends a pattern to the backtracker, every
    /// generated pattern finds the match it finds on the Pike VM.
    @Test func theBacktrackingMatcherFindsTheMatchesOfTheLinearEngine() throws {
        var generator = PatternGenerator(random: RegexSeededGenerator(state: 20_261_128))
        var disagreements: [String] = []
        for round in 0..<600 {
            let source = generator.pattern()
            // Where the Pike VM is known to end a loop JavaScript backtracks into (see the node's documentation).
            if try RegexParser(source).root.hasOptionalNullableIteration { continue }
            let options: RegexPattern.Options = round % 4 == 0 ? .ignoreCase : []
            let linear = try RegexPattern(source, options: options)
            let backtracking = try RegexPattern("(?=)(?:" + source + ")", options: options)
            #expect(!linear.usesBacktracking && backtracking.usesBacktracking)
            for _ in 0..<25 {
                let subject = generator.subject()
                let expected = linear.firstMatch(in: subject)?.range
                let found = try backtracking.firstMatch(in: subject, stepBudget: RegexPattern.defaultStepBudget)?.range
                if found != expected { disagreements.append("/\(source)/ on \"\(subject)\"") }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(5))")
    }

    @Test func agreesWithNSRegularExpressionOnGeneratedPatterns() throws {
        var generator = PatternGenerator(random: RegexSeededGenerator(state: 20_240_517))
        var compared = 0
        var disagreements: [String] = []
        for round in 0..<600 {
            let source = generator.pattern()
            if repeatsNullable(try RegexParser(source).root) { continue }
            let ignoreCase = round % 4 == 0
            let pattern = try RegexPattern(source, options: ignoreCase ? .ignoreCase : [])
            let reference = try NSRegularExpression(pattern: source, options: ignoreCase ? .caseInsensitive : [])
            for _ in 0..<25 {
                let subject = generator.subject()
                let expected = foundationMatch(reference, in: subject)
                let found = pattern.firstMatch(in: subject)
                compared += 1
                let agrees: Bool
                if let expected, let found {
                    agrees =
                        found.range == expected[0]
                        && (!generator.capturesComparable || found.groups == expected)
                } else {
                    agrees = expected == nil && found == nil
                }
                if !agrees || pattern.matches(subject) != (expected != nil) {
                    disagreements.append("/\(source)/\(ignoreCase ? "i" : "") on \(subject.debugDescription)")
                }
            }
        }
        #expect(compared > 7_500)
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements, first: \(disagreements.prefix(10))")
    }

    @Test(arguments: [
        "(\\w+)@(\\w+)\\.(com|org)", "^(https?)://([^/]+)(/.*)?$", "\\b(\\d{1,3})\\.(\\d{1,3})\\b", "(a|ab)(c|bcd)(d*)",
        "[^,]+,(.*?),", "(?:x+|y)*z", "^\\s*(\\S+)\\s*$",
    ])
    func agreesWithNSRegularExpressionOnRealisticPatterns(_ source: String) throws {
        let subjects = [
            "contact bob@example.com or ann@site.org", "https://example.com/a/b?c=d", "http://host", "ip 10.0.0.255 x",
            "abcd", "a,b,c,d", "xxyxz", "   padded   ", "", "no match here",
        ]
        let pattern = try RegexPattern(source)
        let reference = try NSRegularExpression(pattern: source)
        for subject in subjects {
            #expect(pattern.firstMatch(in: subject)?.groups == foundationMatch(reference, in: subject), "\(subject)")
        }
    }
}
