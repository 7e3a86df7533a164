import Synchronization

/// Everything a session (``DataLayer``) remembers, as a value: take one with ``DataLayer/snapshot()``,
/// store it anywhere (it is `Codable`, and ``jsonValue`` / ``init(jsonValue:)`` give an exact JSON form),
/// and make the session again with ``TagManager/restoreDataLayer(from:debug:)`` — after a restart, or on
/// another instance of the service.
///
/// A restored session behaves exactly as the original would have: once-per-load tags that fired do not
/// fire again, the event counter continues, the model, the version-1 raw values and the user properties
/// are the same (with their key order), and so are the attributes (for example the Braze user identity)
/// and the client context, and so are the event IDs it remembers (``SeenEventID``). Restoring does not
/// replay anything: no event is evaluated.
public struct SessionSnapshot: Sendable, Hashable {
    /// The version of this snapshot's layout; ``init(jsonValue:)`` refuses others.
    public static let formatVersion = 1

    /// The session's identifier (in a ``SessionStore``, the user ID).
    public var sessionID: String
    /// The merged data-layer model.
    public var model: ValueMap
    /// The last raw value of each pushed top-level key (what version-1 data-layer variables read).
    public var rawValues: ValueMap
    /// Firebase user properties (what `__fup` variables read).
    public var userProperties: ValueMap
    /// Session attributes set by the host or handlers, by key.
    public var attributes: ValueMap
    /// The once-per-load tags that already fired, as `container ID#tag index`, sorted.
    public var firedOncePerLoad: [String]
    /// How many events the session has evaluated (the Event Number built-in continues from it).
    public var eventNumber: Int
    /// What the built-in macros report for the session's client.
    public var context: ClientContext
    /// The event IDs the session remembers (see ``TagManager/eventIDs``), oldest first.
    public var eventIDs: [SeenEventID]
    /// What the session's consent commands set (``ConsentState``).
    public var consent: ConsentState

    /// Creates a snapshot from its parts.
    public init(
        sessionID: String,
        model: ValueMap = ValueMap(),
        rawValues: ValueMap = ValueMap(),
        userProperties: ValueMap = ValueMap(),
        attributes: ValueMap = ValueMap(),
        firedOncePerLoad: [String] = [],
        eventNumber: Int = 0,
        context: ClientContext = .server,
        eventIDs: [SeenEventID] = [],
        consent: ConsentState = ConsentState()
    ) {
        self.sessionID = sessionID
        self.model = model
        self.rawValues = rawValues
        self.userProperties = userProperties
        self.attributes = attributes
        self.firedOncePerLoad = firedOncePerLoad
        self.eventNumber = eventNumber
        self.context = context
        self.eventIDs = eventIDs
        self.consent = consent
    }

    /// The snapshot as one JSON object (`format`, `session_id`, `model`, `raw_values`, `user_properties`,
    /// `attributes`, `fired_once_per_load`, `event_number`, `context`, `event_ids` when the session
    /// remembers any, and `consent` when a consent command set anything), keys in order.
    public var jsonValue: Value {
        var map = ValueMap(minimumCapacity: 10)
        map["format"] = .int(Int64(SessionSnapshot.formatVersion))
        map["session_id"] = .string(sessionID)
        map["model"] = .object(model)
        map["raw_values"] = .object(rawValues)
        map["user_properties"] = .object(userProperties)
        map["attributes"] = .object(attributes)
        map["fired_once_per_load"] = .array(firedOncePerLoad.map(Value.string))
        map["event_number"] = .int(Int64(eventNumber))
        map["context"] = context.jsonValue
        if !eventIDs.isEmpty { map["event_ids"] = .array(eventIDs.map(\.jsonValue)) }
        if !consent.isEmpty { map["consent"] = consent.jsonValue }
        return .object(map)
    }

