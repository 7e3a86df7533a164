import ContainerKit

/// Ids used by more than one tag, trigger, variable or folder.
struct DuplicateIDRule: LintRule {
    static let description = RuleDescription(
        id: "duplicate_id",
        name: "Duplicate ID",
        description: "Two tags, triggers, variables or folders share an id, so references to it are ambiguous.",
        severity: .error,
        triggeringExamples: [
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"trigger": [
              {"triggerId": "7", "name": "A", "type": "CUSTOM_EVENT"},
              {"triggerId": "7", "name": "B", "type": "CUSTOM_EVENT"}]}}
            """#,
            #"""
            {"resource": {"tags": [{"function": "__funct", "tag_id": 3}, {"function": "__funct", "tag_id": 3}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"trigger": [
              {"triggerId": "7", "name": "A", "type": "CUSTOM_EVENT"},
              {"triggerId": "8", "name": "B", "type": "CUSTOM_EVENT"}]}}
            """#
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        var findings: [LintFinding] = []
        switch input.source.kind {
        case .export:
            let lists = [
                ("tag", "tagId"), ("trigger", "triggerId"), ("variable", "variableId"), ("folder", "folderId"),
            ]
            for (list, idKey) in lists {
                duplicates(in: input.source.list(list), idKey: idKey, what: list, input, &findings)
            }
        case .resource:
            duplicates(in: input.source.list("tags"), idKey: "tag_id", what: "tag", input, &findings)
        case .flat, .unknown:
            break
        }
        return findings
    }

    private func duplicates(
        in entries: [RawContainer.Entry],
        idKey: String,
        what: String,
        _ input: LintInput,
        _ findings: inout [LintFinding]
    ) {
        var first: [String: (index: Int, name: String?)] = [:]
        for (i, entry) in entries.enumerated() {
            guard let map = entry.map, let raw = map[idKey], raw != .null else { continue }
            let id = raw.jsString
            let name = map["name"]?.stringValue ?? map["instance_name"]?.stringValue
            if let earlier = first[id] {
                let this = name.map { "'\($0)'" } ?? "\(what) \(i)"
                let that = earlier.name.map { "'\($0)'" } ?? "\(what) \(earlier.index)"
                let message = "\(what) \(this) has \(idKey) '\(id)', already used by \(that)"
                findings.append(input.finding(Self.description, message, at: entry.pointer + "/" + idKey))
            } else {
                first[id] = (i, name)
            }
        }
    }
}
