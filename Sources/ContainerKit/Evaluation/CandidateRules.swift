import Synchronization

/// Which rules an event name can possibly pass, cached per container and event name.
///
/// A rule is a candidate when it is indexed under the name, or when it is unindexed and none of its
/// event-name tests (string tests of the plain event-name variable against a constant, which depend on the
/// name alone) rules it out. Apps use a small vocabulary of event names, so after the first event of each
/// name, an event that no rule of a container can match costs one lookup, not an evaluation.
final class CandidateRules: Sendable {
    /// Names past this many are answered without being cached (a stream of unique names cannot grow memory).
    static let maximumCachedNames = 4096
    /// Longer names are answered without being cached (4096 huge names must not pin gigabytes).
    static let maximumCachedNameBytes = 256

    /// Keyed by bytes: a name canonically equivalent to a cached one may have other candidates.
    private let cache = Mutex<[ByteKey: [Int]]>([:])

    /// The candidate rules for `name`, in ascending rule order. Takes the container's storage, not its
    /// program: passing the program struct would copy (retain) every table on this hot path.
    func rules(for name: String, in storage: Container.Storage) -> [Int] {
        guard name.utf8.count <= CandidateRules.maximumCachedNameBytes else {
            return CandidateRules.compute(name, storage.program)
        }
        let key = ByteKey(name)
        if let cached = cache.withLock({ $0[key] }) { return cached }
        let computed = CandidateRules.compute(name, storage.program)
        cache.withLock { cache in
            if cache.count < CandidateRules.maximumCachedNames { cache[key] = computed }
        }
        return computed
    }

    static func compute(_ name: String, _ program: Program) -> [Int] {
        var rules = program.rulesByEvent[name] ?? []
        for r in program.unindexedRules where mayPass(program.rules[r], name, program) { rules.append(r) }
        rules.sort()
        return rules
    }

    /// False only when an event-name test alone decides the rule fails for `name`.
    private static func mayPass(_ rule: RuleDef, _ name: String, _ program: Program) -> Bool {
        for p in rule.ifs {
            if let holds = eventNameTest(p, name, program), !holds { return false }
        }
        for p in rule.unless {
            if let holds = eventNameTest(p, name, program), holds { return false }
        }
        return true
    }

    /// The outcome of predicate `p` for event `name`, when it depends on the name alone; otherwise `nil`.
    private static func eventNameTest(_ p: Int, _ name: String, _ program: Program) -> Bool? {
        let predicate = program.predicates[p]
        guard predicate.testsEventName, let text = predicate.constantText else { return nil }
        let subject = predicate.ignoreCase ? name.lowercased() : name
        let raw: Bool
        switch predicate.op {
        case .equals: raw = subject.hasSameBytes(as: text)
        case .contains: raw = TextSearch.contains(subject, text)
        case .startsWith: raw = TextSearch.hasPrefix(subject, text)
        case .endsWith: raw = TextSearch.hasSuffix(subject, text)
        case .regex:
            // Out of budget: undecided here; the evaluation proper decides (and warns).
            guard let pattern = predicate.pattern,
                let matched = try? pattern.matches(name, stepBudget: RegexPattern.defaultStepBudget)
            else { return nil }
            raw = matched
        default:
            return nil
        }
        return predicate.negate ? !raw : raw
    }
}
