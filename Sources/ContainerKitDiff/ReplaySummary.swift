public import ContainerKit

/// One argument of a tag call that differs between the versions.
public struct ArgumentChange: Sendable, Hashable {
    /// The argument's key.
    public var argument: String
    /// The old value, `nil` when the old call has no such argument.
    public var old: Value?
    /// The new value, `nil` when the new call has no such argument.
    public var new: Value?

    /// Creates an argument change.
    public init(argument: String, old: Value?, new: Value?) {
        self.argument = argument
        self.old = old
        self.new = new
    }
}

/// A tag whose firing differs between the versions for one event.
public struct TagDifference: Sendable, Hashable {
    /// How it differs.
    public enum Kind: String, Sendable, Hashable {
        /// The tag fired in the old version only (it no longer fires).
        case onlyOld = "only_old"
        /// The tag fired in the new version only.
        case onlyNew = "only_new"
        /// The tag fired in both, with different arguments or a different status.
        case changed
    }

    /// How it differs.
    public var kind: Kind
    /// The old version's tag (`nil` for `onlyNew`).
    public var old: DiffElement?
    /// The new version's tag (`nil` for `onlyOld`).
    public var new: DiffElement?
    /// How the two tags were paired (for `changed`).
    public var match: DiffMatch?
    /// The old call as it fired (`nil` for `onlyNew`).
    public var oldTag: FiredTag?
    /// The new call as it fired (`nil` for `onlyOld`).
    public var newTag: FiredTag?
    /// The arguments that differ (for `changed`).
    public var arguments: [ArgumentChange] = []
    /// What the old call's handler produced, when it differs from the new one's (`{records, problems,
    /// drop_reason}`, records without `id` and `time`); `nil` for no output.
    public var oldOutput: Value?
    /// What the new call's handler produced, when it differs from the old one's; `nil` for no output.
    public var newOutput: Value?
    /// Whether the handlers' outputs differ.
    public var outputChanged = false

    /// Creates a tag difference.
    public init(
        kind: Kind,
        old: DiffElement?,
        new: DiffElement?,
        match: DiffMatch?,
        oldTag: FiredTag? = nil,
        newTag: FiredTag? = nil
    ) {
        self.kind = kind
        self.old = old
        self.new = new
        self.match = match
        self.oldTag = oldTag
        self.newTag = newTag
    }

    /// Whether the status differs (compared by ``FiredTag/Status/name``).
    public var statusChanged: Bool {
        guard let oldTag, let newTag else { return false }
        return !DiffReplay.sameStatus(oldTag.status, newTag.status)
    }

    /// The tag this difference is about (the new one when there is one).
    public var element: DiffElement {
        new ?? old ?? DiffElement(kind: .tag, id: nil, name: nil, index: -1, pointer: "")
    }
}

/// What differed for one replayed push.
public struct EventDifference: Sendable, Hashable {
    /// The push's line in the events file.
    public var line: Int
    /// The event name, `nil` for a push without `event`.
    public var event: String?
    /// The tags that differ, old version's firing order first.
    public var tags: [TagDifference]
}

/// The same difference seen on many events: one tag, the same kind, the same arguments changing the same
/// way (added, removed or changed) and the same status change.
public struct DifferenceGroup: Sendable, Hashable {
    /// The first occurrence.
    public var example: TagDifference
    /// On how many events it occurred.
    public var count: Int
    /// The first few line numbers.
    public var lines: [Int]
    /// The first few distinct event names.
    public var events: [String]
    /// Whether every occurrence had exactly the example's argument values.
    public var allSameValues = true
}

/// How often one tag fired in each version.
public struct TagFireCount: Sendable, Hashable {
    /// The tag in the old version (`nil` if only the new version has it).
    public var old: DiffElement?
    /// The tag in the new version (`nil` if only the old version has it).
    public var new: DiffElement?
    /// How the tags were paired.
    public var match: DiffMatch?
    /// Times fired in the old version.
    public var oldFired = 0
    /// Times fired in the new version.
    public var newFired = 0

    /// The tag this count is about (the new one when there is one).
    public var element: DiffElement {
        new ?? old ?? DiffElement(kind: .tag, id: nil, name: nil, index: -1, pointer: "")
    }
}

/// The totals of a replay.
public struct ReplaySummary: Sendable, Hashable {
    /// Pushes replayed through both versions.
    public var eventsReplayed = 0
    /// Pushes after which something fired differently.
    public var eventsWithDifferences = 0
    /// Per tag, how often it fired in each version (every tag of either version, paired).
    public var tagCounts: [TagFireCount]
    /// The differences, grouped, in order of first occurrence.
    public var groups: [DifferenceGroup] = []

    /// Creates a summary with zero counts.
    public init(tagCounts: [TagFireCount] = []) { self.tagCounts = tagCounts }

    /// Whether some tag fired in the old version and not in the new one.
    public var hasRemovals: Bool { groups.contains { $0.example.kind == .onlyOld } }

    /// The event name of a pushed message.
    static func eventName(_ message: ValueMap) -> String? {
        switch message["event"] {
        case nil, .undefined?, .null?: return nil
        case let value?: return value.jsString
        }
    }
}
