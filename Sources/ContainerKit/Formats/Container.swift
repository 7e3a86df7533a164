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
    /// Everything a container holds, behind one reference: copying a `Container` costs one retain.
    final class Storage: Sendable {
        let id: String
        let version: String
        let format: ContainerFormat
        let file: String?
        let unsupported: [ContainerError]
        let program: Program
        /// The rules each event name can pass, filled as names are seen.
        let candidates = CandidateRules()

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
    }

    let storage: Storage

    init(
        id: String,
        version: String,
        format: ContainerFormat,
        file: String?,
        unsupported: [ContainerError],
        program: Program
    ) {
        storage = Storage(
            id: id,
            version: version,
            format: format,
            file: file,
            unsupported: unsupported,
            program: program
        )
    }

    /// The container ID, `GTM-XXXX`.
    public var id: String { storage.id }
    /// The container version (`resource.version`, or the export's `containerVersionId`).
    public var version: String { storage.version }
    /// The format the container was compiled from.
    public var format: ContainerFormat { storage.format }
    /// The file the container was loaded from, if any.
    public var file: String? { storage.file }
    /// Parts of the container that ContainerKit does not run (web-only tags, macros and operators),
    /// reported once at load time. They are not errors: the rest of the container works.
    public var unsupported: [ContainerError] { storage.unsupported }
    var program: Program { storage.program }

    /// The number of tags, macros, predicates and rules.
    public var counts: (tags: Int, macros: Int, predicates: Int, rules: Int) {
        let program = storage.program
        return (program.tags.count, program.macros.count, program.predicates.count, program.rules.count)
    }

    /// The names of the macros (variables) that typed getters can read, in container order.
    public var variableNames: [String] {
        var names: [String] = []
        var seen = Set<String>()
        for macro in storage.program.macros {
            if let name = macro.name, seen.insert(name).inserted { names.append(name) }
        }
        for key in storage.program.flatValues.keys where seen.insert(key).inserted { names.append(key) }
        return names
    }
}
