/// A problem found while compiling a ``RegexPattern``: a ``ContainerError`` (the module's one error type) with
/// the code ``ContainerError/Code/invalidRegex`` or ``ContainerError/Code/unsupportedRegex``, a short lowercase
/// message naming the offending part of the pattern in quotes, and its ``ContainerError/location`` in the
/// pattern (line 1; the column counts Unicode scalars from 1, the offset UTF-8 bytes from 0).
public typealias RegexPatternError = ContainerError

extension ContainerError.Code {
    /// The pattern is not valid JavaScript: JavaScript refuses it too, so GTM itself would never match it.
    public static let invalidRegex = ContainerError.Code(rawValue: "invalid_regex")
    /// The pattern is valid JavaScript that ContainerKit does not run (lookaround, backreferences, limits such
    /// as a repetition count over 1000).
    public static let unsupportedRegex = ContainerError.Code(rawValue: "unsupported_regex")
}

extension ContainerError {
    /// A regex error at the 0-based scalar `offset` of its pattern (the byte offset is filled in by
    /// ``inPattern(_:)``).
    init(message: String, offset: Int, isUnsupported: Bool = false) {
        self.init(
            isUnsupported ? .unsupportedRegex : .invalidRegex,
            message,
            location: SourceLocation(line: 1, column: offset + 1, offset: offset)
        )
    }

    /// The error with its location's byte offset counted in `scalars`, the pattern it was found in.
    func inPattern(_ scalars: some Collection<Unicode.Scalar>) -> ContainerError {
        guard var location else { return self }
        location.offset = scalars.prefix(location.column - 1).reduce(0) { $0 + $1.utf8.count }
        var located = self
        located.location = location
        return located
    }
}
