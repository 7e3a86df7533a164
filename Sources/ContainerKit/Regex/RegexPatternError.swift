/// A problem found while compiling a ``RegexPattern``.
public struct RegexPatternError: Error, Sendable, Hashable {
    /// A short lowercase description naming the offending part of the pattern in quotes.
    public var message: String
    /// The 0-based index, in Unicode scalars, of the problem in the pattern.
    public var offset: Int
    /// Whether the pattern is valid JavaScript that ContainerKit does not run (lookaround, backreferences,
    /// limits such as a repetition count over 1000). `false`: JavaScript refuses the pattern too, so GTM
    /// itself would never match it.
    public var isUnsupported: Bool

    init(message: String, offset: Int, isUnsupported: Bool = false) {
        self.message = message
        self.offset = offset
        self.isUnsupported = isUnsupported
    }
}
