public import ContainerKit
import ContainerKitDelivery
import Foundation
import Synchronization

extension BrazeTagProvider {
    /// What the provider does with a Braze tag in a session that has no user yet.
    public enum WithoutUser: Sendable, Hashable {
        /// Keep the call's records in the session (pending) until the session gets a user, then send them for
        /// that user with their original times. The default.
        case hold
        /// Give the session a Braze user alias at once — `alias_name` the session ID, `alias_label` `label` —
        /// and send the records for it: Braze keeps them on an alias-only profile (the `/users/track`
        /// destination asks it to create one). When the session later gets an `external_id` (a `changeUser`
        /// tag, whose `change_user` record names the alias as its `previous_user`, or the host's
        /// ``BrazeTagProvider/setUser(_:on:)``), the end of that push adds an `identify` record — the alias
        /// and the `external_id` — which the destination sends to `/users/identify` after the records
        /// before it, and Braze merges the alias-only profile into the identified user.
        case alias(label: String)
    }

    /// How the provider treats sessions without a user.
    public struct Configuration: Sendable, Hashable {
        /// Hold the records of a session without a user (`.hold`, the default), or send them for a user alias.
        public var withoutUser: WithoutUser
        /// The most records one session holds pending (100): holding one more drops the oldest. `0` holds
        /// nothing: a Braze tag in a session without a user is then dropped at once.
        public var maximumPendingRecords: Int
        /// The most bytes of record JSON one session holds pending (64 KiB; a typical event is 200–400 bytes):
        /// past it the oldest are dropped, so that a session's memory stays bounded whatever its records carry
        /// (a property payload may be up to 50 KB).
        public var maximumPendingBytes: Int
        /// The longest a record waits pending (24 hours): an older one is dropped when the session's next push
        /// ends, or when a tag adds to or releases the session's pending records.
        public var maximumPendingAge: Duration
        /// Whether a session's ID is its user's Braze `external_id` (a service that keys sessions by its users'
        /// IDs, as TagService does): a session whose user is none — or the user alias its records went to, not
        /// yet identified — gets `.externalID(sessionID)` when a Braze tag runs in it, or when a push ends with
        /// records to release or an alias to identify. It replaces a host's ``BrazeTagProvider/setUser(_:on:)``
        /// before each push, which read the session's user once more per event. `false` (the default): only the
        /// host and `changeUser` tags name the user.
        public var sessionIDIsExternalID: Bool

        /// Creates a configuration: hold up to 100 records (64 KiB) per session for up to 24 hours.
        public init(
            withoutUser: WithoutUser = .hold,
            maximumPendingRecords: Int = 100,
            maximumPendingBytes: Int = 64 * 1024,
            maximumPendingAge: Duration = .seconds(24 * 60 * 60),
            sessionIDIsExternalID: Bool = false
        ) {
            self.sessionIDIsExternalID = sessionIDIsExternalID
            self.withoutUser = withoutUser
            self.maximumPendingRecords = max(0, maximumPendingRecords)
            self.maximumPendingBytes = max(0, maximumPendingBytes)
            self.maximumPendingAge = maximumPendingAge
        }
    }

    /// Counts of pending records since the provider was made (across all sessions it saw).
    public struct PendingStatistics: Sendable, Hashable {
        /// Records held because their session had no user.
        public var held = 0
        /// Held records released for the session's user.
        public var released = 0
        /// Held records dropped because they waited longer than ``Configuration/maximumPendingAge``.
        public var expired = 0
        /// Held records dropped because their session held ``Configuration/maximumPendingRecords`` (or
        /// ``Configuration/maximumPendingBytes``) already.
        public var overflowed = 0

        /// Records this provider held and has not seen released or dropped since: the pending records of the
        /// sessions it served (a session that moved to another instance, or ended, is counted until then).
        public var pending: Int { max(0, held - released - expired - overflowed) }
    }

    /// Counts of pending records since the provider was made.
    public var pendingStatistics: PendingStatistics { counters.statistics }

