/// Which of the container file formats a container was compiled from.
public enum ContainerFormat: String, Sendable, Hashable {
    /// The compiled resource that mobile apps ship (`{fingerprint, resource, runtime}`) or gtm.js embeds.
    case compiledResource = "compiled_resource"
    /// A GTM UI export (`exportFormatVersion: 2`).
    case export
    /// A legacy v3/v4 default container: a flat map of keys to values.
    case flatValues = "flat_values"
}

/// A compiled, immutable Google Tag Manager container.
///
/// A `Container` is a value that every thread can share: many ``DataLayer`` sessions evaluate one
/// container in parallel. Load one with ``ContainerLoader``; make it live by adding it to a ``TagManager``.
public struct Container: Sendable {
    /// The container ID, `GTM-XXXX`.
    public let id: String
    /// The container version (`resource.version`, or the export's `containerVersionId`).
    public let version: String
    /// The format the container was compiled from.
    public let format: ContainerFormat
    /// The file the container was loaded from, if any.
    public let file: String?
    /// Parts of the container that ContainerKit does not run (web-only tags, macros and operators),
    /// reported once at load time. They are not errors: the rest of the container works.
    public let unsupported: [ContainerError]
    let program: Program

    init(
        id: String,
        version: String,
        format: ContainerFormat,
        file: String?,
        unsupported: [ContainerError],
        program: Program
    ) {
        self.id = id
        self.version = version
        self.format = format
        self.file = file
        self.unsupported = unsupported
        self.program = program
    }

    /// The number of tags, macros, predicates and rules.
    public var counts: (tags: Int, macros: Int, predicates: Int, rules: Int) {
        (program.tags.count, program.macros.count, program.predicates.count, program.rules.count)
    }

    /// The names of the macros (variables) that typed getters can read, in container order.
    public var variableNames: [String] {
        var names: [String] = []
        var seen = Set<String>()
        for macro in program.macros {
            if let name = macro.name, seen.insert(name).inserted { names.append(name) }
        }
        for key in program.flatValues.keys where seen.insert(key).inserted { names.append(key) }
        return names
    }
}
