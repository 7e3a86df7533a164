import ContainerKit

/// A container's tags, triggers (rules), variables (macros) and, for a legacy default container, values
/// described field by field in words, from the compiled program: the common ground on which two versions — in the same format or not — are compared.
/// Which rules fire or block a tag is a field of the tag (`firing_triggers`), as in the editor, so a change
/// to that link is reported once.
///
/// Every reference is spelled by name (`{{Genre}}`, `tag 'Braze - login'`, `trigger 'Purchase'`), never by
/// index, so inserting an element does not make every later one look changed. Ids (tag ids, export
/// `variableId` / `triggerId`) come from the compiled program and, for exports, from the document.
struct ContainerOutline: Sendable {
    struct Element: Sendable {
        var kind: DiffElement.Kind
        /// The index in the compiled program's list.
        var index: Int
        var id: String?
        var name: String?
        /// What position matching groups by: a tag's class path (or template), a variable's template.
        var matchKey: String
        /// The element's fields, in a stable order, each rendered as text.
        var fields: [(key: String, value: String)]
        /// Where the element is in its document.
        var pointer: String
        /// Prefixes of fields the element's format cannot carry (a compiled `__paused` tag keeps no class path
        /// or arguments; a compiled rule has no name): when the element lacks one of them, that is not
        /// reported as a field removed or added.
        var unknownFields: [String] = []

        func isUnknown(_ field: String) -> Bool { unknownFields.contains { field.hasPrefix($0) } }
        /// For tags: the rules that add it and those that block it (indices into the rules). Their labels
        /// are fields of the tag, spelled at comparison time so a rule paired across versions reads the
        /// same on both sides (see ``ContainerOutline/tagFields(_:ruleLabel:)``).
        var firingRules: [Int] = []
        var blockingRules: [Int] = []

        /// A trigger's `if` and `unless` fields, for pairing rules by what they test.
        var conditions: String {
            fields.filter { $0.key == "if" || $0.key == "unless" }.map { $0.key + " " + $0.value }.joined(
                separator: "\n"
            )
        }

        var reference: DiffElement {
            DiffElement(kind: kind, id: id, name: name, index: index, pointer: pointer)
        }
    }

    var tags: [Element] = []
    var triggers: [Element] = []
    var variables: [Element] = []
    /// A legacy default container's values, one per key (its one field, `value`, the value as JSON).
    var values: [Element] = []
    /// The class paths and legacy function names the container's function-call tags call (when constant).
    var tagClassPaths: [String] = []

    init(_ container: Container, document: Value?) {
        let program = container.program
        let renderer = Renderer(program: program)
        // Event-name variables are left out: they all read the same thing, conditions spell them `{{Event}}`,
        // and compiled containers add them where exports use a built-in toggle.
        for (i, macro) in program.macros.enumerated() where !macro.origin.pointer.isEmpty {
            if case .eventName = macro.kind { continue }
            variables.append(renderer.variable(macro, index: i, document: document))
        }
        var seenPaths = Set<String>()
        for (i, tag) in program.tags.enumerated() {
            let element = renderer.tag(tag, index: i)
            tags.append(element)
            if let path = renderer.classPath(of: tag), seenPaths.insert(path).inserted { tagClassPaths.append(path) }
        }
        for (i, rule) in program.rules.enumerated() {
            triggers.append(renderer.trigger(rule, index: i, document: document))
        }
        // The flat map is the whole document: each value is where its key is at the top level.
        for (i, (key, value)) in program.flatValues.enumerated() {
            values.append(
                Element(
                    kind: .value,
                    index: i,
                    name: key,
                    matchKey: "value " + key,
                    fields: [("value", renderer.render(.literal(value)))],
                    pointer: JSONPointer.appending("", key)
                )
            )
        }
    }

    /// A tag's fields with `firing_triggers` and `blocking_triggers` added, each rule spelled by `ruleLabel`.
    static func tagFields(_ tag: Element, ruleLabel: (Int) -> String) -> [(key: String, value: String)] {
        var fields = tag.fields
        let firing = tag.firingRules.map(ruleLabel)
        fields.append(("firing_triggers", firing.isEmpty ? "none" : firing.joined(separator: ", ")))
        if !tag.blockingRules.isEmpty {
            fields.append(("blocking_triggers", tag.blockingRules.map(ruleLabel).joined(separator: ", ")))
        }
        return fields
    }

    /// A rule as tags name it: `'Name'`, or `rule #i`.
    func ruleLabel(_ index: Int) -> String {
        guard index >= 0, index < triggers.count else { return "rule #\(index)" }
        return triggers[index].name.map { "'\($0)'" } ?? "rule #\(index)"
    }

    /// The element list of one kind.
    func elements(_ kind: DiffElement.Kind) -> [Element] {
        switch kind {
        case .tag: return tags
        case .trigger: return triggers
        case .variable: return variables
        case .value: return values
        }
    }

    // MARK: Rendering

    struct Renderer {
        let program: Program

