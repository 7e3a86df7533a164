/// A session's consent state, kept as GTM's web runtime keeps it (`google_tag_data.ics` in a served
/// `gtm.js`): for each consent type the default a `consent default` command set (with the region that default
/// was given for) and the value a `consent update` command set.
///
/// A consent type is granted when its update says so, or, without an update, when its default says so; a type
/// no command named is **granted** (GTM's `getConsentState` answers "unknown", which its consent check counts as
/// granted). ContainerKit applies no implicit defaults (see `Docs/Evaluation.md`, "Consent").
///
/// Each session (``DataLayer``) has one; consent commands (``ConsentCommand``, pushed with
/// ``DataLayer/push(_:)-(ConsentCommand)``) change it, and it travels with the session's snapshots and deltas.
public struct ConsentState: Sendable, Hashable {
    /// What the commands set for one consent type.
    public struct Entry: Sendable, Hashable {
        /// The consent type (`ad_storage`, `analytics_storage`, or any name a container uses).
        public var type: String
        /// The region of the default in force (upper case, ISO 3166-1 or 3166-2), `nil` for a default given
        /// without a region.
        public var region: String?
        /// Whether the default grants the type; `nil` when no default applies to the session.
        public var defaultGranted: Bool?
        /// Whether the last update grants the type; `nil` when none named it.
        public var updateGranted: Bool?

        /// Creates an entry.
        public init(type: String, region: String? = nil, defaultGranted: Bool? = nil, updateGranted: Bool? = nil) {
            self.type = type
            self.region = region
            self.defaultGranted = defaultGranted
            self.updateGranted = updateGranted
        }

        /// The type's state: the update's, else the default's; `nil` when neither is set.
        public var granted: Bool? { updateGranted ?? defaultGranted }
    }

    /// The consent types commands named, in the order first named.
    public private(set) var entries: [Entry]

    /// Creates a state (empty: every type granted).
    public init(entries: [Entry] = []) {
        self.entries = entries
    }

    /// Whether no command set anything.
    public var isEmpty: Bool { entries.isEmpty }

    /// The entry of `type`, if a command named it.
    public func entry(_ type: String) -> Entry? {
        entries.first { $0.type.utf8.elementsEqual(type.utf8) }
    }

    /// Whether `type` counts as granted for a tag's consent check: its update, else its default, else granted
    /// (GTM: `mn` / `ij` count an unknown state as granted).
    public func isGranted(_ type: String) -> Bool {
        entry(type)?.granted ?? true
    }

    /// The types among `types` that are not granted, in their order (what blocks a tag that requires them).
    public func denied(among types: [String]) -> [String] {
        types.filter { !isGranted($0) }
    }

    /// Applies a command as gtm.js does. `country` and `region` are the visitor's location (ISO 3166-1 alpha-2
    /// and ISO 3166-2, upper case; empty when unknown), which decide which regional defaults apply.
    ///
    /// A default is applied once per region it lists (once, without a region, when it lists none; an empty list
    /// applies nowhere), for each consent type it sets (a `null` value sets nothing). Whether a default replaces
    /// the one in force (gtm.js 2025, `fn`; 2022, `Ni`):
    /// - location unknown: every default applies, but none replaces a denied one;
    /// - a default for the visitor's region (`ES-MD`) always applies;
    /// - one for the visitor's country (`ES`) applies unless the one in force is for the region;
    /// - one without a region applies unless the one in force has a region;
    /// - one for another place never applies.
    ///
    /// An update sets the type everywhere, whatever the location (`null` and any value but `granted` deny).
    public mutating func apply(_ command: ConsentCommand, country: String, region: String) {
        switch command.kind {
        case .update:
            for setting in command.settings {
                let granted = setting.value == "granted"
                if let i = index(of: setting.type) {
                    entries[i].updateGranted = granted
                } else {
                    entries.append(Entry(type: setting.type, updateGranted: granted))
                }
            }
        case .default:
            let regions: [String?] = command.regions.map { $0.map { $0.isEmpty ? nil : $0 } } ?? [nil]
            for commandRegion in regions {
                for setting in command.settings {
                    guard let value = setting.value else { continue }
                    applyDefault(
                        setting.type,
                        granted: value == "granted",
                        commandRegion: commandRegion,
                        country: country,
                        region: region
                    )
                }
            }
        }
    }

