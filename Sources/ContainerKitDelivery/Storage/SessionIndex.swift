import ContainerKit

/// Where each user's session is in the segment log: its newest version (the head that fences the next line)
/// and the lines a load reads — the last snapshot and the deltas after it — and how many such live lines
/// each segment holds. A segment with live lines is kept after its records are delivered, until a newer
/// snapshot (a push's, or the log's own compaction) releases them. Pure state: the durable queue's machine
/// owns it and changes it only for committed lines.
struct SessionIndex: Sendable {
    /// One user's session in the log.
    struct Chain: Sendable {
        /// The newest committed version (a removal's too).
        var head: Int64
        /// The last snapshot and the deltas after it, in order; empty once the session ended.
        var lines: [SessionLineRef]
        /// Whether the newest line is a removal.
        var ended: Bool
        /// The identity of the newest line (``SessionLine/id``; a compaction keeps the one it folded).
        var headID: UInt64 = 0
    }

    private(set) var chains: [SessionKey: Chain] = [:]
    /// Live lines per segment.
    private(set) var pins: [UInt64: Int] = [:]

    init() {}

    /// The newest committed version of `key`'s session (0 when the log has none).
    func head(_ key: SessionKey) -> Int64 { chains[key]?.head ?? 0 }

    /// The newest committed version of `key`'s session, its identity, and whether it ended.
    func headState(_ key: SessionKey) -> HeadState {
        guard let chain = chains[key] else { return HeadState(version: 0, id: 0, ended: false) }
        return HeadState(version: chain.head, id: chain.headID, ended: chain.ended)
    }

    /// What fences the next line of a session.
    struct HeadState: Sendable, Hashable {
        var version: Int64
        var id: UInt64
        var ended: Bool
    }

    /// Whether segment `index` holds lines a load may still read.
    func isPinned(_ index: UInt64) -> Bool { (pins[index] ?? 0) > 0 }

    /// How many users have a live session in the log.
    var liveSessions: Int { chains.values.count { !$0.lines.isEmpty } }

    /// Takes a committed line (in log order). Returns the segments that no longer hold a live line.
    @discardableResult
    mutating func add(_ header: SessionLine, at ref: SessionLineRef) -> [UInt64] {
        let key = SessionKey(header.userID)
        var chain = chains[key] ?? Chain(head: 0, lines: [], ended: false)
        var released: [UInt64] = []
        switch header.kind {
        case .compaction:
            // The fold of the chain up to `version`: it replaces the lines up to there, and the deltas committed
            // after them (while the compaction read) stay. One whose base is already newer is dead bytes.
            // (At a restart the scan may meet the compaction after deltas it kept — they were committed while it
            // read — or as the first line of a session whose older segments are gone.)
            let newestSnapshot = chain.lines.last { $0.kind.isSnapshot }?.version ?? 0
            guard !chain.ended, newestSnapshot <= header.version else { return [] }
            release(chain.lines.filter { $0.version <= header.version }, into: &released)
            chain.lines = [ref] + chain.lines.filter { $0.version > header.version }.sorted { $0.version < $1.version }
            if header.version > chain.head {
                chain.head = header.version
                chain.headID = header.id
            }
            pins[ref.segment, default: 0] += 1
            chains[key] = chain
            return released
        case .snapshot:
            release(chain.lines, into: &released)
            chain.lines = [ref]
            chain.ended = false
        case .delta:
            chain.lines.append(ref)
            chain.ended = false
        case .removal:
            release(chain.lines, into: &released)
            chain.lines = []
            chain.ended = true
        }
        if header.version >= chain.head { chain.headID = header.id }
        chain.head = max(chain.head, header.version)
        if header.kind != .removal { pins[ref.segment, default: 0] += 1 }
        chains[key] = chain
        return released
    }

    private mutating func release(_ lines: [SessionLineRef], into released: inout [UInt64]) {
        for line in lines {
            let left = (pins[line.segment] ?? 1) - 1
            if left <= 0 {
                pins[line.segment] = nil
                released.append(line.segment)
            } else {
                pins[line.segment] = left
            }
        }
    }

    /// The lines a load of `key` reads, in order, and the head.
    func chain(of key: SessionKey) -> Chain? { chains[key] }

    /// The users with a live line in segment `index` whose chains a compaction folds into a new snapshot.
    func users(pinning index: UInt64) -> [(SessionKey, Chain)] {
        chains.compactMap { key, chain in chain.lines.contains { $0.segment == index } ? (key, chain) : nil }
    }
}
