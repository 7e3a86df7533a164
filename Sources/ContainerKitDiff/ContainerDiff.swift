public import ContainerKit

/// What a new container version changes compared with an old one: structurally (tags, triggers and
/// variables added, removed or changed) and, replayed over recorded pushes, in what fires and with which
/// arguments. The library side of `containerkit diff`.
///
/// ```swift
/// let diff = try await ContainerDiff.load(
///     old: "Containers/GTM-MUSIC01.json",
///     new: "Containers/next/GTM-MUSIC01.json"
/// )
/// for change in diff.structuralChanges { print(change.kind, change.element.label) }
///
/// var replay = diff.makeReplay()
/// replay.replay(["event": "played song", "genre": "jazz"], line: 1)
/// print(replay.summary.eventsWithDifferences)
/// ```
///
/// Both versions are compared through their compiled form, so two exports, two compiled containers, or one
/// of each describing the same container can be diffed. Elements are paired by id, then by name, then by
/// class path (or template) and position; every pairing says which.
public struct ContainerDiff: Sendable {
    /// The old version.
    public let old: Container
    /// The new version.
    public let new: Container
    let oldDocument: SourceDocument?
    let newDocument: SourceDocument?
    let oldOutline: ContainerOutline
    let newOutline: ContainerOutline
    /// Tag pairing: new tag index by old tag index, and how each pair matched.
    let tagPairs: Pairing

    /// Compares two compiled containers. Give the documents they were compiled from to get export ids
    /// (`variableId`, `triggerId`) and line numbers.
    public init(old: Container, new: Container, oldDocument: SourceDocument? = nil, newDocument: SourceDocument? = nil)
    {
        self.old = old
        self.new = new
        self.oldDocument = oldDocument
        self.newDocument = newDocument
        oldOutline = ContainerOutline(old, document: oldDocument?.value)
        newOutline = ContainerOutline(new, document: newDocument?.value)
        tagPairs = Pairing(oldOutline.tags, newOutline.tags)
    }

    /// Reads and compiles both files.
    /// - Throws: ``ContainerError`` for the first file that cannot be read or compiled, with its position.
    public static func load(old: String, new: String, loader: ContainerLoader = ContainerLoader())
        async throws(ContainerError) -> ContainerDiff
    {
        let oldDocument = try await loader.readDocument(path: old)
        let oldContainer = try loader.compile(oldDocument)
        let newDocument = try await loader.readDocument(path: new)
        let newContainer = try loader.compile(newDocument)
        return ContainerDiff(old: oldContainer, new: newContainer, oldDocument: oldDocument, newDocument: newDocument)
    }

    // MARK: Structure

    /// The tags, triggers and variables added, removed or changed, tags first, each kind in container order
    /// (removed elements where they were in the old version).
    public var structuralChanges: [StructuralChange] {
        var changes: [StructuralChange] = []
        // Rules are named on tags by their old-version label when they pair with an old rule, so a rule that
        // moved (or that only the old format names) does not make every tag it fires look changed.
        let triggerPairs = Pairing(oldOutline.triggers, newOutline.triggers)
        let oldLabel = { (r: Int) in oldOutline.ruleLabel(r) }
        let newLabel = { (r: Int) -> String in
            if let o = triggerPairs.oldByNew[r] { return oldOutline.ruleLabel(o) }
            return newOutline.ruleLabel(r) + " (new)"
        }
        for kind in DiffElement.Kind.allCases {
            var olds = oldOutline.elements(kind)
            var news = newOutline.elements(kind)
            if kind == .tag {
                for i in olds.indices { olds[i].fields = ContainerOutline.tagFields(olds[i], ruleLabel: oldLabel) }
                for i in news.indices { news[i].fields = ContainerOutline.tagFields(news[i], ruleLabel: newLabel) }
            }
            let pairing = kind == .tag ? tagPairs : kind == .trigger ? triggerPairs : Pairing(olds, news)
            var emittedNew = Set<Int>()
            for (o, element) in olds.enumerated() {
                guard let (n, match) = pairing.newByOld[o] else {
                    changes.append(
                        StructuralChange(kind: .removed, old: locate(element, oldDocument), new: nil, fields: [])
                    )
                    continue
                }
                // Added elements that come before this one in the new version are listed first.
                for k in 0..<n where pairing.oldByNew[k] == nil && emittedNew.insert(k).inserted {
                    changes.append(
                        StructuralChange(kind: .added, old: nil, new: locate(news[k], newDocument), fields: [])
                    )
                }
                let fields = ContainerDiff.fieldChanges(
                    element.fields,
                    news[n].fields,
                    oldUnknown: element.isUnknown,
                    newUnknown: news[n].isUnknown
                )
                if !fields.isEmpty {
                    changes.append(
                        StructuralChange(
                            kind: .changed,
                            old: locate(element, oldDocument),
                            new: locate(news[n], newDocument),
                            match: match,
                            fields: fields
                        )
                    )
                }
            }
            for k in news.indices where pairing.oldByNew[k] == nil && emittedNew.insert(k).inserted {
                changes.append(StructuralChange(kind: .added, old: nil, new: locate(news[k], newDocument), fields: []))
            }
        }
        return changes
    }

    private func locate(_ element: ContainerOutline.Element, _ document: SourceDocument?) -> DiffElement {
        var reference = element.reference
        if !element.pointer.isEmpty { reference.location = document?.locate(element.pointer) }
        return reference
    }

