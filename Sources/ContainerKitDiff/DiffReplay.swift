public import ContainerKit

/// Replays pushes through both versions of a ``ContainerDiff``, each in its own fresh session, and compares
/// what fires.
///
/// Each version runs in its own ``TagManager`` (same handler registrations, same client context, the same
/// seeded ``RandomSource``), so the two never share state and a container replayed against itself never
/// differs. Every function-call tag class path either version names gets a handler that returns normally,
/// so calls report `ok`; pass `configure` to register real handlers (it runs once per side).
public struct DiffReplay: Sendable {
    /// The old version's session (the first: a replay whose pushes name their sessions makes more).
    public let oldSession: DataLayer
    /// The new version's session (the first).
    public let newSession: DataLayer
    /// The sessions the last push went to, old and new: where a push that names no session goes, and a command.
    public private(set) var currentSessions: (old: DataLayer, new: DataLayer)
    /// Everything seen so far.
    public private(set) var summary: ReplaySummary
    /// How many line numbers a group keeps.
    public var lineSamples = 5

    private let newByOld: [Int?]
    private let matchByOld: [DiffMatch?]
    private let oldTags: [DiffElement]
    private let newTags: [DiffElement]
    private var groupIndex: [GroupKey: Int] = [:]
    /// Fire counts per tag pair: index into `summary.tagCounts`, by old and by new tag index.
    private var countByOld: [Int]
    private var countByNew: [Int]
    /// Each side's runtime, and the sessions pushes named, by name (each made when its name first comes).
    private let oldManager: TagManager
    private let newManager: TagManager
    private var namedSessions: [String: (old: DataLayer, new: DataLayer)] = [:]
    private var currentName: String?

    init(
        diff: ContainerDiff,
        context: ClientContext,
        seed: UInt64,
        logger: any DiagnosticLogger,
        configure: (@Sendable (TagManager) -> Void)?
    ) {
        func manager(_ container: Container) -> TagManager {
            // A tag ContainerKit does not run is compared by the fields it would send too.
            let manager = TagManager(
                logger: logger,
                defaultContext: context,
                randomSource: .seeded(seed),
                evaluatesUnsupportedTags: true
            )
            let recorder = ClosureTagHandler { _ in }
            for path in diff.tagClassPaths { manager.register(tagHandler: recorder, for: path) }
            configure?(manager)
            manager.add(container)
            return manager
        }
        oldManager = manager(diff.old)
        newManager = manager(diff.new)
        oldSession = oldManager.makeDataLayer(sessionID: "diff")
        newSession = newManager.makeDataLayer(sessionID: "diff")
        currentSessions = (oldSession, newSession)
        let oldCount = diff.oldOutline.tags.count
        let newCount = diff.newOutline.tags.count
        var newByOld = [Int?](repeating: nil, count: oldCount)
        var matchByOld = [DiffMatch?](repeating: nil, count: oldCount)
        for (o, pair) in diff.tagPairs.newByOld {
            newByOld[o] = pair.0
            matchByOld[o] = pair.1
        }
        self.newByOld = newByOld
        self.matchByOld = matchByOld
        let matches = diff.tagMatches(located: false)
        oldTags = diff.oldOutline.tags.map(\.reference)
        newTags = diff.newOutline.tags.map(\.reference)
        var counts: [TagFireCount] = []
        var countByOld = [Int](repeating: -1, count: oldCount)
        var countByNew = [Int](repeating: -1, count: newCount)
        for match in matches {
            if let old = match.old { countByOld[old.index] = counts.count }
            if let new = match.new { countByNew[new.index] = counts.count }
            counts.append(TagFireCount(old: match.old, new: match.new, match: match.match))
        }
        self.countByOld = countByOld
        self.countByNew = countByNew
        summary = ReplaySummary(tagCounts: counts)
    }