    /// The session attribute that holds a session's pending records: an array of record objects
    /// (``AnalyticsRecord/jsonValue``, without an identity), oldest first. Absent when none is pending.
    public static let pendingAttributeKey = "braze.pending"

    /// The records `dataLayer`'s session holds until it has a user, oldest first.
    public static func pendingRecords(of dataLayer: DataLayer) -> [AnalyticsRecord] {
        dataLayer.extensionValue(PendingKey.self)?.records ?? []
    }

    // MARK: Holding

    /// Holds `records` of `call` (a session without a user) in the session, within the bounds.
    func hold(_ records: [AnalyticsRecord], action: BrazeActionType, _ call: FunctionCall) -> TagOutput {
        let session = call.dataLayer
        let now = clock()
        var pending = session.extensionValue(PendingKey.self) ?? PendingRecords()
        var problems = expire(&pending, now: now, session: session, tag: Self.tagName(call))
        // Records made now are held when they were made; an event a client says happened earlier is held now.
        pending.append(records, heldAt: call.eventTime == nil ? records.first?.time ?? now : now)
        counters.add(held: records.count)
        // The oldest go first, until both the count and the bytes (as the session saves them) are within bounds.
        let sizes = pending.savedSizes
        let bytes = sizes.reduce(0, +)
        var excess = max(0, pending.count - configuration.maximumPendingRecords)
        while excess < pending.count, bytes - sizes[..<excess].reduce(0, +) > configuration.maximumPendingBytes {
            excess += 1
        }
        if excess > 0 {
            let dropped = pending.records.prefix(excess)
            pending.removeFirst(excess)
            counters.add(overflowed: excess)
            let reason =
                "dropped \(Self.describe(dropped)): the session holds at most "
                + "\(configuration.maximumPendingRecords) pending records, \(configuration.maximumPendingBytes) bytes"
            problems.append(reason)
            warn(session, key: "\(Self.tagName(call))|pending_overflow", "dropped pending braze records", reason)
        }
        session.setExtensionValue(pending.isEmpty ? nil : pending, for: PendingKey.self)
        let held = records.count == 1 ? "1 record" : "\(records.count) records"
        let reason =
            "\(Self.tagName(call)): held '\(action.rawValue)' (\(held)) until the session has a Braze user: "
            + "\(pending.count) pending, kept for \(Self.hours(configuration.maximumPendingAge)); a changeUser tag "
            + "or BrazeTagProvider.setUser(_:on:) releases them"
        return TagOutput(problems: problems, pendingReason: reason, pendingRecords: records.map { $0 as any TagRecord })
    }

    /// Drops the records of `pending` older than ``Configuration/maximumPendingAge`` at `now`; returns the
    /// problem saying so (none when nothing expired).
    /// The age is measured from when each record was held, not from its time (when its event happened, which a
    /// client may say was long before).
    private func expire(_ pending: inout PendingRecords, now: Date, session: DataLayer, tag: String?) -> [String] {
        let limit = configuration.maximumPendingAge
        let seconds = Double(limit.components.seconds) + Double(limit.components.attoseconds) * 1e-18
        let oldestKept = now.addingTimeInterval(-seconds)
        guard let first = pending.heldAt.first, first < oldestKept else { return [] }
        let count = pending.heldAt.prefix { $0 < oldestKept }.count
        let expired = pending.records.prefix(count)
        pending.removeFirst(count)
        counters.add(expired: expired.count)
        let reason =
            "dropped \(Self.describe(expired)): pending longer than \(Self.hours(limit)) without a Braze user"
        warn(session, key: "\(tag ?? "braze")|pending_expired", "dropped pending braze records", reason)
        return [reason]
    }

    // MARK: Releasing