    static func fieldChanges(
        _ old: [(key: String, value: String)],
        _ new: [(key: String, value: String)],
        oldUnknown: (String) -> Bool = { _ in false },
        newUnknown: (String) -> Bool = { _ in false }
    ) -> [FieldChange] {
        var newValues: [String: String] = [:]
        for field in new where newValues[field.key] == nil { newValues[field.key] = field.value }
        var seen = Set<String>()
        var out: [FieldChange] = []
        for field in old where seen.insert(field.key).inserted {
            let other = newValues[field.key]
            if other == nil && newUnknown(field.key) { continue }
            if other != field.value { out.append(FieldChange(field: field.key, old: field.value, new: other)) }
        }
        for field in new where seen.insert(field.key).inserted && !oldUnknown(field.key) {
            out.append(FieldChange(field: field.key, old: nil, new: field.value))
        }
        return out
    }

    // MARK: Tags

    /// How each tag of the old version pairs with one of the new version.
    public var tagMatches: [TagMatch] { tagMatches(located: true) }

    /// ``tagMatches``, with line numbers only when `located` (finding them scans the file for each tag).
    func tagMatches(located: Bool) -> [TagMatch] {
        func locate(_ element: ContainerOutline.Element, _ document: SourceDocument?) -> DiffElement {
            located ? self.locate(element, document) : element.reference
        }
        var out: [TagMatch] = []
        for (o, element) in oldOutline.tags.enumerated() {
            let pair = tagPairs.newByOld[o]
            out.append(
                TagMatch(
                    old: locate(element, oldDocument),
                    new: pair.map { locate(newOutline.tags[$0.0], newDocument) },
                    match: pair?.1
                )
            )
        }
        for (n, element) in newOutline.tags.enumerated() where tagPairs.oldByNew[n] == nil {
            out.append(TagMatch(old: nil, new: locate(element, newDocument), match: nil))
        }
        return out
    }

    /// The class paths and function names the function-call tags of either version call (when fixed in
    /// the container), in order of appearance.
    public var tagClassPaths: [String] {
        var seen = Set<String>()
        return (oldOutline.tagClassPaths + newOutline.tagClassPaths).filter { seen.insert($0).inserted }
    }
}

/// How one tag of either version pairs with a tag of the other.
public struct TagMatch: Sendable, Hashable {
    /// The tag in the old version (`nil` for a tag only the new version has).
    public var old: DiffElement?
    /// The tag in the new version (`nil` for a tag only the old version has).
    public var new: DiffElement?
    /// How they were paired.
    public var match: DiffMatch?
}

/// Pairs the elements of two lists: by id, then by name, then by match key and position.
struct Pairing: Sendable {
    var newByOld: [Int: (Int, DiffMatch)] = [:]
    var oldByNew: [Int: Int] = [:]

    init(_ olds: [ContainerOutline.Element], _ news: [ContainerOutline.Element]) {
        var newByID: [String: Int] = [:]
        for (n, element) in news.enumerated() {
            if let id = element.id, newByID[id] == nil { newByID[id] = n }
        }
        for (o, element) in olds.enumerated() {
            guard let id = element.id, let n = newByID[id], oldByNew[n] == nil else { continue }
            pair(o, n, .id)
        }
        var newByName: [String: [Int]] = [:]
        for (n, element) in news.enumerated() where oldByNew[n] == nil {
            if let name = element.name { newByName[name, default: []].append(n) }
        }
        for (o, element) in olds.enumerated() where newByOld[o] == nil {
            guard let name = element.name, let candidates = newByName[name],
                let n = candidates.first(where: { oldByNew[$0] == nil })
            else { continue }
            pair(o, n, .name)
        }
        // Triggers: a rule with the same conditions (compiled resources name no rules).
        var newByConditions: [String: [Int]] = [:]
        for (n, element) in news.enumerated() where oldByNew[n] == nil && element.kind == .trigger {
            newByConditions[element.conditions, default: []].append(n)
        }
        for (o, element) in olds.enumerated() where newByOld[o] == nil && element.kind == .trigger {
            guard let candidates = newByConditions[element.conditions],
                let n = candidates.first(where: { oldByNew[$0] == nil && !(element.id != nil && news[$0].id != nil) })
            else { continue }
            pair(o, n, .conditions)
        }
        var newByKey: [String: [Int]] = [:]
        for (n, element) in news.enumerated() where oldByNew[n] == nil {
            newByKey[element.matchKey, default: []].append(n)
        }
        var used: [String: Int] = [:]
        for (o, element) in olds.enumerated() where newByOld[o] == nil {
            guard let candidates = newByKey[element.matchKey] else { continue }
            // Two elements that both have ids are different elements when the ids differ.
            var k = used[element.matchKey, default: 0]
            while k < candidates.count,
                oldByNew[candidates[k]] != nil || (element.id != nil && news[candidates[k]].id != nil)
            {
                k += 1
            }
            guard k < candidates.count else { continue }
            used[element.matchKey] = k + 1
            pair(o, candidates[k], .position)
        }
    }

    private mutating func pair(_ o: Int, _ n: Int, _ match: DiffMatch) {
        newByOld[o] = (n, match)
        oldByNew[n] = o
    }
}
