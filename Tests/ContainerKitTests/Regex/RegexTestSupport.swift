@testable import ContainerKit

/// A small deterministic generator (SplitMix64) so the generated cases are the same on every run.
struct RegexSeededGenerator: RandomNumberGenerator {
    var state: UInt64

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var value = state
        value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
        value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
        return value ^ (value >> 31)
    }
}

/// The groups of `match` as text, and the offset (in scalars) where it starts.
func regexMatchSummary(_ match: RegexPattern.Match?, in subject: String) -> (groups: [String?], offset: Int)? {
    guard let match else { return nil }
    let scalars = subject.unicodeScalars
    let groups = match.groups.map { range in range.map { String(scalars[$0]) } }
    return (groups, scalars.distance(from: scalars.startIndex, to: match.range.lowerBound))
}
