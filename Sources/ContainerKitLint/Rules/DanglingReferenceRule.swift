import ContainerKit

/// References that point at nothing: macro, tag and predicate indices of compiled resources; trigger,
/// tag, folder and `{{Name}}` references of exports.
///
/// It walks the raw document, so it reports every dangling reference (the compiler stops at the first).
struct DanglingReferenceRule: LintRule {
    static let description = RuleDescription(
        id: "dangling_reference",
        name: "Dangling Reference",
        description: "A macro, predicate, tag, trigger or variable reference (index, id or `{{Name}}`) names nothing.",
        severity: .error,
        triggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__c", "vtp_value": ["macro", 4]}],
              "tags": [], "predicates": [], "rules": []}}
            """#,
            #"{"resource": {"macros": [], "tags": [], "predicates": [], "rules": [[["if", 0], ["add", 2]]]}}"#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "tag": [{"tagId": "1", "name": "T", "type": "funct", "firingTriggerId": ["99"]}]}}
            """#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {"variable": [{"name": "A", "type": "c",
              "parameter": [{"type": "TEMPLATE", "key": "value", "value": "{{Missing}}"}]}]}}
            """#,
        ],
        nonTriggeringExamples: [
            #"""
            {"resource": {"macros": [{"function": "__e"}],
              "tags": [{"function": "__funct", "vtp_classPath": "A",
                "vtp_functionArgument": ["list", ["map", "key", "e", "value", ["macro", 0]]]}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "go"}],
              "rules": [[["if", 0], ["add", 0]]]}}
            """#,
            #"""
            {"exportFormatVersion": 2, "containerVersion": {
              "tag": [{"tagId": "1", "name": "T", "type": "funct", "firingTriggerId": ["2147479553"],
                "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "{{Path}}"}]}],
              "variable": [{"name": "Path", "type": "c"}], "builtInVariable": [{"type": "EVENT", "name": "Event"}]}}
            """#,
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        var findings: [LintFinding] = []
        switch input.source.kind {
        case .resource: checkResource(input, &findings)
        case .export: checkExport(input, &findings)
        case .flat, .unknown: break
        }
        // The compiler's own finding, if the walk above somehow missed it.
        if let error = input.compileError, error.code == .danglingReference,
            !findings.contains(where: { $0.pointer == error.pointer })
        {
            findings.append(input.finding(Self.description, for: error))
        }
        return findings
    }

    // MARK: Compiled resources

    private func checkResource(_ input: LintInput, _ findings: inout [LintFinding]) {
        let source = input.source
        let counts = (
            macros: source.count("macros"), tags: source.count("tags"), predicates: source.count("predicates")
        )
        for list in ["macros", "tags", "predicates"] {
            for entry in source.list(list) {
                guard let map = entry.map else { continue }
                for (key, value) in map {
                    walk(value, at: JSONPointer.appending(entry.pointer, key), counts: counts, input, &findings)
                }
            }
        }
        for rule in source.list("rules") {
            guard case .array(let clauses) = rule.value else { continue }
            for (c, clause) in clauses.enumerated() {
                guard case .array(let items) = clause, case .string(let op)? = items.first else { continue }
                let (limit, what): (Int, String)
                switch op {
                case "if", "unless": (limit, what) = (counts.predicates, "predicate")
                case "add", "block": (limit, what) = (counts.tags, "tag")
                default: continue
                }
                for k in items.indices.dropFirst() where !isIndex(items[k], below: limit) {
                    let message = "rule refers to \(what) '\(items[k].jsString)', but there \(Self.count(limit, what))"
                    let pointer = JSONPointer.appending(JSONPointer.appending(rule.pointer, c), k)
                    findings.append(input.finding(Self.description, message, at: pointer))
                }
            }
        }
    }

    /// Walks a resource value the way the compiler reads expressions.
    private func walk(
        _ value: Value,
        at pointer: String,
        counts: (macros: Int, tags: Int, predicates: Int),
        _ input: LintInput,
        _ findings: inout [LintFinding]
    ) {
        guard case .array(let items) = value, case .string(let head)? = items.first else { return }
        switch head {
        case "macro":
            let target = items.count > 1 ? items[1] : .undefined
            if items.count != 2 || !isIndex(target, below: counts.macros) {
                let message = "macro reference '\(target.jsString)' does not name one of the \(counts.macros) macros"
                findings.append(input.finding(Self.description, message, at: pointer))
            }
        case "tag":
            let target = items.count > 1 ? items[1] : .undefined
            if !isIndex(target, below: counts.tags) {
                let message = "tag reference '\(target.jsString)' does not name one of the \(counts.tags) tags"
                findings.append(input.finding(Self.description, message, at: pointer))
            }
        case "template", "list", "map":
            for i in items.indices.dropFirst() {
                walk(items[i], at: JSONPointer.appending(pointer, i), counts: counts, input, &findings)
            }
        case "escape":
            if items.count > 1 {
                walk(items[1], at: JSONPointer.appending(pointer, 1), counts: counts, input, &findings)
            }
        default:
            return
        }
    }

    /// "are 3 tags", "is 1 tag", "are no tags".
    private static func count(_ n: Int, _ noun: String) -> String {
        n == 0 ? "are no \(noun)s" : n == 1 ? "is only 1 \(noun)" : "are only \(n) \(noun)s"
    }

    private func isIndex(_ value: Value, below limit: Int) -> Bool {
        guard let number = value.jsNumber else { return false }
        return number == number.rounded() && number >= 0 && number < Double(limit)
    }

    // MARK: Exports

    private func checkExport(_ input: LintInput, _ findings: inout [LintFinding]) {
        let source = input.source
        let tags = source.list("tag")
        let triggers = source.list("trigger")
        let variables = source.list("variable")
        var names: Set<String> = ["_event"]
        for entry in variables + source.list("builtInVariable") {
            if let name = entry.map?["name"]?.stringValue { names.insert(name) }
        }
        names.formUnion(source.enabledBuiltInVariableNames)
        let triggerIDs = Set(triggers.compactMap { $0.map?["triggerId"]?.jsString })
        let tagNames = Set(tags.compactMap { $0.map?["name"]?.stringValue })
        let folderIDs = Set(source.list("folder").compactMap { $0.map?["folderId"]?.jsString })

        func checkTriggers(_ map: ValueMap, _ field: String, owner: String, at pointer: String) {
            guard case .array(let ids)? = map[field] else { return }
            for (k, raw) in ids.enumerated() {
                let id = raw.jsString
                guard !triggerIDs.contains(id), !RawContainer.isBuiltInTriggerID(id) else { continue }
                let message = "\(owner) refers to trigger '\(id)', which does not exist"
                findings.append(
                    input.finding(Self.description, message, at: JSONPointer.appending(pointer + "/" + field, k))
                )
            }
        }
        func checkFolder(_ map: ValueMap, owner: String, at pointer: String) {
            guard let folder = map["parentFolderId"]?.jsString, !folderIDs.contains(folder) else { return }
            let message = "\(owner) is in folder '\(folder)', which does not exist"
            findings.append(input.finding(Self.description, message, at: pointer + "/parentFolderId"))
        }

        for entry in tags {
            guard let map = entry.map else { continue }
            let owner = "tag '\(map["name"]?.jsString ?? "")'"
            checkTriggers(map, "firingTriggerId", owner: owner, at: entry.pointer)
            checkTriggers(map, "blockingTriggerId", owner: owner, at: entry.pointer)
            for field in ["setupTag", "teardownTag"] {
                guard case .array(let list)? = map[field] else { continue }
                for (k, item) in list.enumerated() {
                    guard let name = item.objectValue?["tagName"]?.stringValue, !tagNames.contains(name) else {
                        continue
                    }
                    let pointer = JSONPointer.appending(entry.pointer + "/" + field, k) + "/tagName"
                    findings.append(
                        input.finding(
                            Self.description,
                            "\(owner) sequences tag '\(name)', which does not exist",
                            at: pointer
                        )
                    )
                }
            }
            checkFolder(map, owner: owner, at: entry.pointer)
            walkReferences(entry.value, at: entry.pointer, names: names, input, &findings)
        }
        for entry in triggers {
            guard let map = entry.map else { continue }
            checkFolder(map, owner: "trigger '\(map["name"]?.jsString ?? "")'", at: entry.pointer)
            walkReferences(entry.value, at: entry.pointer, names: names, input, &findings)
        }
        for entry in variables {
            guard let map = entry.map else { continue }
            let owner = "variable '\(map["name"]?.jsString ?? "")'"
            checkTriggers(map, "enablingTriggerId", owner: owner, at: entry.pointer)
            checkTriggers(map, "disablingTriggerId", owner: owner, at: entry.pointer)
            checkFolder(map, owner: owner, at: entry.pointer)
            walkReferences(entry.value, at: entry.pointer, names: names, input, &findings)
        }
    }

    /// Keys whose text is prose, not a template.
    private static let proseKeys: Set<String> = ["name", "notes", "description", "fingerprint", "tagManagerUrl"]

    /// Reports every `{{Name}}` in the strings under `value` that names no variable or built-in variable.
    private func walkReferences(
        _ value: Value,
        at pointer: String,
        names: Set<String>,
        _ input: LintInput,
        _ findings: inout [LintFinding]
    ) {
        switch value {
        case .string(let text):
            for name in RawContainer.references(in: text) where !names.contains(name) && Self.isReferenceName(name) {
                let message = "'{{\(name)}}' names no variable or enabled built-in variable"
                findings.append(input.finding(Self.description, message, at: pointer))
            }
        case .array(let items):
            for (i, item) in items.enumerated() {
                walkReferences(item, at: JSONPointer.appending(pointer, i), names: names, input, &findings)
            }
        case .object(let map):
            for (key, item) in map where !Self.proseKeys.contains(key) {
                walkReferences(item, at: JSONPointer.appending(pointer, key), names: names, input, &findings)
            }
        default:
            return
        }
    }

    /// Whether `{{…}}` text is plausibly a variable name (not a brace pair inside JavaScript code).
    private static func isReferenceName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= 256 && !name.contains(where: { $0 == "{" || $0 == "}" || $0.isNewline })
    }
}
