/// What one push's evaluation reads of its session besides the message, the model and the client context (which its
/// runtime holder carries, ``SessionRuntime/context``): taken by the session under
/// the lock its push takes anyway (``DataLayer``'s merge), moved into the ``Evaluation`` and only read there. An
/// evaluation never reads its session's state itself: what a container reads is here, as the push found it.
///
/// A part no live container reads (``SessionReads``) is `nil`, and when the containers read none of them (most
/// pushes) so is ``values``: the push carries nothing to retain or release.
struct SessionView: Sendable {
    /// The session, for the calls the evaluation makes (``FunctionCall/dataLayer``); the evaluation cannot read it.
    let call: CallSession
    /// The parts of the session's state the live containers read, as the push found them.
    let values: Values?

    /// The parts of a session's state an evaluation may read.
    struct Values: Sendable {
        /// What the session's consent commands set (`nil` or empty: every type granted).
        var consent: ConsentState?
        /// Version-1 data-layer variables' values: the last raw value pushed under each top-level key.
        var rawValues: ValueMap?
        /// The Firebase user properties (what `__fup` variables read).
        var userProperties: ValueMap?
    }

    init(call: CallSession, values: consuming Values?) {
        self.call = call
        self.values = values
    }

    init(
        call: CallSession,
        consent: ConsentState? = nil,
        rawValues: ValueMap? = nil,
        userProperties: ValueMap? = nil
    ) {
        self.call = call
        self.values = Values(consent: consent, rawValues: rawValues, userProperties: userProperties)
    }
}

/// What of a session the live containers read when they evaluate an event (the parts of a ``SessionView`` a push
/// fills), decided once per container when it is compiled.
struct SessionReads: OptionSet, Sendable {
    let rawValue: UInt8

    init(rawValue: UInt8) { self.rawValue = rawValue }

    /// The merged model (data-layer variables of version 2).
    static let model = SessionReads(rawValue: 1 << 0)
    /// The last raw value of each pushed key (data-layer variables of version 1).
    static let rawValues = SessionReads(rawValue: 1 << 1)
    /// The Firebase user properties (`__fup`).
    static let userProperties = SessionReads(rawValue: 1 << 2)
    /// The consent state (a tag that requires consent).
    static let consent = SessionReads(rawValue: 1 << 3)
    /// The tags fired once per load (a once-per-load tag).
    static let oncePerLoad = SessionReads(rawValue: 1 << 4)
    /// Not a read: a web container's session drops a gtag event's `eventModel` from the model before each message,
    /// as gtm.js does (``GtagCommand``).
    static let dropsEventModel = SessionReads(rawValue: 1 << 5)

    /// What `program` reads.
    init(_ program: Program) {
        var reads = SessionReads()
        for macro in program.macros {
            switch macro.kind {
            case .dataLayer: reads.insert(.model)
            case .rawDataLayer: reads.insert(.rawValues)
            case .computedDataLayer(_, let version, _): reads.insert(version == 1 ? .rawValues : .model)
            case .userProperty: reads.insert(.userProperties)
            case .url, .referrer, .cookie: reads.insert(.rawValues)  // `gtm.url`, `gtm.referrer`, `gtm.cookie`
            default: break
            }
        }
        for tag in program.tags {
            if !tag.consentTypes.isEmpty { reads.insert(.consent) }
            if tag.oncePerLoad { reads.insert(.oncePerLoad) }
        }
        self = reads
    }
}

/// A session's once-per-load tags (their keys, `<container>#<tag>`, and `…!failed` for a call that failed), as one
/// push's evaluation sees and changes them: the session's set as the push found it, read only (it shares the
/// session's storage until the push ends), and the keys the push adds, which the session merges into its set under
/// its lock once the evaluation is done. Passed `inout` to the evaluation: the push owns it, the evaluation only
/// borrows it.
///
/// Empty (`nil`) until there is a key, so that a push whose session has none carries nothing to release.
struct OncePerLoad: Sendable {
    private struct Keys {
        /// The session's keys when the push began.
        var fired: Set<String>
        /// The keys this push added, in the order it added them.
        var added: [String]
    }
    private var keys: Keys?

    /// The session's keys `fired`, as a push begins.
    init(_ fired: Set<String>? = nil) {
        if let fired { keys = Keys(fired: fired, added: []) }
    }

    /// The keys this push added, in the order it added them.
    var added: [String] { keys?.added ?? [] }

    /// Whether this push added a key.
    var hasAdded: Bool { keys?.added.isEmpty == false }

    /// Whether `key` was recorded, by an earlier push or by this one.
    func contains(_ key: String) -> Bool {
        keys?.fired.contains(key) == true || keys?.added.contains(key) == true
    }

    /// Records `key`; returns whether it was new.
    @discardableResult
    mutating func insert(_ key: String) -> Bool {
        guard !contains(key) else { return false }
        if keys == nil { keys = Keys(fired: [], added: []) }
        keys!.added.append(key)
        return true
    }

    /// The keys this push added, moved out; forgets the session's keys too (releasing the storage it shares with
    /// the session's set, so that the merge that follows writes that set in place).
    mutating func takeAdded() -> [String] {
        let added = keys?.added ?? []
        keys = nil
        return added
    }
}
