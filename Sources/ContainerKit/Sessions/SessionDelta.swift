import Synchronization

/// What a session's pushes changed since its last commit, as a value: the top-level data-layer keys they set
/// (nested pushes included) with their values after them, the version-1 raw values, user properties and
/// attributes that changed, the once-per-load tags that fired, the event counter, the client context, the
/// event IDs the session began to remember (``SeenEventID``) with how many of the oldest it forgot, and the
/// consent state when a consent command changed it.
///
/// A ``SessionStore`` whose committer keeps sessions (``PushCommitter/keepsSessions``) commits one per push,
/// in the same append as the push's records, instead of the whole ``SessionSnapshot``; a snapshot is written
/// every ``SessionStore/Configuration/snapshotInterval`` commits. A store loads a session on a miss as its
/// last snapshot with the later deltas applied (``apply(to:)``). Applying a delta evaluates nothing: a
/// container that changed in between changes nothing, and no tag fires again.
///
/// ```swift
/// var state = try SessionSnapshot(jsonText: storedSnapshot)
/// for line in laterDeltas { try SessionDelta(jsonText: line).apply(to: &state) }
/// let session = manager.restoreDataLayer(from: state)
/// ```
public struct SessionDelta: Sendable, Hashable {
    /// The version of this delta's layout; ``init(jsonValue:)`` refuses others.
    public static let formatVersion = 1

    /// The session's identifier (in a ``SessionStore``, the user ID).
    public var sessionID: String
    /// The top-level model keys set, with their values after the pushes, in the order they were first set;
    /// the whole model when ``replacesModel``.
    public var model: ValueMap
    /// Whether ``model`` is the whole model (a push removed a top-level key, or the host cleared the model).
    public var replacesModel: Bool
    /// The version-1 raw values set (the whole map when ``replacesRawValues``).
    public var rawValues: ValueMap
    /// Whether ``rawValues`` is the whole map (the host cleared the model).
    public var replacesRawValues: Bool
    /// All user properties, when they changed.
    public var userProperties: ValueMap?
    /// All session attributes (sorted by key), when they changed.
    public var attributes: ValueMap?
    /// The once-per-load tags that fired (`container ID#tag index`).
    public var firedOncePerLoad: [String]
    /// The event counter after the pushes.
    public var eventNumber: Int
    /// The client context, when it changed.
    public var context: ClientContext?
    /// The event IDs the session began to remember, oldest first (only these, never the whole list).
    public var eventIDs: [SeenEventID]
    /// How many of the oldest event IDs the session forgot (past its window), before ``eventIDs`` are added.
    public var prunedEventIDs: Int
    /// The whole consent state, when a consent command was pushed (``ConsentState``).
    public var consent: ConsentState?

    /// Creates a delta from its parts (nothing changed but the event counter, by default).
    public init(
        sessionID: String,
        model: ValueMap = ValueMap(),
        replacesModel: Bool = false,
        rawValues: ValueMap = ValueMap(),
        replacesRawValues: Bool = false,
        userProperties: ValueMap? = nil,
        attributes: ValueMap? = nil,
        firedOncePerLoad: [String] = [],
        eventNumber: Int,
        context: ClientContext? = nil,
        eventIDs: [SeenEventID] = [],
        prunedEventIDs: Int = 0,
        consent: ConsentState? = nil
    ) {
        self.sessionID = sessionID
        self.model = model
        self.replacesModel = replacesModel
        self.rawValues = rawValues
        self.replacesRawValues = replacesRawValues
        self.userProperties = userProperties
        self.attributes = attributes
        self.firedOncePerLoad = firedOncePerLoad
        self.eventNumber = eventNumber
        self.context = context
        self.eventIDs = eventIDs
        self.prunedEventIDs = prunedEventIDs
        self.consent = consent
    }

    /// Applies the changes to `snapshot` (the session's state before them): afterwards it equals the
    /// snapshot the session would have given after the pushes. Nothing is evaluated.
    public func apply(to snapshot: inout SessionSnapshot) {
        if replacesModel {
            snapshot.model = model
        } else {
            for key in model.keys.indices { snapshot.model[model.keys[key]] = model.value(at: key) }
        }
        if replacesRawValues {
            snapshot.rawValues = rawValues
        } else if !rawValues.isEmpty {
            for key in rawValues.keys.indices { snapshot.rawValues[rawValues.keys[key]] = rawValues.value(at: key) }
            snapshot.rawValues = snapshot.rawValues.sortedByKey()
        }
        if let userProperties { snapshot.userProperties = userProperties }
        if let attributes { snapshot.attributes = attributes.sortedByKey() }
        if !firedOncePerLoad.isEmpty {
            snapshot.firedOncePerLoad = Array(Set(snapshot.firedOncePerLoad).union(firedOncePerLoad)).sorted()
        }
        snapshot.eventNumber = eventNumber
        if let context { snapshot.context = context }
        if prunedEventIDs > 0 { snapshot.eventIDs.removeFirst(min(prunedEventIDs, snapshot.eventIDs.count)) }
        if !eventIDs.isEmpty { snapshot.eventIDs += eventIDs }
        if let consent { snapshot.consent = consent }
    }

