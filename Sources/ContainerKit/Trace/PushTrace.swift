/// What one push did, explained: every tag considered with its outcome and why, the variables evaluated, the
/// data-layer keys the push changed, and the records it produced. The one evaluation trace of ContainerKit:
/// `containerkit preview`, `containerkit run --explain` and a service's debug page show this same value.
///
/// A push records a trace **only when asked** — ``DataLayer/push(_:eventID:tracing:)-(ValueMap,String?,Bool)``, the `tracing:`
/// parameter of ``SessionStore/push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)``,
/// or a session made with `debug: true` — and ``PushResult/trace`` is `nil` otherwise. A push that is not traced
/// pays nothing for the feature: the evaluation takes the tracing branch only when asked.
///
/// ```swift
/// let result = session.push(["event": "played", "genre": "rock"], tracing: true)
/// for tag in result.trace?.evaluations.first?.tags ?? [] {
///     print(tag.outcome, tag.reason ?? "")  // fired, or not_fired: {{Genre}} equals "jazz" (value: "rock") …
/// }
/// ```
///
/// ## JSON
/// The value is `Codable`; ``json()`` writes it with sorted keys, so the same push gives the same text. The
/// members are snake_case; an optional member that has no value is left out, and so is an operand or a value
/// that is `undefined` (JSON has none): a missing `value`, `left`, `right`, `before` or `after` means
/// *undefined*. ``version`` is ``formatVersion``; a member added later keeps the version, a member renamed or
/// removed raises it. `Docs/Preview.md` documents every member.
///
/// The runtime makes traces; a test or a tool reads one back with ``init(json:)``.
public struct PushTrace: Sendable, Hashable, Codable {
    /// The version of the JSON shape (``version``): 1.
    public static let formatVersion = 1

    /// ``formatVersion`` when the trace was made.
    public var version: Int = PushTrace.formatVersion
    /// The session that was pushed into (``DataLayer/sessionID``).
    public var sessionID: String
    /// The pushed event's name; `nil` for a push without `event`.
    public var event: String?
    /// The event ID the push carried, if any.
    public var eventID: String?
    /// The pushed message (for `push(event:parameters:)`, the parameters).
    public var message: Value = .object(ValueMap())
    /// What became of the push as a whole.
    public var outcome: Outcome = .applied
    /// Why the push was refused (``Outcome/refused``): the error's code and message.
    public var refusal: Problem?
    /// For a duplicate (``Outcome/duplicate``): the original push, as its session remembers it.
    public var duplicateOf: Original?
    /// For a consent command (``DataLayer/push(_:tracing:)-(ConsentCommand,Bool)``): each consent type it names,
    /// granted or denied before and after. `nil` for any other push.
    public var consent: Consent?
    /// The top-level data-layer keys the push (and the pushes its handlers made) changed, in the order they
    /// were first changed, with their values before and after.
    public var changes: [Change] = []
    /// One evaluation per container and evaluated event, in order: the pushed event in each live container,
    /// then the events the tag handlers pushed (``Evaluation/nested``). Empty for a push without an event.
    public var evaluations: [Evaluation] = []
    /// The records the push produced, in order: each fired tag's (sent, or held until the user is known), then
    /// what the push hooks added (a Braze session's held records, released once its user is known).
    public var records: [Record] = []
    /// The session's data layer (merged model) after the push.
    public var dataLayer: Value = .object(ValueMap())

    /// What became of a push.
    public enum Outcome: String, Sendable, Hashable, Codable, CaseIterable {
        /// Merged into the data layer and, with an event, evaluated.
        case applied
        /// Its event ID was seen already: nothing was applied again (see ``PushTrace/duplicateOf``).
        case duplicate
        /// Refused and applied nowhere (``PushTrace/refusal``: `session_too_large`, `invalid_event_id`).
        case refused
        /// Held back until a container is available (delayed initialization); evaluated later, untraced.
        case deferred
        /// Dropped while waiting for a container (too many pushes wait).
        case dropped
    }