    /// Pushes `message` to both sessions and compares the tags each fired.
    /// - Parameters:
    ///   - eventID: the push's event ID (a recorded `message_id`): a push whose ID the sessions have seen is a
    ///     duplicate on both sides and fires nothing, as it would in production.
    ///   - line: the message's line number in the events file, for the report.
    ///   - session: the name of the session it belongs to (a log of many users: `diff --session-key`), a pair of
    ///     sessions made when the name first comes; `nil`: the sessions of the push before (at first
    ///     ``oldSession`` and ``newSession``). Each session's data layer, once-per-load tags, consent state and event
    ///     IDs are its own, as a service keeps them per user.
    ///   - pageURL: the page's URL from this push on, set as both sessions' ``ClientContext/pageURL`` first (a
    ///     history change's new address).
    /// - Returns: the differences, or `nil` when both versions fired the same tags with the same arguments
    ///   and statuses.
    @discardableResult
    public mutating func replay(
        _ message: ValueMap,
        eventID: String? = nil,
        line: Int,
        session: String? = nil,
        pageURL: String? = nil
    ) -> EventDifference? {
        if let session, session != currentName {
            let pair =
                namedSessions[session]
                ?? (oldManager.makeDataLayer(sessionID: session), newManager.makeDataLayer(sessionID: session))
            namedSessions[session] = pair
            (currentSessions, currentName) = (pair, session)
        }
        if let pageURL {
            for layer in [currentSessions.old, currentSessions.new] where layer.context.pageURL != pageURL {
                var context = layer.context
                context.pageURL = pageURL
                layer.updateContext(context)
            }
        }
        let oldFired = DiffReplay.fired(currentSessions.old.push(message, eventID: eventID))
        let newFired = DiffReplay.fired(currentSessions.new.push(message, eventID: eventID))
        summary.eventsReplayed += 1
        for tag in oldFired where tag.index < countByOld.count && countByOld[tag.index] >= 0 {
            summary.tagCounts[countByOld[tag.index]].oldFired += 1
        }
        for tag in newFired where tag.index < countByNew.count && countByNew[tag.index] >= 0 {
            summary.tagCounts[countByNew[tag.index]].newFired += 1
        }
        if sameOutcome(oldFired, newFired) { return nil }
        let tags = compare(oldFired, newFired)
        if tags.isEmpty { return nil }
        let event = ReplaySummary.eventName(message)
        summary.eventsWithDifferences += 1
        for i in tags.indices { group(tags[i], line: line, event: event) }
        return EventDifference(line: line, event: event, tags: tags)
    }

    /// The tags a push fired; without copying when it evaluated one container for one event (the usual case).
    private static func fired(_ result: PushResult) -> [FiredTag] {
        result.events.count == 1 ? result.events[0].fired : result.fired
    }

    /// The fast path: the same tags, in the same order, with equal arguments and statuses.
    private func sameOutcome(_ old: [FiredTag], _ new: [FiredTag]) -> Bool {
        guard old.count == new.count else { return false }
        for i in old.indices {
            let o = old[i]
            let n = new[i]
            guard o.index < newByOld.count, newByOld[o.index] == n.index, DiffReplay.sameStatus(o.status, n.status),
                o.parameters == n.parameters, DiffReplay.sameOutput(o.output, n.output)
            else { return false }
        }
        return true
    }

    private func compare(_ old: [FiredTag], _ new: [FiredTag]) -> [TagDifference] {
        var differences: [TagDifference] = []
        differences.reserveCapacity(old.count + new.count)
        var consumed = [Bool](repeating: false, count: new.count)
        for o in old {
            let partner = o.index < newByOld.count ? newByOld[o.index] : nil
            guard let partner, let k = new.indices.first(where: { !consumed[$0] && new[$0].index == partner }) else {
                differences.append(
                    TagDifference(kind: .onlyOld, old: reference(o, oldTags), new: nil, match: nil, oldTag: o)
                )
                continue
            }
            consumed[k] = true
            let n = new[k]
            let arguments = DiffReplay.argumentChanges(o.parameters, n.parameters)
            let sameOutput = DiffReplay.sameOutput(o.output, n.output)
            if arguments.isEmpty && DiffReplay.sameStatus(o.status, n.status) && sameOutput { continue }
            var difference = TagDifference(
                kind: .changed,
                old: reference(o, oldTags),
                new: reference(n, newTags),
                match: matchByOld[o.index],
                oldTag: o,
                newTag: n
            )
            difference.arguments = arguments
            if !sameOutput {
                difference.outputChanged = true
                difference.oldOutput = DiffReplay.comparable(o.output)
                difference.newOutput = DiffReplay.comparable(n.output)
            }
            differences.append(difference)
        }
        for (k, n) in new.enumerated() where !consumed[k] {
            differences.append(
                TagDifference(kind: .onlyNew, old: nil, new: reference(n, newTags), match: nil, newTag: n)
            )
        }
        return differences
    }

    /// Statuses compare by name (a `failed` status's message is not compared; a status case added later is
    /// compared without changes here). Equal statuses are recognised without building the names.
    static func sameStatus(_ a: FiredTag.Status, _ b: FiredTag.Status) -> Bool {
        a == b || a.name == b.name
    }