    /// Whether the delta changes nothing but what every push changes (the event counter).
    public var isEmpty: Bool {
        model.isEmpty && !replacesModel && rawValues.isEmpty && !replacesRawValues && userProperties == nil
            && attributes == nil && firedOncePerLoad.isEmpty && context == nil && consent == nil
    }

    // MARK: JSON

    /// Appends the delta's compact JSON text: `{"format":1,"session_id":…,"event_number":…}` with `model`,
    /// `replaces_model`, `raw_values`, `replaces_raw_values`, `user_properties`, `attributes`,
    /// `fired_once_per_load`, `context`, `event_ids`, `event_ids_pruned` and `consent` only when they carry
    /// something.
    package func writeJSON(to writer: inout JSONByteWriter) {
        writer.raw(#"{"format":"#)
        writer.integer(Int64(SessionDelta.formatVersion))
        writer.raw(#","session_id":"#)
        writer.string(sessionID)
        writer.raw(#","event_number":"#)
        writer.integer(Int64(eventNumber))
        if !model.isEmpty || replacesModel {
            writer.raw(#","model":"#)
            writer.object(model)
        }
        if replacesModel { writer.raw(#","replaces_model":true"#) }
        if !rawValues.isEmpty || replacesRawValues {
            writer.raw(#","raw_values":"#)
            writer.object(rawValues)
        }
        if replacesRawValues { writer.raw(#","replaces_raw_values":true"#) }
        if let userProperties {
            writer.raw(#","user_properties":"#)
            writer.object(userProperties)
        }
        if let attributes {
            writer.raw(#","attributes":"#)
            writer.object(attributes)
        }
        if !firedOncePerLoad.isEmpty {
            writer.raw(#","fired_once_per_load":["#)
            for (index, fired) in firedOncePerLoad.enumerated() {
                if index > 0 { writer.raw(0x2C) }
                writer.string(fired)
            }
            writer.raw(0x5D)
        }
        if let context {
            writer.raw(#","context":"#)
            context.writeJSON(to: &writer)
        }
        if !eventIDs.isEmpty {
            writer.raw(#","event_ids":"#)
            SeenEventID.writeJSON(eventIDs, to: &writer)
        }
        if prunedEventIDs > 0 {
            writer.raw(#","event_ids_pruned":"#)
            writer.integer(Int64(prunedEventIDs))
        }
        if let consent {
            writer.raw(#","consent":"#)
            consent.writeJSON(to: &writer)
        }
        writer.raw(0x7D)
    }

    /// The delta as compact JSON text (see ``writeJSON(to:)``).
    public var jsonText: String {
        var writer = JSONByteWriter(capacity: 256)
        writeJSON(to: &writer)
        return writer.text
    }

    /// Reads a delta from JSON text as ``jsonText`` writes it.
    public init(jsonText: String) throws(ContainerError) {
        try self.init(jsonValue: try Value(json: jsonText))
    }

    /// Reads a delta from the JSON object ``jsonText`` writes.
    /// - Throws: ``ContainerError`` (`invalid_structure`) naming the member that is missing or wrong.
    public init(jsonValue: Value) throws(ContainerError) {
        guard case .object(let map) = jsonValue else {
            throw ContainerError(.invalidStructure, "a session delta must be an object, not \(jsonValue.typeName)")
        }
        func wrong(_ key: String, _ expected: String) -> ContainerError {
            ContainerError(.invalidStructure, "session delta '\(key)' must be \(expected)", pointer: "/\(key)")
        }
        func object(_ key: String) throws(ContainerError) -> ValueMap? {
            switch map[key] {
            case nil: return nil
            case .object(let inner)?: return inner
            default: throw wrong(key, "an object")
            }
        }
        func flag(_ key: String) throws(ContainerError) -> Bool {
            switch map[key] {
            case nil: return false
            case .bool(let value)?: return value
            default: throw wrong(key, "true or false")
            }
        }
        guard case .int(let format)? = map["format"], format == SessionDelta.formatVersion else {
            throw ContainerError(
                .invalidStructure,
                "session delta format '\(map["format"]?.jsString ?? "")' is not \(SessionDelta.formatVersion)",
                pointer: "/format"
            )
        }
        guard case .string(let sessionID)? = map["session_id"] else { throw wrong("session_id", "a string") }
        guard case .int(let eventNumber)? = map["event_number"], eventNumber >= 0,
            eventNumber <= 9_007_199_254_740_991
        else { throw wrong("event_number", "a whole number from 0 to 9007199254740991") }
        var fired: [String] = []
        switch map["fired_once_per_load"] {
        case nil: break
        case .array(let list)?: fired = list.compactMap(\.stringValue)
        default: throw wrong("fired_once_per_load", "an array")
        }
        var pruned = 0
        switch map["event_ids_pruned"] {
        case nil: break
        case .int(let count)? where count >= 0 && count <= Int64(Int32.max): pruned = Int(count)
        default: throw wrong("event_ids_pruned", "a whole number from 0")
        }
        self.init(
            sessionID: sessionID,
            model: try object("model") ?? ValueMap(),
            replacesModel: try flag("replaces_model"),
            rawValues: try object("raw_values") ?? ValueMap(),
            replacesRawValues: try flag("replaces_raw_values"),
            userProperties: try object("user_properties"),
            attributes: try object("attributes"),
            firedOncePerLoad: fired,
            eventNumber: Int(eventNumber),
            context: try map["context"].map { value throws(ContainerError) in try ClientContext(jsonValue: value) },
            eventIDs: try map["event_ids"].map { value throws(ContainerError) in
                try SeenEventID.list(from: value, member: "event_ids")
            } ?? [],
            prunedEventIDs: pruned,
            consent: try map["consent"].map { value throws(ContainerError) in try ConsentState(jsonValue: value) }
        )
    }
}

/// What a session's pushes changed since the last time its changes were taken (``DataLayer/takeDelta()``):
/// kept only by a session whose store commits deltas. Mutated under the session's lock.
struct SessionChanges: Sendable {
    // Fields in this order, the event ID counts in the gaps the flags leave before the next array: every session
    // in a store that commits deltas holds one of these.
    /// The top-level model keys set, in the order first set (may repeat).
    var modelKeys: [String] = []
    var replacesModel = false
    /// Event IDs remembered since the changes were last taken.
    var eventIDsAdded: Int32 = 0
    var rawKeys: [String] = []
    var replacesRawValues = false
    var userProperties = false
    var attributes = false
    /// The oldest event IDs forgotten since the changes were last taken.
    var eventIDsPruned: Int32 = 0
    var firedOncePerLoad: [String] = []
    var context = false
    /// Whether a consent command was pushed (the delta then carries the whole consent state).
    var consent = false

    /// Notes the top-level keys a merged `message` set (its keys, dotted ones by their first part).
    mutating func noteMerged(_ message: ValueMap, dotted: Bool, clears: Bool) {
        if clears { replacesModel = true }
        if replacesModel { return }
        for key in message.keys {
            guard dotted, DataLayer.hasDot(key) else {
                modelKeys.append(key)
                continue
            }
            modelKeys.append(String(key.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)[0]))
        }
    }

    /// The delta of these changes from the state `state` holds now; resets them.
    mutating func take(from state: DataLayer.State, sessionID: String) -> SessionDelta {
        var delta = SessionDelta(sessionID: sessionID, eventNumber: state.eventNumber)
        if replacesModel {
            delta.model = state.model
            delta.replacesModel = true
        } else if !modelKeys.isEmpty {
            var model = ValueMap(minimumCapacity: modelKeys.count)
            for key in modelKeys where model[key] == nil {
                guard let value = state.model[key] else {
                    // A key the pushes removed: only the whole model says so.
                    model = state.model
                    delta.replacesModel = true
                    break
                }
                model.appendNew(key, value)
            }
            delta.model = model
        }
        if replacesRawValues {
            delta.rawValues = state.rawValues.sortedByKey()
            delta.replacesRawValues = true
        } else if !rawKeys.isEmpty {
            var raw = ValueMap(minimumCapacity: rawKeys.count)
            for key in rawKeys where raw[key] == nil {
                if let value = state.rawValues[key] { raw.appendNew(key, value) }
            }
            delta.rawValues = raw
        }
        if userProperties { delta.userProperties = state.userProperties }
        if attributes { delta.attributes = state.savedAttributes.sortedByKey() }
        if !firedOncePerLoad.isEmpty { delta.firedOncePerLoad = firedOncePerLoad.sorted() }
        if context { delta.context = state.context }
        if consent { delta.consent = state.consent }
        if eventIDsAdded > 0 || eventIDsPruned > 0, let seen = state.seenEventIDs {
            // Pruning takes the oldest first: what was added and is still remembered is the newest, and what
            // was pruned beyond the IDs added was remembered before.
            let kept = min(Int(eventIDsAdded), seen.count)
            delta.eventIDs = seen.suffix(kept)
            delta.prunedEventIDs = Int(eventIDsPruned) - (Int(eventIDsAdded) - kept)
        }
        self = SessionChanges(reusing: self)
        return delta
    }

    /// Empty changes keeping the buffers of `old`.
    private init(reusing old: SessionChanges) {
        var old = old
        old.modelKeys.removeAll(keepingCapacity: true)
        old.rawKeys.removeAll(keepingCapacity: true)
        modelKeys = old.modelKeys
        rawKeys = old.rawKeys
    }

    init() {}
}

extension DataLayer {
    /// What this session changed since the last call (or since it was made or restored), as a delta from
    /// that state; `nil` when the session does not keep its changes (it is not in a store that commits
    /// deltas).
    func takeDelta() -> SessionDelta? {
        state.withLock { state in
            guard var changes = state.changes else { return nil }
            state.changes = nil  // one reference to the buffers while they are emptied
            let delta = changes.take(from: state, sessionID: sessionID)
            state.changes = changes
            return delta
        }
    }
}
