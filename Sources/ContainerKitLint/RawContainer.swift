package import ContainerKit

/// The raw document tree seen as one of the container formats, for rules that must work even when the
/// document does not compile (dangling references, duplicates, empty containers).
///
/// It recognises the format the way the compiler does and hands out the format's lists with their JSON
/// pointers; it never copies or re-parses the tree.
package struct RawContainer: Sendable {
    package enum Kind: Sendable {
        /// `{resource: {macros, tags, predicates, rules}}` (v5 mobile, gtm.js).
        case resource
        /// `{exportFormatVersion, containerVersion: {tag, trigger, variable, builtInVariable}}`.
        case export
        /// A flat map of keys to plain values (legacy default container).
        case flat
        /// None of the above.
        case unknown
    }

    /// One entry of a list, with its pointer.
    package struct Entry {
        package var value: Value
        package var pointer: String
        package var map: ValueMap? { value.objectValue }
    }

    package let kind: Kind
    let root: ValueMap
    /// `resource` for compiled resources, `containerVersion` for exports, the root for flat containers.
    let body: ValueMap
    /// The pointer of ``body``.
    let bodyPointer: String

    init(_ value: Value) {
        guard case .object(let root) = value else {
            (kind, self.root, body, bodyPointer) = (.unknown, ValueMap(), ValueMap(), "")
            return
        }
        self.root = root
        if let resource = root["resource"] {
            (kind, body, bodyPointer) = (.resource, resource.objectValue ?? ValueMap(), "/resource")
        } else if let version = root["containerVersion"] {
            (kind, body, bodyPointer) = (.export, version.objectValue ?? ValueMap(), "/containerVersion")
        } else if root["exportFormatVersion"] == nil, RawContainer.isFlat(root) {
            (kind, body, bodyPointer) = (.flat, root, "")
        } else {
            (kind, body, bodyPointer) = (.unknown, ValueMap(), "")
        }
    }

    /// The entries of the list `key` of the body (`macros`, `tags`, `tag`, `trigger`, …); empty when absent
    /// or not a list.
    package func list(_ key: String) -> [Entry] {
        guard case .array(let items)? = body[key] else { return [] }
        let base = bodyPointer + "/" + JSONPointer.escape(key)
        var entries: [Entry] = []
        entries.reserveCapacity(items.count)
        for (i, item) in items.enumerated() {
            entries.append(Entry(value: item, pointer: JSONPointer.appending(base, i)))
        }
        return entries
    }

    /// The number of entries of the list `key` (0 when absent or not a list).
    func count(_ key: String) -> Int { body[key]?.arrayValue?.count ?? 0 }

    /// The export's container `publicId`, if any.
    var publicID: String? {
        guard kind == .export, case .object(let container)? = body["container"] else { return nil }
        return container["publicId"]?.stringValue
    }

    /// The display names of the built-in variables a format 1.3 export enables in
    /// `container.enabledBuiltInVariable` (`"event"` is `{{Event}}`), as the compiler names them.
    var enabledBuiltInVariableNames: [String] {
        guard kind == .export, case .object(let container)? = body["container"],
            case .array(let enabled)? = container["enabledBuiltInVariable"]
        else { return [] }
        return enabled.compactMap(\.stringValue).map { ExportCompiler.builtInDisplayName(ofType: $0) }
    }

    /// Whether every value of the map is a plain value or a list of plain values.
    static func isFlat(_ root: ValueMap) -> Bool {
        for (_, value) in root {
            switch value {
            case .object: return false
            case .array(let list) where list.contains(where: { $0.objectValue != nil || $0.arrayValue != nil }):
                return false
            default: continue
            }
        }
        return true
    }

    /// The `{{Name}}` references in a template string, as the export compiler splits them.
    static func references(in text: String) -> [String] {
        guard text.contains("{{") else { return [] }
        return ExportCompiler.templateParts(text).compactMap { $0.isReference ? $0.text : nil }
    }

    /// Built-in trigger ids that exports use without a trigger object (All Pages, Initialization, …).
    ///
    /// GTM reserves the ids from 2147479553 up for built-in triggers; only some are documented, so every
    /// id in that range counts as built in.
    static func isBuiltInTriggerID(_ id: String) -> Bool {
        if ExportCompiler.builtInTriggers[id] != nil { return true }
        guard let number = Int(id) else { return false }
        return (2_147_479_553...2_147_479_999).contains(number)
    }
}