    /// An error's code and message.
    public struct Problem: Sendable, Hashable, Codable {
        /// The stable code, e.g. `session_too_large`.
        public var code: String
        /// What went wrong, in words.
        public var message: String

        /// Creates a problem.
        public init(code: String, message: String) {
            self.code = code
            self.message = message
        }
    }

    /// The original push of a duplicate.
    public struct Original: Sendable, Hashable, Codable {
        /// When the original was applied, in milliseconds since 1970.
        public var time: Int64
        /// The tags the original fired, each with outcome ``Tag/Outcome/duplicate``, its status and the IDs of
        /// its records.
        public var tags: [Tag]

        /// Creates the summary of an original push.
        public init(time: Int64, tags: [Tag]) {
            self.time = time
            self.tags = tags
        }
    }

    /// What a consent command did to the session's consent state (``ConsentState``).
    public struct Consent: Sendable, Hashable, Codable {
        /// The command's kind: `default` or `update`.
        public var kind: String
        /// The regions a default is for, when it names any.
        public var regions: [String]?
        /// Each consent type the command names, in the order given (once each).
        public var types: [ConsentType]

        /// One consent type, before and after the command.
        public struct ConsentType: Sendable, Hashable, Codable {
            /// The consent type, e.g. `ad_storage`.
            public var type: String
            /// Whether it was in force granted (`granted`), denied (`denied`), or not set (`nil`), before.
            public var before: String?
            /// The same after the command: a default for another region leaves it as it was.
            public var after: String?
        }

        /// What `command` did, from the consent state `before` it to the one `after`.
        init(_ command: ConsentCommand, before: ConsentState, after: ConsentState) {
            kind = command.kind.rawValue
            regions = command.regions
            var seen = Set<String>()
            types = []
            for setting in command.settings where seen.insert(setting.type).inserted {
                types.append(
                    ConsentType(
                        type: setting.type,
                        before: Self.word(before.entry(setting.type)?.granted),
                        after: Self.word(after.entry(setting.type)?.granted)
                    )
                )
            }
        }

        static func word(_ granted: Bool?) -> String? {
            granted.map { $0 ? "granted" : "denied" }
        }
    }

    /// One top-level data-layer key the push changed.
    public struct Change: Sendable, Hashable, Codable {
        /// The top-level key (a dotted push key changes the key before its first dot).
        public var key: String
        /// Its value before the push; `nil`: it had none (undefined).
        public var before: Value?
        /// Its value after the push; `nil`: it was removed.
        public var after: Value?
    }

    /// One event evaluated in one container.
    public struct Evaluation: Sendable, Hashable, Codable {
        /// The container's ID.
        public var containerID: String
        /// The container's version.
        public var containerVersion: String
        /// The event evaluated.
        public var event: String?
        /// Whether a tag handler pushed this event while the push was processed (the push's own event is not
        /// nested).
        public var nested: Bool = false
        /// Every tag of the container, in container order, each with its outcome.
        public var tags: [Tag] = []
        /// Every variable evaluated for the event, in first-use order, with its value.
        public var variables: [Variable] = []
    }