    /// At the end of each push of a session (a ``PushHook``): releases the records the session holds once it
    /// has a user — for that user, in their order, with their times and IDs, through the ``sink`` as records of
    /// this push (a ``CommitSink`` commits them with it) — and drops those that waited too long.
    ///
    /// With ``WithoutUser/alias(label:)``, a session whose records went to its user alias and whose user is
    /// now an `external_id` gets an `identify` record (``AnalyticsRecord/Payload/identify(externalID:aliasName:aliasLabel:)``),
    /// the last record of the push, committed with it; the alias is then forgotten (a later `changeUser`
    /// identifies nothing again).
    ///
    /// Costs one read of the session's pending records when it holds none (and with aliases, one read of its
    /// alias).
    public func endOfPush(_ dataLayer: DataLayer) -> TagOutput? {
        let identify = identifyRecord(dataLayer)
        guard var held = dataLayer.extensionValue(PendingKey.self), !held.isEmpty else {
            return identify.flatMap { emitIdentify($0, dataLayer) }
        }
        let problems = expire(&held, now: clock(), session: dataLayer, tag: nil)
        guard let user = namedBySessionID(Self.user(of: dataLayer), dataLayer) else {
            if !problems.isEmpty { dataLayer.setExtensionValue(held.isEmpty ? nil : held, for: PendingKey.self) }
            return problems.isEmpty ? nil : TagOutput(problems: problems)
        }
        var pending = held.records
        guard !pending.isEmpty else {
            dataLayer.setExtensionValue(nil, for: PendingKey.self)
            let identified = identify.flatMap { emitIdentify($0, dataLayer) }
            return TagOutput(
                records: identified?.records ?? [],
                problems: problems + (identified?.problems ?? []),
                durability: identified?.durability,
                recordsJSON: identified?.recordsJSON
            )
        }
        for index in pending.indices { pending[index].user = user }
        let released = pending.count
        if let identify { pending.append(identify) }
        // The sink may refuse them (a full or stopped queue): they stay pending for the next push.
        let sent = enqueue(pending, dataLayer, key: "braze|pending_refused", "could not release pending braze records")
        {
            "kept \(Self.describe(pending[...])) pending: the sink refused them (\($0))"
        }
        guard sent.enqueued else { return TagOutput(problems: problems + sent.output.problems) }
        dataLayer.setExtensionValue(nil, for: PendingKey.self)
        if identify != nil { dataLayer.setExtensionValue(nil, for: AliasKey.self) }
        counters.add(released: released)
        return TagOutput(
            records: sent.output.records,
            problems: problems,
            durability: sent.output.durability,
            recordsJSON: sent.output.recordsJSON
        )
    }

    /// Hands `records` to the ``sink`` as records of the push: a `TagOutput` with them, their JSON and the
    /// sink's durability token — or, when the sink refused them, with the problem `refused` words, warned about
    /// (rate-limited, under `key`) — and whether they were taken.
    private func enqueue(
        _ records: [AnalyticsRecord],
        _ dataLayer: DataLayer,
        key: String,
        _ message: String,
        refused: (any Error) -> String
    ) -> (output: TagOutput, enqueued: Bool) {
        let encoded = EncodedRecords(records)
        do {
            let token = try sink.enqueue(encoded)
            let output = TagOutput(
                records: records.map { $0 as any TagRecord },
                durability: token,
                recordsJSON: encoded.recordsJSON
            )
            return (output, true)
        } catch {
            let reason = refused(error)
            warn(dataLayer, key: key, message, reason)
            return (TagOutput(problems: [reason]), false)
        }
    }

    // MARK: Identifying

    /// The alias whose records `dataLayer`'s session sent for it (``WithoutUser/alias(label:)``) and that
    /// Braze has not been told to identify yet: `nil` when there is none, or once the session's user is an
    /// `external_id` and the push that made it so has identified it.
    public static func aliasToIdentify(of dataLayer: DataLayer) -> UserIdentity? {
        dataLayer.extensionValue(AliasKey.self)
    }