    /// gtm.js's `fn(a, b, c, d, e, f)`: `if (e === "" || q === f || (q === e ? p !== f : !q && !p))`, then
    /// `if (e !== "" || n.default !== false) m[b] = t` (the update kept).
    private mutating func applyDefault(
        _ type: String,
        granted: Bool,
        commandRegion: String?,
        country: String,
        region: String
    ) {
        let i = index(of: type)
        let current = i.map { entries[$0] }
        let currentRegion = current?.region
        let applies: Bool
        if country.isEmpty {
            applies = true
        } else if let commandRegion, !region.isEmpty, commandRegion == region {
            applies = true
        } else if let commandRegion, commandRegion == country {
            applies = region.isEmpty || currentRegion != region
        } else {
            applies = commandRegion == nil && currentRegion == nil
        }
        guard applies else { return }
        guard !country.isEmpty || current?.defaultGranted != false else { return }
        let entry = Entry(
            type: type,
            region: commandRegion,
            defaultGranted: granted,
            updateGranted: current?.updateGranted
        )
        if let i { entries[i] = entry } else { entries.append(entry) }
    }

    private func index(of type: String) -> Int? {
        entries.firstIndex { $0.type.utf8.elementsEqual(type.utf8) }
    }

    // MARK: JSON

    /// The state as JSON: `{"<type>": {"default"?: "granted"|"denied", "region"?: "ES", "update"?: …}, …}`, types
    /// in the order first named.
    public var jsonValue: Value {
        var map = ValueMap(minimumCapacity: entries.count)
        for entry in entries {
            var inner = ValueMap(minimumCapacity: 3)
            if let granted = entry.defaultGranted { inner["default"] = .string(granted ? "granted" : "denied") }
            if let region = entry.region { inner["region"] = .string(region) }
            if let granted = entry.updateGranted { inner["update"] = .string(granted ? "granted" : "denied") }
            map.appendNew(entry.type, .object(inner))
        }
        return .object(map)
    }

    /// Appends the compact JSON text of ``jsonValue``.
    package func writeJSON(to writer: inout JSONByteWriter) {
        guard case .object(let map) = jsonValue else { return }
        writer.object(map)
    }

    /// Reads a state from the JSON object ``jsonValue`` writes.
    /// - Throws: ``ContainerError`` (`invalid_structure`) naming the member that is wrong.
    public init(jsonValue: Value, member: String = "consent") throws(ContainerError) {
        guard case .object(let map) = jsonValue else {
            throw ContainerError(.invalidStructure, "'\(member)' must be an object", pointer: "/\(member)")
        }
        var entries: [Entry] = []
        entries.reserveCapacity(map.count)
        for (type, value) in map {
            let at = "/\(member)/\(JSONPointer.escape(type))"
            guard case .object(let inner) = value else {
                throw ContainerError(.invalidStructure, "consent type '\(type)' must be an object", pointer: at)
            }
            func status(_ key: String) throws(ContainerError) -> Bool? {
                switch inner[key] {
                case nil: return nil
                case .string("granted")?: return true
                case .string("denied")?: return false
                default:
                    throw ContainerError(
                        .invalidStructure,
                        "consent type '\(type)' '\(key)' must be \"granted\" or \"denied\"",
                        pointer: at + "/" + key
                    )
                }
            }
            var region: String?
            switch inner["region"] {
            case nil: break
            case .string(let text)?: region = text
            default:
                throw ContainerError(
                    .invalidStructure,
                    "consent type '\(type)' 'region' must be a string",
                    pointer: at + "/region"
                )
            }
            entries.append(
                Entry(
                    type: type,
                    region: region,
                    defaultGranted: try status("default"),
                    updateGranted: try status("update")
                )
            )
        }
        self.init(entries: entries)
    }
}