    /// One tag and what happened to it.
    public struct Tag: Sendable, Hashable, Codable {
        /// What happened to a tag.
        public enum Outcome: String, Sendable, Hashable, Codable, CaseIterable {
            /// A passing trigger added it and its handler was called: ``Tag/status`` says how the call went,
            /// ``Tag/arguments`` what it was called with.
            case fired
            /// Fired, and its handler held what the call made until the user is known (Braze: a session without
            /// a user); the records are in ``PushTrace/records`` with state `held`.
            case pending
            /// A passing trigger added it, but ContainerKit does not run its type (`__html`, `__ua`, …).
            case unsupported
            /// A passing blocking trigger (exception) removed it: ``Tag/blockedBy``.
            case blocked
            /// A passing trigger added it, but the consent types its consent settings require were not all
            /// granted in the session (``FiredTag/Status/blockedByConsent(_:)``): it did not run; ``Tag/reason``
            /// names the types.
            case blockedByConsent = "blocked_by_consent"
            /// No trigger that adds it passed: ``Tag/failedConditions`` says which condition of each failed, with
            /// both operands' values.
            case notFired = "not_fired"
            /// The tag is paused in the container.
            case paused
            /// A once-per-load tag that already fired in this session.
            case alreadyFired = "already_fired"
            /// The push was a duplicate; the original push fired the tag (``PushTrace/duplicateOf``).
            case duplicate
        }

        /// The tag's index in the compiled container.
        public var index: Int
        /// The tag's `tag_id`, when it has one.
        public var tagID: Int?
        /// Its display name, when the container has one.
        public var name: String?
        /// Its template function, e.g. `__funct` (`nil` in a duplicate's summary).
        public var function: String?
        /// The class path or function name it called, for function-call tags that fired.
        public var classPath: String?
        /// What happened to it.
        public var outcome: Outcome
        /// How its call went (for tags that were called, and a duplicate's original tags).
        public var status: Status?
        /// The arguments as evaluated, an object (tags that were called; undefined arguments are left out).
        public var arguments: Value?
        /// The passing triggers that block it (``Outcome/blocked``).
        public var blockedBy: [Rule]?
        /// For ``Outcome/notFired``: per trigger that adds the tag, the first of its conditions that failed.
        public var failedConditions: [Condition]?
        /// The IDs of the records its call made (a duplicate's original tags).
        public var recordIDs: [String]?
        /// The outcome in words: `rule 1: {{Genre}} equals "jazz" (value: "rock") was false`, `blocked by
        /// trigger 'Staff'`, `fired, but failed: …`; `nil` for a tag that fired as it should.
        public var reason: String?
        /// For a tag its triggers selected (fired, blocked, …): what their conditions read that ContainerKit
        /// cannot evaluate as a page would (``FiredTag/unknownInputs``); `nil` when nothing.
        public var unknownInputs: [String]?
    }

    /// How a tag's call went: ``FiredTag/Status``'s name and message.
    public struct Status: Sendable, Hashable, Codable {
        /// `ok`, `unhandled`, `failed`, `unsupported`, `dropped` or `pending`.
        public var name: String
        /// What `failed`, `dropped` and `pending` say.
        public var message: String?

        /// Creates a status.
        public init(name: String, message: String? = nil) {
            self.name = name
            self.message = message
        }

        /// The status of a fired tag.
        public init(_ status: FiredTag.Status) {
            self.init(name: status.name, message: status.message)
        }
    }

    /// A trigger (rule) of a container.
    public struct Rule: Sendable, Hashable, Codable {
        /// Its index in the compiled container.
        public var index: Int
        /// Its name (an export's trigger name), when it has one.
        public var name: String?
    }

    /// One condition (predicate) of a trigger that kept a tag from firing, with its operands as evaluated.
    public struct Condition: Sendable, Hashable, Codable {
        /// Where a condition sits in its trigger.
        public enum Role: String, Sendable, Hashable, Codable {
            /// A condition that must hold: it was false.
            case `if`
            /// An exception (`unless`) that must not hold: it held.
            case unless
        }