    /// The `identify` record of `dataLayer`'s session when it has an alias to identify and its user is now
    /// an `external_id`; `nil` otherwise (and without a read unless the provider gives sessions aliases).
    private func identifyRecord(_ dataLayer: DataLayer) -> AnalyticsRecord? {
        guard case .alias = configuration.withoutUser,
            case .userAlias(let name, let label)? = dataLayer.extensionValue(AliasKey.self),
            case .externalID(let externalID)? = namedBySessionID(
                Self.user(of: dataLayer),
                dataLayer,
                aliasToIdentify: true
            )
        else { return nil }
        return AnalyticsRecord(
            id: ids.next(),
            time: clock(),
            user: nil,
            payload: .identify(externalID: externalID, aliasName: name, aliasLabel: label)
        )
    }

    /// Sends `identify` through the ``sink`` as the push's last record and forgets the session's alias; when
    /// the sink refuses it, the alias stays, and the next push of the session tries again.
    private func emitIdentify(_ identify: AnalyticsRecord, _ dataLayer: DataLayer) -> TagOutput {
        let sent = enqueue(
            [identify],
            dataLayer,
            key: "braze|identify_refused",
            "could not identify the braze user alias"
        ) {
            "kept the alias to identify for the session's next push: the sink refused it (\($0))"
        }
        if sent.enqueued { dataLayer.setExtensionValue(nil, for: AliasKey.self) }
        return sent.output
    }

    /// `user`, the session's user as read — or, with ``Configuration/sessionIDIsExternalID``, when it is none or an
    /// alias still to identify, `.externalID(sessionID)`, set on the session first. `aliasToIdentify`: whether the
    /// session has an alias to identify (`nil`: read only when `user` is an alias).
    func namedBySessionID(_ user: UserIdentity?, _ dataLayer: DataLayer, aliasToIdentify: Bool? = nil) -> UserIdentity?
    {
        guard configuration.sessionIDIsExternalID, !dataLayer.sessionID.isEmpty else { return user }
        switch user {
        case nil:
            break
        case .userAlias?:
            guard aliasToIdentify ?? (Self.aliasToIdentify(of: dataLayer) != nil) else { return user }
        default:
            return user
        }
        let named = UserIdentity.externalID(dataLayer.sessionID)
        Self.setUser(named, on: dataLayer)
        return named
    }

    // MARK: Helpers

    private func warn(_ session: DataLayer, key: String, _ message: String, _ reason: String) {
        warnings.log(
            .warning,
            key: key,
            message,
            metadata: ["session": session.sessionID, "reason": reason],
            to: session.tagManager.logger
        )
    }

    /// `1 pending record ('custom_event' 'k-1' of 2024-05-01T12:00:00.000Z)` or `3 pending records (the
    /// oldest 'k-1' of …)`, for messages.
    private static func describe(_ records: ArraySlice<AnalyticsRecord>) -> String {
        guard let first = records.first else { return "no pending records" }
        let time = ISO8601Timestamp.string(from: first.time)
        if records.count == 1 { return "1 pending record ('\(first.kind.rawValue)' '\(first.id)' of \(time))" }
        return "\(records.count) pending records (the oldest '\(first.kind.rawValue)' '\(first.id)' of \(time))"
    }

    /// `24 h`, `90 min` or `30 s`.
    private static func hours(_ duration: Duration) -> String {
        let seconds = duration.components.seconds
        if seconds >= 3600 && seconds % 3600 == 0 { return "\(seconds / 3600) h" }
        if seconds >= 60 && seconds % 60 == 0 { return "\(seconds / 60) min" }
        return "\(seconds) s"
    }
}

/// A session's pending records, in the order they were held (``BrazeTagProvider/pendingAttributeKey``).
struct PendingRecords: Sendable {
    private(set) var records: [AnalyticsRecord] = []
    /// When each of ``records`` was held: what ``BrazeTagProvider/Configuration/maximumPendingAge`` is measured
    /// from. A record's own time is when its event happened, which its client may have said was long before.
    private(set) var heldAt: [Date] = []

    var count: Int { records.count }
    var isEmpty: Bool { records.isEmpty }

