/// The candidate rules of one container for one event name (see ``CandidateRules``), as a session keeps
/// them: a bit set when the container has at most ``RuleBits/capacity`` rules — a value, copied without
/// touching a reference count that other sessions share — otherwise the shared list.
enum RuleCandidates: Sendable {
    case bits(RuleBits)
    case list([Int])

    init(_ rules: [Int], ruleCount: Int) {
        if ruleCount <= RuleBits.capacity {
            var bits = RuleBits()
            for r in rules { bits.insert(r) }
            self = .bits(bits)
        } else {
            self = .list(rules)
        }
    }

    /// Whether no rule can pass.
    var isEmpty: Bool {
        switch self {
        case .bits(let bits): return bits.isEmpty
        case .list(let list): return list.isEmpty
        }
    }
}

/// A set of rule indices below ``capacity``, iterated in ascending order.
struct RuleBits: Sendable {
    static let capacity = 256
    private var w0: UInt64 = 0
    private var w1: UInt64 = 0
    private var w2: UInt64 = 0
    private var w3: UInt64 = 0

    var isEmpty: Bool { (w0 | w1 | w2 | w3) == 0 }

    mutating func insert(_ r: Int) {
        let bit = UInt64(1) << UInt64(r & 63)
        switch r >> 6 {
        case 0: w0 |= bit
        case 1: w1 |= bit
        case 2: w2 |= bit
        default: w3 |= bit
        }
    }

    /// Word `i` (0 to 3): members `64 * i` to `64 * i + 63`.
    @inline(__always)
    func word(_ i: Int) -> UInt64 {
        switch i {
        case 0: return w0
        case 1: return w1
        case 2: return w2
        default: return w3
        }
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
        /// Per container of the snapshot, in its order.
        var candidates: [RuleCandidates]
    }

    private var entries: [Entry] = []
    private var nextReplaced = 0

    /// The candidates of each container of `snapshot` for event name `name`.
    mutating func candidates(for name: String, in snapshot: TagManager.Snapshot) -> [RuleCandidates] {
        let hash = ByteHash.hash(name)
        for i in entries.indices where entries[i].hash == hash && entries[i].name.hasSameBytes(as: name) {
            return entries[i].candidates
        }
        let found = snapshot.containers.map { container in
            RuleCandidates(
                container.storage.candidates.rules(for: name, in: container.storage),
                ruleCount: container.storage.program.rules.count
            )
        }
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