        /// The trigger the condition belongs to.
        public var rule: Rule
        /// The predicate's index in the compiled container.
        public var predicate: Int
        /// Whether it is a condition that was false or an exception that held.
        public var role: Role
        /// The variable on its left, `{{Name}}`, when the left side is a variable.
        public var variable: String?
        /// The operator: `_eq`, `_cn`, `_sw`, `_ew`, `_re`, `_lt`, `_le`, `_gt`, `_ge`, `_lc`, or the unknown
        /// function's name.
        public var `operator`: String
        /// Whether the condition is negated (exports' "does not …").
        public var negate: Bool = false
        /// Whether the comparison ignores case.
        public var ignoreCase: Bool = false
        /// The left operand as evaluated; `nil`: undefined.
        public var left: Value?
        /// The right operand as evaluated; `nil`: undefined.
        public var right: Value?
        /// A note on the test: a regular expression that ran out of its step budget counts as not matching; a
        /// variable or condition ContainerKit cannot evaluate as a page would.
        public var note: String?
    }

    /// One variable (macro) evaluated for an event.
    public struct Variable: Sendable, Hashable, Codable {
        /// Its index in the compiled container.
        public var index: Int
        /// Its display name, when it has one.
        public var name: String?
        /// Its template function, e.g. `__md`.
        public var function: String
        /// Its value; `nil`: undefined.
        public var value: Value?
    }

    /// One record the push produced.
    public struct Record: Sendable, Hashable, Codable {
        /// Whether a record went out with the push or waits.
        public enum State: String, Sendable, Hashable, Codable {
            /// Handed to the sink with the push.
            case sent
            /// Held in the session until its user is known (a Braze session without a user).
            case held
        }

        /// How far a record is from surviving a crash.
        public enum Durability: String, Sendable, Hashable, Codable {
            /// The sink made no promise to keep it (a memory or standard-output sink).
            case none
            /// Being written by a durable sink; ``PushTrace/markDurable()`` or ``PushTrace/markNotDurable(_:)``
            /// update it once the push's ``PushResult/waitUntilDurable()`` returned.
            case writing
            /// Written and synced (or committed) with the push.
            case durable
            /// The write that held it failed (``Record/durabilityError``).
            case failed
            /// Held in the session's state, durable with the session (not a record of any sink yet).
            case session
        }

        /// Where a record is on its way to its destination, when the host knows (``Record/deliveryReason`` says
        /// why it is retrying or was rejected).
        public enum Delivery: String, Sendable, Hashable, Codable {
            /// Waiting in the delivery queue.
            case queued
            /// Accepted by the destination.
            case delivered
            /// An attempt to deliver it failed in a way that may pass later: it will be offered again.
            case retrying
            /// Refused by the destination for good, or given up on (dropped after its last attempt).
            case rejected
        }

        /// The container of the tag that made it; `nil` for what a push hook added.
        public var containerID: String?
        /// The index of the tag that made it.
        public var tagIndex: Int?
        /// The `tag_id` of the tag that made it.
        public var tagID: Int?
        /// The name of the tag that made it.
        public var tagName: String?
        /// Whether a push hook (not a tag) added it: a held record released by this push.
        public var fromPushHook: Bool = false
        /// Sent now or held.
        public var state: State
        /// The record's stable ID, if it has one.
        public var recordID: String?
        /// The record as JSON (``TagRecord/jsonValue``).
        public var record: Value
        /// How durable it is.
        public var durability: Durability
        /// The code of the error its write failed with (``Durability/failed``), e.g. `disk_full` (the code
        /// only: an error's message may name server paths).
        public var durabilityError: String?
        /// Where its delivery is; `nil` when unknown (the library does not follow delivery; a host may set it, as
        /// the example service's debug page does when its delivery pipeline answers).
        public var delivery: Delivery?
        /// Why it is ``Delivery-swift.enum/retrying`` or ``Delivery-swift.enum/rejected``: the destination's error
        /// (its code and message, never a credential).
        public var deliveryReason: String?
    }

    /// Every tag of every evaluation, in order (a duplicate's: its original's tags).
    public var tags: [Tag] {
        if let duplicateOf { return duplicateOf.tags }
        return evaluations.flatMap(\.tags)
    }