        func macroLabel(_ index: Int) -> String {
            guard index >= 0, index < program.macros.count else { return "{{#\(index)}}" }
            let macro = program.macros[index]
            // Every event-name variable reads the same thing, whatever it is called (an export's built-in
            // `Event`, a resource's `Event Name`): one spelling keeps conditions comparable across formats.
            if case .eventName = macro.kind { return "{{Event}}" }
            return "{{" + (macro.name ?? "#\(index) \(macro.function)") + "}}"
        }

        func tagLabel(_ index: Int) -> String {
            guard index >= 0, index < program.tags.count else { return "tag #\(index)" }
            let tag = program.tags[index]
            if let name = tag.name { return "'\(name)'" }
            if let id = tag.tagID { return "tag \(id)" }
            return "tag #\(index)"
        }

        func ruleLabel(_ index: Int) -> String {
            guard index >= 0, index < program.rules.count else { return "rule #\(index)" }
            return program.rules[index].name.map { "'\($0)'" } ?? "rule #\(index)"
        }

        /// An expression in words: literals as JSON, macros as `{{Name}}`, templates as one quoted string.
        func render(_ expr: Expr) -> String {
            switch expr {
            case .literal(let value):
                return value.isUndefined ? "undefined" : JSONWriter.string(value, sortedKeys: false)
            case .macro(let index):
                return macroLabel(index)
            case .template(let parts):
                var text = ""
                for part in parts {
                    if case .literal(let value) = part { text += value.jsString } else { text += render(part) }
                }
                return JSONWriter.string(.string(text))
            case .list(let items):
                return "[" + items.map(render).joined(separator: ", ") + "]"
            case .map(let entries):
                return "{" + entries.map { render($0.key) + ": " + render($0.value) }.joined(separator: ", ") + "}"
            case .escape(let inner, let codes):
                return "escape(" + render(inner) + ", " + codes.map(String.init).joined(separator: ",") + ")"
            case .tag(let index, let stop):
                return "tag(" + tagLabel(index) + (stop != 0 ? ", stop on failure" : "") + ")"
            case .unresolved(let name):
                return "{{\(name)}} (undefined)"
            }
        }

        /// The class path a tag calls, when it is fixed (a literal, or a Constant variable).
        func classPath(of tag: TagDef) -> String? {
            switch tag.kind {
            case .functionCall(let classPath, _): return constantString(classPath, depth: 0)
            case .legacyFunctionCall(let name, _): return name.isEmpty ? nil : name
            case .paused, .unsupported: return nil
            }
        }

        private func constantString(_ expr: Expr, depth: Int) -> String? {
            switch expr {
            case .literal(.string(let text)): return text
            case .macro(let index) where depth < 8 && index >= 0 && index < program.macros.count:
                if case .constant(let inner) = program.macros[index].kind {
                    return constantString(inner, depth: depth + 1)
                }
                return nil
            default: return nil
            }
        }

        /// The entries of an argument-map expression, when its keys are constant.
        private func argumentEntries(_ expr: Expr) -> [(key: String, value: String)]? {
            switch expr {
            case .map(let entries):
                var out: [(key: String, value: String)] = []
                for entry in entries {
                    guard case .literal(let key) = entry.key else { return nil }
                    out.append((key.jsString, render(entry.value)))
                }
                return out
            case .literal(.object(let map)):
                return map.map { ($0.key, JSONWriter.string($0.value)) }
            default:
                return nil
            }
        }

        func tag(_ tag: TagDef, index: Int) -> Element {
            var fields: [(key: String, value: String)] = []
            var type = tag.function
            var paused = false
            if TemplateCatalog.bareCode(tag.function) == "paused" {
                paused = true
                if let original = tag.parameters.first(where: { $0.key == "originalTagType" }),
                    case .literal(.string(let text)) = original.value
                {
                    type = text
                }
            } else if case .paused = tag.kind {
                paused = true
            }
            fields.append(("name", tag.name.map { JSONWriter.string(.string($0)) } ?? "none"))
            fields.append(("type", type))
            fields.append(("paused", paused ? "true" : "false"))
            fields.append(
                (
                    "priority",
                    JSONWriter.string(
                        tag.priority == tag.priority.rounded() && abs(tag.priority) < 1e15
                            ? .int(Int64(tag.priority)) : .double(tag.priority)
                    )
                )
            )
            fields.append(
                ("firing_option", tag.oncePerLoad ? "once per load" : tag.oncePerEvent ? "once per event" : "unlimited")
            )
            var handled: Set<String> = ["originalTagType"]
            switch tag.kind {
            case .functionCall(let classPath, let arguments):
                fields.append(("class_path", render(classPath)))
                handled.formUnion(["classPath", "functionArgument"])
                if let entries = argumentEntries(arguments) {
                    for entry in entries { fields.append(("arguments." + entry.key, entry.value)) }
                } else {
                    fields.append(("arguments", render(arguments)))
                }
            case .legacyFunctionCall(let name, let arguments):
                fields.append(("function_name", JSONWriter.string(.string(name))))
                handled.formUnion(["function_call_macro_name", "additional_params"])
                if let entries = argumentEntries(arguments) {
                    for entry in entries { fields.append(("arguments." + entry.key, entry.value)) }
                } else {
                    fields.append(("arguments", render(arguments)))
                }
            case .paused, .unsupported:
                break
            }
            for parameter in tag.parameters where !handled.contains(parameter.key) {
                fields.append(("parameters." + parameter.key, render(parameter.value)))
            }
            var firing: [Int] = []
            var blocking: [Int] = []
            for (r, rule) in program.rules.enumerated() {
                if rule.add.contains(index) { firing.append(r) }
                if rule.block.contains(index) { blocking.append(r) }
            }
            if !tag.setupTags.isEmpty { fields.append(("setup_tags", sequence(tag.setupTags))) }
            if !tag.teardownTags.isEmpty { fields.append(("teardown_tags", sequence(tag.teardownTags))) }
            return Element(
                kind: .tag,
                index: index,
                id: tag.tagID.map(String.init),
                name: tag.name,
                matchKey: classPath(of: tag) ?? type,
                fields: fields,
                pointer: tag.origin.pointer,
                unknownFields: TemplateCatalog.bareCode(tag.function) == "paused"
                    ? ["class_path", "function_name", "arguments", "parameters."] : [],
                firingRules: firing,
                blockingRules: blocking
            )
        }

