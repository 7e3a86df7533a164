// The regex engines: pattern up to the first NUL, subject after it; the first byte's low bit picks ignore case.
// Patterns with lookaround or backreferences run on the backtracking matcher (budgeted, so never a hang);
// every other pattern also runs there, behind an always-true lookahead `(?=)`, and must find the same match
// as on the linear-time engine whenever both finish.
import ContainerKit

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRegex(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let first = bytes.first else { return 0 }
    let (patternBytes, subjectBytes) = splitAtNUL(Array(bytes.dropFirst()))
    let options: RegexPattern.Options = first & 1 == 1 ? .ignoreCase : []
    guard let pattern = try? RegexPattern(String(decoding: patternBytes, as: UTF8.self), options: options) else {
        return 0
    }
    let subject = String(decoding: subjectBytes ?? [], as: UTF8.self)
    let budget = 1 << 20
    let matched = try? pattern.matches(subject, stepBudget: budget)
    // Outer nil: the budget ran out; inner nil: no match.
    var search: RegexPattern.Match?? = nil
    do { search = .some(try pattern.firstMatch(in: subject, stepBudget: budget)) } catch {}
    // The two searches agree whenever both finish.
    if let matched, let search { precondition(matched == (search != nil), "matches and firstMatch disagree") }
    if let found = search ?? nil {
        precondition(found.groups.count == pattern.captureCount + 1)
        if first & 2 == 2 { _ = pattern.expandReplacement("[$1|$&|$$]", match: found, in: subject) }
    }
    if subject.utf8.count < 256 { _ = pattern.wholeMatch(in: subject) }
    // Not where the Pike VM is known to end a loop JavaScript backtracks into (`hasOptionalNullableIteration`).
    if !pattern.usesBacktracking, let search, patternBytes.count < 2_000,
        (try? RegexParser(pattern.source).root.hasOptionalNullableIteration) == false,
        let wrapped = try? RegexPattern(
            "(?=)(?:" + String(decoding: patternBytes, as: UTF8.self) + ")",
            options: options
        )
    {
        precondition(wrapped.usesBacktracking)
        var other: RegexPattern.Match?? = nil
        do { other = .some(try wrapped.firstMatch(in: subject, stepBudget: budget)) } catch {}
        if let other {
            precondition(other?.range == search?.range, "the backtracking and linear-time engines disagree")
        }
    }
    return 0
}