    /// Appends the compact JSON text of ``jsonValue`` (the same bytes, number types kept) without building
    /// its maps: what a persistence writes for every changed session it saves.
    package func writeJSON(to writer: inout JSONByteWriter) {
        writer.raw(#"{"format":"#)
        writer.integer(Int64(SessionSnapshot.formatVersion))
        writer.raw(#","session_id":"#)
        writer.string(sessionID)
        writer.raw(#","model":"#)
        writer.object(model)
        writer.raw(#","raw_values":"#)
        writer.object(rawValues)
        writer.raw(#","user_properties":"#)
        writer.object(userProperties)
        writer.raw(#","attributes":"#)
        writer.object(attributes)
        writer.raw(#","fired_once_per_load":["#)
        for (index, fired) in firedOncePerLoad.enumerated() {
            if index > 0 { writer.raw(0x2C) }
            writer.string(fired)
        }
        writer.raw(#"],"event_number":"#)
        writer.integer(Int64(eventNumber))
        writer.raw(#","context":"#)
        context.writeJSON(to: &writer)
        if !eventIDs.isEmpty {
            writer.raw(#","event_ids":"#)
            SeenEventID.writeJSON(eventIDs, to: &writer)
        }
        if !consent.isEmpty {
            writer.raw(#","consent":"#)
            consent.writeJSON(to: &writer)
        }
        writer.raw(0x7D)
    }

    /// Reads a snapshot from the JSON object ``jsonValue`` writes (a snapshot without `event_ids` or `consent`,
    /// as earlier versions wrote them, remembers no event ID and has no consent set).
    /// - Throws: ``ContainerError`` (`invalid_structure`) naming the member that is missing or wrong.
    public init(jsonValue: Value) throws(ContainerError) {
        guard case .object(let map) = jsonValue else {
            throw ContainerError(.invalidStructure, "a session snapshot must be an object, not \(jsonValue.typeName)")
        }
        func member(_ key: String) throws(ContainerError) -> Value {
            guard let value = map[key] else {
                throw ContainerError(.invalidStructure, "session snapshot has no '\(key)'", pointer: "/\(key)")
            }
            return value
        }
        func object(_ key: String) throws(ContainerError) -> ValueMap {
            guard case .object(let inner) = try member(key) else {
                throw ContainerError(
                    .invalidStructure,
                    "session snapshot '\(key)' must be an object",
                    pointer: "/\(key)"
                )
            }
            return inner
        }
        guard case .int(let format) = try member("format"), format == SessionSnapshot.formatVersion else {
            throw ContainerError(
                .invalidStructure,
                "session snapshot format '\(map["format"]?.jsString ?? "")' is not \(SessionSnapshot.formatVersion)",
                pointer: "/format"
            )
        }
        guard case .string(let sessionID) = try member("session_id") else {
            throw ContainerError(
                .invalidStructure,
                "session snapshot 'session_id' must be a string",
                pointer: "/session_id"
            )
        }
        guard case .array(let fired) = try member("fired_once_per_load") else {
            throw ContainerError(
                .invalidStructure,
                "session snapshot 'fired_once_per_load' must be an array",
                pointer: "/fired_once_per_load"
            )
        }
        // Bounded so that counting the session's next events can never overflow.
        guard case .int(let eventNumber) = try member("event_number"), eventNumber >= 0,
            eventNumber <= 9_007_199_254_740_991
        else {
            throw ContainerError(
                .invalidStructure,
                "session snapshot 'event_number' must be a whole number from 0 to 9007199254740991",
                pointer: "/event_number"
            )
        }
        self.init(
            sessionID: sessionID,
            model: try object("model"),
            rawValues: try object("raw_values"),
            userProperties: try object("user_properties"),
            attributes: try object("attributes"),
            firedOncePerLoad: fired.compactMap(\.stringValue),
            eventNumber: Int(eventNumber),
            context: try ClientContext(jsonValue: try member("context")),
            eventIDs: try map["event_ids"].map { value throws(ContainerError) in
                try SeenEventID.list(from: value, member: "event_ids")
            } ?? [],
            consent: try map["consent"].map { value throws(ContainerError) in try ConsentState(jsonValue: value) }
                ?? ConsentState()
        )
    }

    /// The snapshot as compact JSON text (``jsonValue``).
    public var jsonText: String {
        var writer = JSONByteWriter(capacity: 512)
        writeJSON(to: &writer)
        return writer.text
    }

    /// Reads a snapshot from JSON text as ``jsonText`` writes it.
    public init(jsonText: String) throws(ContainerError) {
        try self.init(jsonValue: try Value(json: jsonText))
    }
}

/// `Codable` as the JSON text of ``SessionSnapshot/jsonValue`` in a single string, so that the key order of
/// the model survives any coder (Foundation's `JSONDecoder` does not keep it), and a restored session
/// behaves exactly as the original.
extension SessionSnapshot: Codable {
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        try self.init(jsonText: text)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(jsonText)
    }
}

extension DataLayer {
    /// A snapshot of everything this session remembers (see ``SessionSnapshot``). Taken between pushes;
    /// a snapshot taken while a push is processed has the pushes merged so far.
    public func snapshot() -> SessionSnapshot {
        state.withLock { state in
            SessionSnapshot(
                sessionID: sessionID,
                model: state.model,
                rawValues: state.rawValues.sortedByKey(),
                userProperties: state.userProperties,
                attributes: state.savedAttributes.sortedByKey(),
                firedOncePerLoad: state.firedOncePerLoad.count < 2
                    ? Array(state.firedOncePerLoad) : state.firedOncePerLoad.sorted(),
                eventNumber: state.eventNumber,
                context: state.context,
                eventIDs: state.seenEventIDs?.events ?? [],
                consent: state.consent
            )
        }
    }

    /// Takes over everything `snapshot` remembers (the session ID stays this data layer's own).
    func restore(_ snapshot: SessionSnapshot) {
        state.withLock { state in
            state.model = snapshot.model
            state.rawValues = snapshot.rawValues
            state.userProperties = snapshot.userProperties
            state.attributes = snapshot.attributes
            state.extensions = [:]
            state.firedOncePerLoad = Set(snapshot.firedOncePerLoad)
            state.eventNumber = snapshot.eventNumber
            state.context = snapshot.context
            state.seenEventIDs =
                snapshot.eventIDs.isEmpty ? nil : SeenEventIDs(snapshot.eventIDs, seed: tagManager.eventIDSeed)
            state.consent = snapshot.consent
            if state.changes != nil { state.changes = SessionChanges() }
        }
    }
}

extension TagManager {
    /// Makes a session from a snapshot (see ``SessionSnapshot``): the same session ID, model, attributes,
    /// once-per-load state, event counter, user properties, client context, remembered event IDs and consent
    /// state. Nothing is evaluated.
    public func restoreDataLayer(from snapshot: SessionSnapshot, debug: Bool = false) -> DataLayer {
        restoreDataLayer(from: snapshot, debug: debug, committing: nil)
    }

    /// A data layer restored from `snapshot` whose pushes `committing` commits (a ``SessionStore``'s).
    func restoreDataLayer(
        from snapshot: SessionSnapshot,
        debug: Bool,
        committing: (@Sendable (DataLayer, inout PushResult) -> Void)?,
        keepsChanges: Bool = false
    ) -> DataLayer {
        let layer = makeDataLayer(
            context: snapshot.context,
            sessionID: snapshot.sessionID,
            debug: debug,
            committing: committing,
            keepsChanges: keepsChanges
        )
        layer.restore(snapshot)
        return layer
    }
}

extension ValueMap {
    /// The map with its entries in key order (as ``SessionSnapshot`` keeps raw values and attributes); the map
    /// itself, not a copy, when they already are (a session's few attributes nearly always).
    func sortedByKey() -> ValueMap {
        if zip(keys, keys.dropFirst()).allSatisfy({ $0 < $1 }) { return self }
        var sorted = ValueMap(minimumCapacity: count)
        for key in keys.sorted() { sorted[key] = self[key] }
        return sorted
    }
}
