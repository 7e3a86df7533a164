import Synchronization

/// Which of the container file formats a container was compiled from.
public enum ContainerFormat: String, Sendable, Hashable {
    /// The compiled resource that mobile apps ship (`{fingerprint, resource, runtime}`) or gtm.js embeds.
    case compiledResource = "compiled_resource"
    /// A GTM UI export (`exportFormatVersion: 2`).
    case export
    /// A legacy v3/v4 default container: a flat map of keys to values.
    case flatValues = "flat_values"
}

/// The platform a container was built for. It decides how string conditions treat an undefined value.
///
/// GTM's web runtime evaluates `equals`, `contains`, `starts with`, `ends with` and `matches regex` on
/// `String(value)`, so an undefined variable compares as the text `undefined` (the web idiom
/// `{{cookie}} equals undefined` holds when the cookie is missing). The mobile SDKs make a condition with an
/// undefined operand false.
public enum ContainerPlatform: String, Sendable, Hashable, CaseIterable {
    /// Android or iOS: v5 mobile files, mobile exports (`ANDROID_SDK_5`, `IOS_SDK_5`, …), legacy default
    /// containers. An undefined operand makes a string condition false.
    case mobile
    /// Web or AMP: web and AMP exports and the compiled data of a `gtm.js` file. String conditions compare
    /// `String(value)`, so undefined is the text `undefined`.
    case web

    /// Whether string conditions compare an undefined operand as the text `undefined` (web) rather than
    /// failing (mobile).
    public var comparesUndefinedAsText: Bool { self == .web }
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
        let platform: ContainerPlatform
        let file: String?
        let unsupported: [ContainerError]
        let program: Program
        /// The rules each event name can pass, filled as names are seen.
        let candidates = CandidateRules()
        /// Each tag's precomputed call (see ``CallPlan``), by tag index.
        let callPlans: [CallPlan?]
        /// ``callPlans`` without their reference counts: an evaluation, which holds this storage, borrows a plan
        /// from here instead of retaining it (every session's evaluation would write that plan's reference
        /// count, on a cache line all cores share).
        let borrowedCallPlans: [Unmanaged<CallPlan>?]
        /// What of a session the container's evaluation reads: a push takes each part out of the session's lock
        /// (the merged model, the raw values, the context, …) only when a live container reads it.
        let sessionReads: SessionReads
        /// Per tag, what its triggers' conditions read that ContainerKit may not evaluate (``FiredTag/unknownInputs``).
        let unknownInputs: [[UnknownInput]]
        /// Per predicate, what it reads that ContainerKit may not evaluate (for traces).
        let unknownPredicateInputs: [[UnknownInput]]
        /// Whether one of ``unknownInputs`` is known when the session knows the page's URL or referrer: only then
        /// does an evaluation look at what the session knows (``FiredCall/known``).
        let unknownInputsReadPage: Bool
        /// Whether a macro reads the session's merged model (a data-layer variable of version 2).
        var readsModel: Bool { sessionReads.contains(.model) }
        /// A number no other storage of this process has (see ``SessionRuntime``).
        let serial = Storage.serials.add(1, ordering: .relaxed).newValue
        private static let serials = Atomic<UInt64>(0)

        init(
            id: String,
            version: String,
            format: ContainerFormat,
            platform: ContainerPlatform,
            file: String?,
            unsupported: [ContainerError],
            program: Program
        ) {
            self.platform = platform
            self.id = id
            self.version = version
            self.format = format
            self.file = file
            self.unsupported = unsupported
            self.program = program
            self.callPlans = CallPlan.plans(for: program, containerID: id)
            self.borrowedCallPlans = callPlans.map { $0.map(Unmanaged.passUnretained) }
            var reads = SessionReads(program)
            if platform == .web { reads.insert(.dropsEventModel) }
            self.sessionReads = reads
            (unknownPredicateInputs, unknownInputs) = program.unknownInputs()
            unknownInputsReadPage = unknownInputs.contains { inputs in
                inputs.contains { !$0.needs.subtracting(.evaluation).isEmpty }
            }
        }
    }

    let storage: Storage

    init(
        id: String,
        version: String,
        format: ContainerFormat,
        platform: ContainerPlatform = .mobile,
        file: String?,
        unsupported: [ContainerError],
        program: Program
    ) {
        storage = Storage(
            id: id,
            version: version,
            format: format,
            platform: platform,
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
    /// The platform the container was built for, from its content at load time (see ``ContainerPlatform``;
    /// ``LoadOptions/platform`` overrides it). Web containers compare an undefined operand of a string
    /// condition as the text `undefined`; mobile containers make the condition false.
    public var platform: ContainerPlatform { storage.platform }
    /// The file the container was loaded from, if any.
    public var file: String? { storage.file }
    /// Parts of the container that ContainerKit does not run (web-only tags, macros and operators),
    /// reported once at load time. They are not errors: the rest of the container works.
    public var unsupported: [ContainerError] { storage.unsupported }
    package var program: Program { storage.program }

    /// The number of tags, macros, predicates and rules.
    public var counts: (tags: Int, macros: Int, predicates: Int, rules: Int) {
        let program = storage.program
        return (program.tags.count, program.macros.count, program.predicates.count, program.rules.count)
    }

    /// One tag of a container, as people name it.
    public struct Tag: Sendable, Hashable {
        /// Its index in the compiled container (what ``PushTrace/Tag/index`` and ``RuntimeEvent``'s `tagIndex`
        /// name).
        public var index: Int
        /// Its `tag_id`, when it has one.
        public var tagID: Int?
        /// Its display name, when the container has one.
        public var name: String?
        /// Its template function, e.g. `__funct`.
        public var function: String
    }

    /// Every tag, in container order (by index).
    public var tags: [Tag] {
        storage.program.tags.enumerated().map { index, tag in
            Tag(index: index, tagID: tag.tagID, name: tag.name, function: tag.function)
        }
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
