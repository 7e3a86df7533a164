public import ContainerKit

/// One tag, trigger (rule), variable (macro) or default value of a container version, as a diff names it.
public struct DiffElement: Sendable, Hashable {
    /// What kind of element it is.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// A tag.
        case tag
        /// A trigger (export) or rule (compiled resource).
        case trigger
        /// A variable (export) or macro (compiled resource).
        case variable
        /// A value of a legacy default container (a flat map of keys to values), named by its key.
        case value
    }

    /// What kind of element it is.
    public var kind: Kind
    /// The tag id (`tag_id`, `tagId`), or the export's `variableId` / `triggerId`, when it has one.
    public var id: String?
    /// The display name (`instance_name`, `name`), when it has one.
    public var name: String?
    /// The index in the compiled container's list of tags, rules or macros.
    public var index: Int
    /// The JSON pointer of the element in its file.
    public var pointer: String
    /// Line and column of the element in its file (JSON and XML property lists).
    public var location: SourceLocation?

    /// Creates an element reference.
    public init(
        kind: Kind,
        id: String?,
        name: String?,
        index: Int,
        pointer: String,
        location: SourceLocation? = nil
    ) {
        self.kind = kind
        self.id = id
        self.name = name
        self.index = index
        self.pointer = pointer
        self.location = location
    }

    /// How people read it: `tag 3 'Braze - login'`, `variable 'Currency'`, `trigger #2`, `value 'welcome_message'`.
    public var label: String {
        var text = kind.rawValue
        if let id { text += " " + id }
        if let name { text += " '" + name + "'" }
        if id == nil && name == nil { text += " #\(index)" }
        return text
    }
}

/// How an element of the old version was paired with one of the new version.
public enum DiffMatch: String, Sendable, Hashable {
    /// Same tag id (or export `variableId` / `triggerId`).
    case id
    /// Same display name.
    case name
    /// Triggers only: the same conditions (`if` and `unless`), for rules without ids or names.
    case conditions
    /// Same class path (tags) or template (variables, rules), and the same position among those.
    case position = "class_path_position"
}

/// One field of an element whose value differs between the versions.
public struct FieldChange: Sendable, Hashable {
    /// The field: `name`, `paused`, `priority`, `firing_triggers`, `arguments.<key>`, `parameters.<key>`, `if`, ….
    public var field: String
    /// The old value in words, `nil` when the old version has no such field.
    public var old: String?
    /// The new value in words, `nil` when the new version has no such field.
    public var new: String?

    /// Creates a field change.
    public init(field: String, old: String?, new: String?) {
        self.field = field
        self.old = old
        self.new = new
    }
}

/// A tag, trigger, variable or default value that one version has and the other has not, or that both have
/// with different fields. Found without running anything.
public struct StructuralChange: Sendable, Hashable {
    /// What happened to the element.
    public enum Kind: String, Sendable, Hashable {
        /// Only the new version has it.
        case added
        /// Only the old version has it.
        case removed
        /// Both have it, with different fields.
        case changed
    }

    /// What happened to the element.
    public var kind: Kind
    /// The element in the old version (`nil` when added).
    public var old: DiffElement?
    /// The element in the new version (`nil` when removed).
    public var new: DiffElement?
    /// How the two were paired (`nil` when added or removed).
    public var match: DiffMatch?
    /// The fields that differ (for `changed`), in the element's field order.
    public var fields: [FieldChange]

    /// The element this change is about (the new one when there is one).
    public var element: DiffElement {
        new ?? old ?? DiffElement(kind: .tag, id: nil, name: nil, index: -1, pointer: "")
    }
}