    /// Whether two handler outputs are the same, records compared without their `id` and `time` (which
    /// differ between two sessions by construction).
    static func sameOutput(_ a: TagOutput?, _ b: TagOutput?) -> Bool {
        if a == nil && b == nil { return true }
        return comparable(a) == comparable(b)
    }

    /// A handler output as one value: `{records, problems, drop_reason}` with the records' `id` and `time`
    /// left out; `nil` when there is no output or it is empty.
    static func comparable(_ output: TagOutput?) -> Value? {
        guard let output, !(output.records.isEmpty && output.problems.isEmpty && output.dropReason == nil) else {
            return nil
        }
        var map = ValueMap(minimumCapacity: 3)
        if !output.records.isEmpty {
            map["records"] = .array(
                output.records.map { record in
                    guard case .object(var fields) = record.jsonValue else { return record.jsonValue }
                    fields["id"] = nil
                    fields["time"] = nil
                    return .object(fields)
                }
            )
        }
        if !output.problems.isEmpty { map["problems"] = .array(output.problems.map(Value.string)) }
        if let reason = output.dropReason { map["drop_reason"] = .string(reason) }
        return .object(map)
    }

    private func reference(_ tag: FiredTag, _ list: [DiffElement]) -> DiffElement {
        if tag.index < list.count { return list[tag.index] }
        return DiffElement(kind: .tag, id: tag.tagID.map(String.init), name: tag.name, index: tag.index, pointer: "")
    }

    /// The arguments that differ: present in one map only, or with different values; old keys first.
    static func argumentChanges(_ old: ValueMap, _ new: ValueMap) -> [ArgumentChange] {
        if old == new { return [] }
        var out: [ArgumentChange] = []
        for (key, value) in old {
            let other = new[key]
            if other != value { out.append(ArgumentChange(argument: key, old: value, new: other)) }
        }
        for (key, value) in new where old[key] == nil {
            out.append(ArgumentChange(argument: key, old: nil, new: value))
        }
        return out
    }

    // MARK: Groups

    private struct GroupKey: Hashable {
        var kind: TagDifference.Kind
        var old: Int
        var new: Int
        /// Per differing argument: its interned name times 4 plus 0 added, 1 removed, 2 changed; then the
        /// interned status change, if any.
        var shape: [Int]
    }

    /// Argument names and status changes, interned for group keys.
    private var interned: [String: Int] = [:]

    private mutating func intern(_ text: String) -> Int {
        if let id = interned[text] { return id }
        let id = interned.count
        interned[text] = id
        return id
    }

    private mutating func group(_ difference: TagDifference, line: Int, event: String?) {
        var shape: [Int] = []
        shape.reserveCapacity(difference.arguments.count + 1)
        for change in difference.arguments {
            shape.append(intern(change.argument) * 4 + (change.old == nil ? 0 : change.new == nil ? 1 : 2))
        }
        if difference.statusChanged, let o = difference.oldTag?.status.name, let n = difference.newTag?.status.name {
            shape.append(intern("status \(o) → \(n)") * 4 + 3)
        }
        if difference.outputChanged { shape.append(-1) }
        let key = GroupKey(
            kind: difference.kind,
            old: difference.old?.index ?? -1,
            new: difference.new?.index ?? -1,
            shape: shape
        )
        if let i = groupIndex[key] {
            summary.groups[i].count += 1
            if summary.groups[i].lines.count < lineSamples { summary.groups[i].lines.append(line) }
            if let event, !summary.groups[i].events.contains(event), summary.groups[i].events.count < lineSamples {
                summary.groups[i].events.append(event)
            }
            if summary.groups[i].allSameValues, summary.groups[i].example.arguments != difference.arguments {
                summary.groups[i].allSameValues = false
            }
            return
        }
        groupIndex[key] = summary.groups.count
        summary.groups.append(
            DifferenceGroup(example: difference, count: 1, lines: [line], events: event.map { [$0] } ?? [])
        )
    }
}

extension ContainerDiff {
    /// Starts a replay of pushes through both versions.
    /// - Parameters:
    ///   - context: the client context both sessions report (platform, app id, …).
    ///   - seed: the seed of both sides' random-number variable.
    ///   - logger: where both runtimes' diagnostics go.
    ///   - configure: registers extra handlers; called once for each side's ``TagManager``.
    public func makeReplay(
        context: ClientContext = ClientContext(),
        seed: UInt64 = 0,
        logger: any DiagnosticLogger = StandardErrorLogger(),
        configure: (@Sendable (TagManager) -> Void)? = nil
    ) -> DiffReplay {
        DiffReplay(diff: self, context: context, seed: seed, logger: logger, configure: configure)
    }
}
