/// A compiled regular expression: linear-time matching for everything but lookaround and backreferences.
///
/// The syntax is JavaScript's outside Unicode mode: literals, `.`, `^`, `$`, `\b`, `\B`, classes, class escapes
/// (`\d \w \s` and negations), character escapes, groups (capturing, `(?:)`, named `(?<name>)`), alternation,
/// greedy or lazy quantifiers (`* + ? {n} {n,} {n,m}`), lookaround (`(?=…)`, `(?!…)`, `(?<=…)`, `(?<!…)`) and
/// backreferences (`\1`, `\k<name>`). Matching is over Unicode scalars, with JavaScript's leftmost-first priority.
/// A pattern without lookaround or backreferences runs on a Pike VM (no backtracking: the work is linear in
/// pattern size × subject size, so `(a+)+$` costs what `a+$` costs). One with them runs on a backtracking
/// matcher (``usesBacktracking``), as Rust's fancy-regex hands only those to a backtracker: its cost can grow
/// exponentially, so give such matches a step budget (``matches(_:stepBudget:)``), as the evaluator always does.
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
    /// The backtracking form, for a pattern with lookaround or backreferences (``program`` is then empty).
    let backtracking: RegexBacktrackProgram?

    /// Compiles `source`, throwing a ``RegexPatternError`` that locates the first problem.
    public init(_ source: String, options: Options = []) throws(RegexPatternError) {
        let parser = try RegexParser(source)
        self.source = source
        self.options = options
        if parser.root.needsBacktracking {
            do throws(RegexPatternError) {
                backtracking = try RegexBacktrackProgram.compile(
                    parser.root,
                    captureCount: parser.captureCount,
                    ignoreCase: options.contains(.ignoreCase) || parser.inlineIgnoreCase
                )
            } catch {
                var limit = error
                limit.code = .unsupportedRegex
                throw limit
            }
            var placeholder = RegexProgram()
            placeholder.slotCount = 2 * (parser.captureCount + 1)
            program = placeholder
            return
        }
        backtracking = nil
        do throws(RegexPatternError) {
            program = try RegexCompiler.compile(
                parser.root,
                captureCount: parser.captureCount,
                ignoreCase: options.contains(.ignoreCase) || parser.inlineIgnoreCase
            )
        } catch {
            // The pattern parsed as JavaScript; what the compiler refuses is a limit of this engine.
            var limit = error.inPattern(source.unicodeScalars)
            limit.code = .unsupportedRegex
            throw limit
        }
    }

    /// The number of capturing groups, not counting group 0.
    public var captureCount: Int { program.slotCount / 2 - 1 }

    /// Whether the pattern has lookaround or backreferences and so runs on the backtracking matcher, whose
    /// cost can grow exponentially with the subject (a budgeted match gives up instead).
    public var usesBacktracking: Bool { backtracking != nil }

    /// The step budget the evaluator gives one match: about 4 million thread steps (one thread run at one
    /// input position), tens of milliseconds at most. Ordinary patterns on ordinary values use thousands; a
    /// pattern like `(.{1,1000}){24}z` over a 10 KB value would need hundreds of millions.
    public static let defaultStepBudget = 1 << 22

    /// Whether the pattern matches anywhere in `subject`. The fastest check: no capture bookkeeping.
    /// Unbudgeted on the linear-time engine: the work is linear in (program size × subject length), but that
    /// product may be large. A backtracking pattern (``usesBacktracking``) gets ``defaultStepBudget``, and a
    /// match that runs out of it does not match: these calls never hang.
    public func matches(_ subject: String) -> Bool {
        (try? matches(subject, stepBudget: unbudgeted)) ?? false
    }

    /// The budget of the calls that take none: unlimited on the linear-time engine, ``defaultStepBudget`` on
    /// the backtracking one.
    private var unbudgeted: Int { backtracking == nil ? .max : Self.defaultStepBudget }

    /// Whether the pattern matches anywhere in `subject`, giving up after `stepBudget` thread steps.
    /// - Throws: ``RegexBudgetExceeded`` when the budget runs out before the answer is known.
    public func matches(_ subject: String, stepBudget: Int) throws(RegexBudgetExceeded) -> Bool {
        if backtracking != nil { return try match(in: subject, whole: false, stepBudget: stepBudget) != nil }
        var subject = subject
        let outcome = subject.withUTF8 { bytes -> RegexPikeVM.Outcome<Bool> in
            if program.isPureLiteral {
                return .answer(RegexByteSearch.firstIndex(of: program.prefix, in: bytes, from: 0) != nil)
            }
            return RegexPikeVM.run(program, over: bytes, stepBudget: stepBudget) { $0.isMatch() }
        }
        guard case .answer(let matched) = outcome else { throw RegexBudgetExceeded(stepBudget: stepBudget) }
        return matched
    }

    /// The leftmost match in `subject`, choosing among matches there as JavaScript would (alternatives in
    /// order, greedy or lazy quantifiers as written). A backtracking pattern gets ``defaultStepBudget`` (see
    /// ``matches(_:)``).
    public func firstMatch(in subject: String) -> Match? {
        (try? match(in: subject, whole: false, stepBudget: unbudgeted)) ?? nil
    }

    /// The leftmost match in `subject`, giving up after `stepBudget` thread steps.
    /// - Throws: ``RegexBudgetExceeded`` when the budget runs out before the answer is known.
    public func firstMatch(in subject: String, stepBudget: Int) throws(RegexBudgetExceeded) -> Match? {
        try match(in: subject, whole: false, stepBudget: stepBudget)
    }

    /// The leftmost match in `subject` that starts at or after `start` (a position in `subject`), giving up after
    /// `stepBudget` thread steps: a global search's next match. Assertions see all of `subject` (`^` holds only at
    /// its start, lookbehind reads before `start`).
    /// - Throws: ``RegexBudgetExceeded`` when the budget runs out before the answer is known.
    public func firstMatch(
        in subject: String,
        from start: String.Index,
        stepBudget: Int
    ) throws(RegexBudgetExceeded) -> Match? {
        var steps = 0
        return try firstMatch(in: subject, from: start, stepBudget: stepBudget, steps: &steps)
    }

    /// ``firstMatch(in:from:stepBudget:)``, adding the steps the search took to `steps` (a byte compared counts as one
    /// for a literal pattern), so that many searches can share one budget.
    package func firstMatch(
        in subject: String,
        from start: String.Index,
        stepBudget: Int,
        steps: inout Int
    ) throws(RegexBudgetExceeded) -> Match? {
        try match(
            in: subject,
            whole: false,
            from: subject.utf8.distance(from: subject.startIndex, to: start),
            stepBudget: stepBudget,
            steps: &steps
        )
    }

    /// The match spanning all of `subject`, if there is one. A backtracking pattern gets ``defaultStepBudget``
    /// (see ``matches(_:)``).
    public func wholeMatch(in subject: String) -> Match? {
        (try? match(in: subject, whole: true, stepBudget: unbudgeted)) ?? nil
    }

    /// The number of instructions the pattern compiled to; a match on the linear-time engine costs at most this
    /// many thread steps per input scalar.
    public var programSize: Int { backtracking?.instructions.count ?? program.instructions.count }

    /// For a backtracking pattern: whether it matches `subject` (nil when the budget ran out) and the steps
    /// (instructions executed) the match took; nil for a linear-time pattern. What budget tests measure.
    package func backtrackingSteps(_ subject: String, stepBudget: Int) -> (matched: Bool?, steps: Int)? {
        guard let backtracking else { return nil }
        var contiguous = subject
        return contiguous.withUTF8 { bytes in
            let (outcome, steps) = RegexBacktracker.search(
                backtracking,
                over: bytes,
                whole: false,
                stepBudget: stepBudget
            )
            guard case .answer(let slots) = outcome else { return (nil, steps) }
            return (slots != nil, steps)
        }
    }

    private func match(in subject: String, whole: Bool, stepBudget: Int) throws(RegexBudgetExceeded) -> Match? {
        var steps = 0
        return try match(in: subject, whole: whole, from: 0, stepBudget: stepBudget, steps: &steps)
    }

    private func match(
        in subject: String,
        whole: Bool,
        from start: Int,
        stepBudget: Int,
        steps: inout Int
    ) throws(RegexBudgetExceeded) -> Match? {
        var contiguous = subject
        let outcome: RegexPikeVM.Outcome<[Int]?> = contiguous.withUTF8 { bytes in
            if let backtracking {
                let (outcome, used) = RegexBacktracker.search(
                    backtracking,
                    over: bytes,
                    whole: whole,
                    from: start,
                    stepBudget: stepBudget
                )
                steps &+= used
                return outcome
            }
            if program.isPureLiteral {
                let literal = program.prefix
                if whole {
                    return .answer(bytes.elementsEqual(literal) ? [0, literal.count] : nil)
                }
                let found = RegexByteSearch.firstIndex(of: literal, in: bytes, from: start)
                steps &+= (found ?? bytes.count) - start + 1
                return .answer(found.map { [$0, $0 + literal.count] })
            }
            return RegexPikeVM.run(program, over: bytes, stepBudget: stepBudget) {
                $0.search(whole: whole, from: start, steps: &steps)
            }
        }
        guard case .answer(let found) = outcome else { throw RegexBudgetExceeded(stepBudget: stepBudget) }
        guard let slots = found else { return nil }
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

/// A budgeted match gave up: the pattern needed more than `stepBudget` thread steps on that subject. The
/// evaluator treats it as no match (the condition is false, the `__remm` row does not match) and warns once
/// per pattern.
public struct RegexBudgetExceeded: Error, Sendable, Hashable {
    /// The budget that ran out.
    public var stepBudget: Int

    /// Creates the error for `stepBudget`.
    public init(stepBudget: Int) { self.stepBudget = stepBudget }
}
