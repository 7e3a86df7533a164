/// Where the Random Number built-in variable (`__r`) gets its values.
///
/// By default every event draws from the system generator, as GTM does. A seeded source makes the value a
/// pure function of the seed and the session's event number, so two sessions given the same pushes see the
/// same "random" numbers — what `containerkit diff` needs to compare two container versions, and what
/// tests need to assert on a container that reads the variable.
///
/// ```swift
/// let manager = TagManager(randomSource: .seeded(42))
/// ```
///
/// The value is computed once per event (variables are memoised per event), so every read of the variable
/// during one event sees the same number, seeded or not.
public struct RandomSource: Sendable, Hashable {
    /// The seed, or `nil` for the system generator.
    public let seed: UInt64?

    /// Draws from the system generator: a new value for every event.
    public static let system = RandomSource(seed: nil)

    /// A deterministic source: event number `n` of any session always gets the same value for one seed.
    public static func seeded(_ seed: UInt64) -> RandomSource { RandomSource(seed: seed) }

    /// The value of the random-number variable for event number `eventNumber` of a session: an integer in
    /// `0..<2147483647`, like GTM's.
    public func value(eventNumber: Int) -> Int64 {
        guard let seed else { return Int64.random(in: 0..<2_147_483_647) }
        // SplitMix64 of the seed and the event number: well mixed, and no state to share between threads.
        var z = seed &+ UInt64(truncatingIfNeeded: eventNumber) &* 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int64(z % 2_147_483_647)
    }
}
