/// A compiled regular expression whose matching time is linear in (pattern size × subject size).
///
/// The syntax is the RE2 / JavaScript common subset: literals, `.`, `^`, `$`, `\b`, `\B`, classes, class escapes
/// (`\d \w \s` and negations), character escapes, groups (capturing, `(?:)`, named `(?<name>)`), alternation and
/// greedy or lazy quantifiers (`* + ? {n} {n,} {n,m}`). Backreferences and lookaround are refused. Matching is
/// over Unicode scalars, with JavaScript's leftmost-first priority, by a Pike VM (no backtracking).
///
/// Differences from JavaScript's `RegExp` (without flags): `.` excludes only `\n`; a surrogate pair counts as one
/// scalar and `\u{…}` is always accepted; an unknown letter escape such as `\q` is an error rather than a literal;
/// `\w`, `\b`, `\d` are ASCII; when an optional iteration (`?`, or past the minimum of `{n,m}`) of a group that
/// can match empty does match empty, its captures are kept (empty) where JavaScript reports them as unset.
public struct RegexPattern: Sendable {
    /// Matching options.
    public struct Options: OptionSet, Sendable, Hashable {
        /// The raw bits.
        public let rawValue: Int

        /// Creates options from raw bits.
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// Compare scalars by simple case folding (also enabled by a leading `(?i)` in the pattern).
        public static let ignoreCase = Options(rawValue: 1)
    }

    /// A successful match.
    public struct Match: Sendable {
        /// The matched part of the subject.
        public let range: Range<String.Index>
        /// `groups[0]` is `range`; `groups[i]` is capture `i`, or nil if that group did not participate.
        public let groups: [Range<String.Index>?]
    }

    /// The pattern text.
    public let source: String
    /// The options the pattern was compiled with.
    public let options: Options
    let program: RegexProgram

    /// Compiles `source`, throwing a ``RegexPatternError`` that locates the first problem.
    public init(_ source: String, options: Options = []) throws(RegexPatternError) {
        let parser = try RegexParser(source)
        self.source = source
        self.options = options
        do throws(RegexPatternError) {
            program = try RegexCompiler.compile(
                parser.root,
                captureCount: parser.captureCount,
                ignoreCase: options.contains(.ignoreCase) || parser.inlineIgnoreCase
            )
        } catch {
            // The pattern parsed as JavaScript; what the compiler refuses is a limit of this engine.
            var limit = error
            limit.isUnsupported = true
            throw limit
        }
    }

    /// The number of capturing groups, not counting group 0.
    public var captureCount: Int { program.slotCount / 2 - 1 }

    /// Whether the pattern matches anywhere in `subject`. The fastest check: no capture bookkeeping.
    public func matches(_ subject: String) -> Bool {
        var subject = subject
        return subject.withUTF8 { bytes in
            if program.isPureLiteral {
                return RegexByteSearch.firstIndex(of: program.prefix, in: bytes, from: 0) != nil
            }
            return RegexPikeVM.run(program, over: bytes) { $0.isMatch() }
        }
    }

    /// The leftmost match in `subject`, choosing among matches there as JavaScript would (alternatives in
    /// order, greedy or lazy quantifiers as written).
    public func firstMatch(in subject: String) -> Match? {
        match(in: subject, whole: false)
    }

    /// The match spanning all of `subject`, if there is one.
    public func wholeMatch(in subject: String) -> Match? {
        match(in: subject, whole: true)
    }

    private func match(in subject: String, whole: Bool) -> Match? {
        var contiguous = subject
        let slots: [Int]? = contiguous.withUTF8 { bytes in
            if program.isPureLiteral {
                let literal = program.prefix
                if whole {
                    return bytes.elementsEqual(literal) ? [0, literal.count] : nil
                }
                return RegexByteSearch.firstIndex(of: literal, in: bytes, from: 0).map { [$0, $0 + literal.count] }
            }
            return RegexPikeVM.run(program, over: bytes) { $0.search(whole: whole) }
        }
        guard let slots else { return nil }
        let utf8 = subject.utf8
        var groups: [Range<String.Index>?] = []
        groups.reserveCapacity(slots.count / 2)
        for group in 0..<slots.count / 2 {
            let start = slots[2 * group]
            let end = slots[2 * group + 1]
            if start >= 0 && end >= start {
                groups.append(utf8.index(utf8.startIndex, offsetBy: start)..<utf8.index(utf8.startIndex, offsetBy: end))
            } else {
                groups.append(nil)
            }
        }
        guard let range = groups[0] else { return nil }
        return Match(range: range, groups: groups)
    }
}