    /// Appends `more`, held at `time` (kept to the millisecond, as a record's time is).
    mutating func append(_ more: [AnalyticsRecord], heldAt time: Date) {
        records += more
        heldAt += repeatElement(ISO8601Timestamp.truncatedToMilliseconds(time), count: more.count)
    }

    mutating func removeFirst(_ count: Int) {
        records.removeFirst(count)
        heldAt.removeFirst(count)
    }

    /// The bytes of JSON each record takes in the session's attribute (``PendingKey``).
    var savedSizes: [Int] {
        zip(records, heldAt).map { record, heldAt in
            record.jsonLine.utf8.count + (heldAt == record.time ? 0 : PendingKey.heldAtMemberBytes)
        }
    }
}

/// The session's pending records, kept typed (decoded from their attribute once, after a restore).
enum PendingKey: SessionExtensionKey {
    /// The member of a pending record's object that says when it was held, when that is not its own time.
    static let heldAtMember = "held_at"
    /// The bytes the member adds to a record's object: `,"held_at":"2024-05-01T12:00:00.000Z"`.
    static let heldAtMemberBytes =
        #",""#.utf8.count + heldAtMember.utf8.count + #"":"""#.utf8.count
        + ISO8601Timestamp.string(from: Date(timeIntervalSince1970: 0)).utf8.count + 1

    static var attributeKey: String { BrazeTagProvider.pendingAttributeKey }
    static func attribute(for stored: PendingRecords) -> Value {
        .array(
            zip(stored.records, stored.heldAt).map { record, heldAt in
                guard heldAt != record.time, case .object(var members) = record.jsonValue else {
                    return record.jsonValue
                }
                members[heldAtMember] = .string(ISO8601Timestamp.string(from: heldAt))
                return .object(members)
            }
        )
    }
    static func stored(fromAttribute attribute: Value) -> PendingRecords? {
        guard case .array(let items) = attribute else { return nil }
        var pending = PendingRecords()
        for item in items {
            // A record that does not read back (edited by hand) is left out rather than failing the others.
            guard let record = try? AnalyticsRecord(jsonValue: item) else { continue }
            // Held when it was made, unless it says otherwise (an earlier version's records never do).
            var heldAt = record.time
            if case .object(let members) = item, case .string(let text)? = members[heldAtMember],
                let time = ISO8601Timestamp.date(from: text)
            {
                heldAt = time
            }
            pending.append([record], heldAt: heldAt)
        }
        return pending
    }
}

/// The user alias a session's records went to and that is not identified yet
/// (``BrazeTagProvider/aliasToIdentify(of:)``), saved as the `braze.alias` attribute.
enum AliasKey: SessionExtensionKey {
    static var attributeKey: String { "braze.alias" }
    static func attribute(for alias: UserIdentity) -> Value { alias.jsonValue }
    static func stored(fromAttribute attribute: Value) -> UserIdentity? {
        guard case .object(let members) = attribute else { return nil }
        return UserIdentity(members: members)
    }
}

/// The counts behind ``BrazeTagProvider/pendingStatistics``, shared by the provider's copies.
final class PendingCounters: Sendable {
    private let held = Atomic<Int>(0)
    private let released = Atomic<Int>(0)
    private let expired = Atomic<Int>(0)
    private let overflowed = Atomic<Int>(0)

    func add(held count: Int) { held.add(count, ordering: .relaxed) }
    func add(released count: Int) { released.add(count, ordering: .relaxed) }
    func add(expired count: Int) { expired.add(count, ordering: .relaxed) }
    func add(overflowed count: Int) { overflowed.add(count, ordering: .relaxed) }

    var statistics: BrazeTagProvider.PendingStatistics {
        BrazeTagProvider.PendingStatistics(
            held: held.load(ordering: .relaxed),
            released: released.load(ordering: .relaxed),
            expired: expired.load(ordering: .relaxed),
            overflowed: overflowed.load(ordering: .relaxed)
        )
    }
}