    /// Marks the records that were being written (``Record/Durability/writing``) durable: call it once the
    /// push's ``PushResult/waitUntilDurable()`` returned.
    public mutating func markDurable() {
        for i in records.indices where records[i].durability == .writing { records[i].durability = .durable }
    }

    /// Marks the records that were being written as failed with `error`: call it when the push's
    /// ``PushResult/waitUntilDurable()`` threw.
    public mutating func markNotDurable(_ error: DurabilityError) {
        for i in records.indices where records[i].durability == .writing {
            records[i].durability = .failed
            records[i].durabilityError = error.code.rawValue
        }
    }
}

// MARK: - JSON member names

extension PushTrace {
    enum CodingKeys: String, CodingKey {
        case version, sessionID = "session_id", event, eventID = "event_id", message, outcome, refusal
        case duplicateOf = "duplicate_of", consent, changes, evaluations, records, dataLayer = "data_layer"
    }
}

extension PushTrace.Evaluation {
    enum CodingKeys: String, CodingKey {
        case containerID = "container_id", containerVersion = "container_version", event, nested, tags, variables
    }
}

extension PushTrace.Tag {
    fileprivate enum CodingKeys: String, CodingKey {
        case index, tagID = "tag_id", name, function, classPath = "class_path", outcome, status, arguments
        case blockedBy = "blocked_by", failedConditions = "failed_conditions", recordIDs = "record_ids", reason
        case unknownInputs = "unknown_inputs"
    }
}

extension PushTrace.Condition {
    fileprivate enum CodingKeys: String, CodingKey {
        case rule, predicate, role, variable, `operator`, negate, ignoreCase = "ignore_case", left, right, note
    }
}

extension PushTrace.Record {
    enum CodingKeys: String, CodingKey {
        case containerID = "container_id", tagIndex = "tag_index", tagID = "tag_id", tagName = "tag_name"
        case fromPushHook = "from_push_hook", state, recordID = "record_id", record, durability
        case durabilityError = "durability_error", delivery, deliveryReason = "delivery_reason"
    }
}

// MARK: - Decoding values that may be undefined

extension KeyedDecodingContainer {
    /// A value that is left out when undefined: missing is `nil` (undefined), JSON `null` is ``Value/null``
    /// (`decodeIfPresent` would read both as `nil`).
    fileprivate func decodeUndefinable(_ key: Key) throws -> Value? {
        // Not `contains(key) ? … : nil`: `Value` is `ExpressibleByNilLiteral`, so that `nil` would be `.null`.
        guard contains(key) else { return Value?.none }
        return try decode(Value.self, forKey: key)
    }
}

extension PushTrace.Change {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            key: try container.decode(String.self, forKey: .key),
            before: try container.decodeUndefinable(.before),
            after: try container.decodeUndefinable(.after)
        )
    }
}

extension PushTrace.Variable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            index: try container.decode(Int.self, forKey: .index),
            name: try container.decodeIfPresent(String.self, forKey: .name),
            function: try container.decode(String.self, forKey: .function),
            value: try container.decodeUndefinable(.value)
        )
    }
}

extension PushTrace.Condition {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            rule: try container.decode(PushTrace.Rule.self, forKey: .rule),
            predicate: try container.decode(Int.self, forKey: .predicate),
            role: try container.decode(Role.self, forKey: .role),
            variable: try container.decodeIfPresent(String.self, forKey: .variable),
            operator: try container.decode(String.self, forKey: .operator),
            negate: try container.decode(Bool.self, forKey: .negate),
            ignoreCase: try container.decode(Bool.self, forKey: .ignoreCase),
            left: try container.decodeUndefinable(.left),
            right: try container.decodeUndefinable(.right),
            note: try container.decodeIfPresent(String.self, forKey: .note)
        )
    }
}

extension Value {
    /// The value, or `nil` when it is undefined: how a trace holds a value that may be undefined.
    var definedValue: Value? {
        if case .undefined = self { return Value?.none }
        return self
    }
}
