/// The candidate rules of one container for one event name (see ``CandidateRules``), as a session keeps
/// them: a bit set (one word) when the container has at most 64 rules — a value, copied without touching a
/// reference count that other sessions share — otherwise the container's shared list.
enum RuleCandidates: Sendable {
    /// Rule `r` is a candidate when bit `r` is set.
    case bits(UInt64)
    case list([Int])

    /// The most rules a container may have for its candidates to be kept as ``bits(_:)``.
    static let bitCapacity = 64

    init(_ rules: [Int], ruleCount: Int) {
        if ruleCount <= RuleCandidates.bitCapacity {
            var bits: UInt64 = 0
            for r in rules { bits |= 1 << UInt64(r) }
            self = .bits(bits)
        } else {
            self = .list(rules)
        }
    }

    /// Whether no rule can pass.
    var isEmpty: Bool {
        switch self {
        case .bits(let bits): return bits == 0
        case .list(let list): return list.isEmpty
        }
    }
}

/// The candidate rules of every live container for one event name: for the usual one or two containers of at
/// most 64 rules each, their bit sets inline (a value a push copies and drops without a reference count or an
/// allocation); otherwise every container's candidates in a list.
struct ContainerCandidates: Sendable {
    /// The bit sets of the first two containers, when they are inline.
    private var first: UInt64 = 0
    private var second: UInt64 = 0
    /// How many containers are inline (0 when ``spilled`` holds them all).
    private var inlineCount = 0
    /// Every container's candidates, when they are not all inline (more than two containers, or one with more
    /// than ``RuleCandidates/bitCapacity`` rules).
    private var spilled: [RuleCandidates]?

    init(_ candidates: [RuleCandidates]) {
        guard candidates.count <= 2 else {
            spilled = candidates
            return
        }
        for (c, rules) in candidates.enumerated() {
            guard case .bits(let bits) = rules else {
                spilled = candidates
                return
            }
            if c == 0 { first = bits } else { second = bits }
        }
        inlineCount = candidates.count
    }

    /// The candidates of container `c` (in the snapshot's order).
    subscript(c: Int) -> RuleCandidates? {
        if let spilled { return c < spilled.count ? spilled[c] : nil }
        guard c < inlineCount else { return nil }
        return .bits(c == 0 ? first : second)
    }
}

/// The candidate rules of the live containers for the event names one session pushed lately, kept in the
/// session's state: a push finds them under the session's own lock (which it takes anyway), with a fast
/// hash and no lock or reference count that another session touches. A miss reads the container's shared
/// ``CandidateRules`` cache. Cleared when the runtime snapshot changes.
struct SessionCandidates: Sendable {
    /// The most names a session keeps (apps use a small vocabulary; a stream of unique names replaces the
    /// oldest entries instead of growing).
    static let capacity = 32

    private struct Entry: Sendable {
        var hash: UInt64
        var name: String
        var candidates: ContainerCandidates
    }

    private var entries: [Entry] = []
    private var nextReplaced = 0

    /// The candidates of each container of `snapshot` for event name `name`.
    mutating func candidates(for name: String, in snapshot: TagManager.Snapshot) -> ContainerCandidates {
        let hash = ByteHash.hash(name)
        for i in entries.indices where entries[i].hash == hash && entries[i].name.hasSameBytes(as: name) {
            return entries[i].candidates
        }
        let found = ContainerCandidates(
            snapshot.containers.map { container in
                RuleCandidates(
                    container.storage.candidates.rules(for: name, in: container.storage),
                    ruleCount: container.storage.program.rules.count
                )
            }
        )
        guard name.utf8.count <= CandidateRules.maximumCachedNameBytes else { return found }
        let entry = Entry(hash: hash, name: name, candidates: found)
        if entries.count < SessionCandidates.capacity {
            entries.append(entry)
        } else {
            entries[nextReplaced] = entry
            nextReplaced = (nextReplaced + 1) % SessionCandidates.capacity
        }
        return found
    }
}
