import Testing

@testable import ContainerKit

struct RegexPatternRobustnessTests {
    /// Random soups of pattern syntax either compile or throw; nothing traps, and compiled ones run.
    @Test func arbitraryPatternTextNeverTraps() {
        var random = RegexSeededGenerator(state: 99)
        let pieces = [
            "(", ")", "(?:", "(?<n>", "(?=", "[", "]", "[^", "-", "\\", "\\d", "\\b", "\\u{1F600}", "\\x4", "{", "}",
            "{2}", "{1,}", "{,3}", "*", "+", "?", "|", "^", "$", ".", "a", "é", "😀", "0", "9", ",", "\\k", "\\c",
        ]
        let subjects = ["", "a", "aé😀", "{2}-[]", String(repeating: "a9", count: 50)]
        var compiled = 0
        for _ in 0..<3_000 {
            let source = (0..<Int.random(in: 1...12, using: &random)).map { _ in
                pieces.randomElement(using: &random)!
            }.joined()
            for options: RegexPattern.Options in [[], .ignoreCase] {
                guard let pattern = try? RegexPattern(source, options: options) else { continue }
                compiled += 1
                for subject in subjects {
                    let match = pattern.firstMatch(in: subject)
                    #expect(pattern.matches(subject) == (match != nil), "/\(source)/ on \(subject.debugDescription)")
                    if let match {
                        #expect(match.groups.count == pattern.captureCount + 1)
                        _ = pattern.expandReplacement("$1$&$$", match: match, in: subject)
                    }
                    if let whole = pattern.wholeMatch(in: subject) {
                        #expect(whole.range == subject.startIndex..<subject.endIndex)
                    }
                }
            }
        }
        #expect(compiled > 500)
    }
}
