import Testing

@testable import ContainerKit

/// Patterns that make backtracking engines take exponential time must finish (these tests would hang otherwise).
struct RegexPatternLinearTimeTests {
    @Test func nestedQuantifierFailsQuicklyOnShortInput() throws {
        let pattern = try RegexPattern("^(a+)+$")
        let subject = String(repeating: "a", count: 28) + "!"
        #expect(!pattern.matches(subject))
        #expect(pattern.firstMatch(in: subject) == nil)
        #expect(pattern.wholeMatch(in: subject) == nil)
    }

    @Test func nestedQuantifierFinishesOnTenThousandScalars() throws {
        let pattern = try RegexPattern("^(a+)+$")
        let subject = String(repeating: "a", count: 10_000) + "!"
        #expect(!pattern.matches(subject))
        #expect(pattern.firstMatch(in: subject) == nil)
        let matching = String(repeating: "a", count: 10_000)
        let match = try #require(pattern.firstMatch(in: matching))
        #expect(match.groups[1].map { matching[$0].count } == 10_000)
    }

    @Test func overlappingQuantifiersFinish() throws {
        let pattern = try RegexPattern("(x+x+)+y")
        let subject = String(repeating: "x", count: 5_000)
        #expect(!pattern.matches(subject))
        #expect(pattern.firstMatch(in: subject) == nil)
        #expect(pattern.matches(subject + "y"))
    }

    @Test func emptyLoopsTerminate() throws {
        let subject = String(repeating: "a", count: 5_000) + "b"
        for source in ["(a*)*c", "(a*)+c", "(a|)*c", "(?:a?)*?c", "((a*)*)*c", "(a{0,3})*c"] {
            let pattern = try RegexPattern(source)
            #expect(!pattern.matches(subject), "\(source)")
            #expect(pattern.firstMatch(in: subject) == nil, "\(source)")
        }
    }

    @Test func alternationOverlapFinishes() throws {
        let pattern = try RegexPattern("^(a|a|aa)*$")
        let subject = String(repeating: "a", count: 3_000) + "b"
        #expect(pattern.firstMatch(in: subject) == nil)
    }

    @Test func megabyteSubjectIsSearched() throws {
        let filler = String(repeating: "lorem ipsum dolor sit amet, ", count: 40_000)
        let subject = filler + "call 555-1234 now"
        #expect(subject.utf8.count > 1_000_000)
        let phone = try RegexPattern("(\\d{3})-(\\d{4})")
        #expect(phone.matches(subject))
        let match = try #require(phone.firstMatch(in: subject))
        #expect(subject[match.range] == "555-1234")
        #expect(match.groups[2].map { subject[$0] } == "1234")
        let missing = try RegexPattern("(\\w+)@(\\w+)")
        #expect(!missing.matches(subject))
        #expect(missing.firstMatch(in: subject) == nil)
        let unicode = try RegexPattern("[é]+", options: .ignoreCase)
        #expect(!unicode.matches(subject))
    }

    @Test func largeCountedRepetitionRuns() throws {
        let pattern = try RegexPattern("^(?:[a-z]{1,1000}\\.){2}[a-z]{2,}$")
        let label = String(repeating: "k", count: 900)
        #expect(pattern.matches("\(label).\(label).com"))
        #expect(!pattern.matches("\(label).\(label).c"))
    }
}