        private func sequence(_ list: [TagDef.Sequenced]) -> String {
            list.map { tagLabel($0.tag) + ($0.stopOnFailure ? " (stop on failure)" : "") }.joined(separator: ", ")
        }

        func variable(_ macro: MacroDef, index: Int, document: Value?) -> Element {
            var fields: [(key: String, value: String)] = []
            fields.append(("name", macro.name.map { JSONWriter.string(.string($0)) } ?? "none"))
            fields.append(("type", macro.function))
            for parameter in macro.parameters {
                fields.append(("parameters." + parameter.key, render(parameter.value)))
            }
            let format = macro.format
            if let conversion = format.caseConversion {
                fields.append(("format.case", conversion == .lowercase ? "lowercase" : "uppercase"))
            }
            if let expr = format.convertNullTo { fields.append(("format.null_to", render(expr))) }
            if let expr = format.convertUndefinedTo { fields.append(("format.undefined_to", render(expr))) }
            if let expr = format.convertTrueTo { fields.append(("format.true_to", render(expr))) }
            if let expr = format.convertFalseTo { fields.append(("format.false_to", render(expr))) }
            let raw = document.flatMap { ContainerOutline.value(at: macro.origin.pointer, in: $0) }
            return Element(
                kind: .variable,
                index: index,
                id: raw?.objectValue?["variableId"]?.jsString,
                name: macro.name,
                matchKey: macro.function,
                fields: fields,
                pointer: macro.origin.pointer
            )
        }

        func predicate(_ index: Int) -> String {
            guard index >= 0, index < program.predicates.count else { return "predicate #\(index)" }
            let p = program.predicates[index]
            if p.op == .unsupported {
                return p.function == "_never" ? "never (unsupported here)" : "\(p.function) (unsupported operator)"
            }
            var text = render(p.arg0) + " " + p.op.phrase + " " + render(p.arg1)
            if p.ignoreCase { text += " (ignore case)" }
            if p.negate { text = "not (" + text + ")" }
            return text
        }

        func trigger(_ rule: RuleDef, index: Int, document: Value?) -> Element {
            var fields: [(key: String, value: String)] = []
            if let name = rule.name { fields.append(("name", JSONWriter.string(.string(name)))) }
            fields.append(("if", rule.ifs.isEmpty ? "always" : rule.ifs.map(predicate).joined(separator: " and ")))
            if !rule.unless.isEmpty { fields.append(("unless", rule.unless.map(predicate).joined(separator: " or "))) }
            var id: String?
            if let raw = document.flatMap({ ContainerOutline.value(at: rule.origin.pointer, in: $0) }) {
                switch raw {
                case .object(let map): id = map["triggerId"]?.jsString
                case .string, .int, .double: id = raw.jsString  // a built-in trigger id in a tag's list
                default: break
                }
            }
            return Element(
                kind: .trigger,
                index: index,
                id: id,
                name: rule.name,
                matchKey: "rule",
                fields: fields,
                pointer: rule.origin.pointer,
                unknownFields: rule.name == nil ? ["name"] : []
            )
        }
    }

    /// The value at a JSON pointer in `root`, or `nil`.
    static func value(at pointer: String, in root: Value) -> Value? {
        guard pointer.hasPrefix("/") else { return pointer.isEmpty ? root : nil }
        var current = root
        for raw in pointer.dropFirst().split(separator: "/", omittingEmptySubsequences: false) {
            let token = String(raw).replacingAll("~1", with: "/").replacingAll("~0", with: "~")
            switch current {
            case .object(let map):
                guard let next = map[token] else { return nil }
                current = next
            case .array(let list):
                guard let i = Int(token), i >= 0, i < list.count else { return nil }
                current = list[i]
            default:
                return nil
            }
        }
        return current
    }
}
