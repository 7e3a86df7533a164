/// A problem found while compiling a ``RegexPattern``.
public struct RegexPatternError: Error, Sendable, Hashable {
    /// A short lowercase description naming the offending part of the pattern in quotes.
    public var message: String
    /// The 0-based index, in Unicode scalars, of the problem in the pattern.
    public var offset: Int

    init(message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }
}
