/// One item a tag handler produced for a call — for the Braze provider, one analytics record.
///
/// Records stay typed (a caller may cast one to the handler's own type, such as Braze's
/// `AnalyticsRecord`); ``jsonValue`` is the shape `containerkit run --format json` prints.
public protocol TagRecord: Sendable {
    /// The record as JSON.
    var jsonValue: Value { get }
    /// Appends the compact JSON text of ``jsonValue`` to `bytes` (a record type that writes itself
    /// straight to bytes implements this; by default ``jsonValue`` is built and written).
    func appendJSON(to bytes: inout [UInt8])
    /// The record's stable ID, if it has one (Braze's `AnalyticsRecord` does): what a session remembers of the
    /// records of a push that carried an event ID (``SeenEventID``). `nil` by default.
    var recordID: String? { get }
}

extension TagRecord {
    /// Writes ``jsonValue`` with ``JSONWriter``.
    public func appendJSON(to bytes: inout [UInt8]) { JSONWriter.write(jsonValue, into: &bytes) }
}

/// What a function-call tag handler produced for one call: its records, the problems it found, whether it
/// deliberately dropped the call or held it for later, and how to wait until its records are durable.
///
/// Handlers return it from ``FunctionCallTagHandler/perform(_:)``; the runtime attaches it to the
/// ``FiredTag`` of the call, so every caller of ``DataLayer/push(_:)`` sees what *its* push produced.
public struct TagOutput: Sendable {
    /// The fields, behind one reference: a ``FiredTag`` carries an output in one word, and copying one (as
    /// every push result does) is one retain. `nil` is the empty output.
    private final class Fields: Sendable {
        let records: [any TagRecord]
        let problems: [String]
        let dropReason: String?
        let pendingReason: String?
        let pendingRecords: [any TagRecord]
        let durability: DurabilityToken?
        let recordsJSON: RecordsJSON?

        init(
            records: [any TagRecord],
            problems: [String],
            dropReason: String?,
            pendingReason: String?,
            pendingRecords: [any TagRecord],
            durability: DurabilityToken?,
            recordsJSON: RecordsJSON?
        ) {
            self.records = records
            self.problems = problems
            self.dropReason = dropReason
            self.pendingReason = pendingReason
            self.pendingRecords = pendingRecords
            self.durability = durability
            self.recordsJSON = recordsJSON
        }
    }

    private var fields: Fields?

    /// What the call produced, in order.
    public var records: [any TagRecord] {
        get { fields?.records ?? [] }
        set { self = replacing(records: newValue) }
    }
    /// Problems with the call that the handler reported (for Braze, rule violations), in words.
    public var problems: [String] {
        get { fields?.problems ?? [] }
        set { self = replacing(problems: newValue) }
    }
    /// Why the handler deliberately did nothing with the call (for Braze, a call that breaks a rule);
    /// `nil` when it ran. A dropped call's ``FiredTag/status`` is ``FiredTag/Status/dropped(_:)``.
    public var dropReason: String? {
        get { fields?.dropReason }
        set { self = replacing(dropReason: .some(newValue)) }
    }
    /// What the handler held back for later instead of sending now, and until when (for Braze, a call in a
    /// session without a user: its records wait in the session until the user is known); `nil` when nothing
    /// was held. A held call's ``FiredTag/status`` is ``FiredTag/Status/pending(_:)`` (``dropReason`` wins
    /// when both are set).
    public var pendingReason: String? {
        get { fields?.pendingReason }
        set { self = replacing(pendingReason: .some(newValue)) }
    }
    /// The records the call made and the handler holds for later (for Braze, until the session has a user):
    /// not sent with this push, unlike ``records``. Shown so that a caller sees what waits, with the IDs and
    /// times the records keep when they are sent.
    public var pendingRecords: [any TagRecord] {
        get { fields?.pendingRecords ?? [] }
        set { self = replacing(pendingRecords: newValue) }
    }
    /// Whether the output has no records and nothing to wait for (read in place: a push with an event ID packs
    /// such a tag into its ``SeenEventID`` without copying the output).
    var hasNoRecordsOrDurability: Bool {
        guard let fields else { return true }
        return fields.records.isEmpty && fields.durability == nil
    }
    /// Resolves once ``records`` are durable; `nil` when there is nothing to wait for.
    public var durability: DurabilityToken? {
        get { fields?.durability }
        set { self = replacing(durability: .some(newValue)) }
    }
    /// The JSON of ``records`` as the handler's sink encoded it (the bytes it stored), which answers reuse
    /// instead of encoding each record again; `nil` when the handler did not keep it. Dropped when
    /// ``records`` is replaced.
    public var recordsJSON: RecordsJSON? { fields?.recordsJSON }

    /// Creates an output.
    /// - Parameter recordsJSON: each record's JSON, already encoded (it must be what
    ///   ``TagRecord/appendJSON(to:)`` writes for the record at the same index); ignored unless it holds
    ///   as many records as `records`.
    public init(
        records: [any TagRecord] = [],
        problems: [String] = [],
        dropReason: String? = nil,
        pendingReason: String? = nil,
        pendingRecords: [any TagRecord] = [],
        durability: DurabilityToken? = nil,
        recordsJSON: RecordsJSON? = nil
    ) {
        if records.isEmpty && problems.isEmpty && dropReason == nil && pendingReason == nil
            && pendingRecords.isEmpty && durability == nil
        {
            fields = nil
        } else {
            fields = Fields(
                records: records,
                problems: problems,
                dropReason: dropReason,
                pendingReason: pendingReason,
                pendingRecords: pendingRecords,
                durability: durability,
                recordsJSON: recordsJSON?.count == records.count ? recordsJSON : nil
            )
        }
    }

    /// This output with some fields replaced (``recordsJSON`` is kept only while ``records`` is).
    private func replacing(
        records newRecords: [any TagRecord]? = nil,
        problems newProblems: [String]? = nil,
        dropReason newDropReason: String?? = nil,
        pendingReason newPendingReason: String?? = nil,
        pendingRecords newPendingRecords: [any TagRecord]? = nil,
        durability newDurability: DurabilityToken?? = nil
    ) -> TagOutput {
        TagOutput(
            records: newRecords ?? records,
            problems: newProblems ?? problems,
            dropReason: newDropReason ?? dropReason,
            pendingReason: newPendingReason ?? pendingReason,
            pendingRecords: newPendingRecords ?? pendingRecords,
            durability: newDurability ?? durability,
            recordsJSON: newRecords == nil ? recordsJSON : nil
        )
    }

    /// A call that produced nothing and reported nothing.
    public static var none: TagOutput { TagOutput() }

    /// Whether the output carries nothing at all.
    var isEmpty: Bool { fields == nil }
}

extension TagOutput: Equatable {
    /// Outputs are equal when their records and pending records have the same JSON, their problems, drop and
    /// pending reasons are the same and they wait on the same durable position.
    public static func == (lhs: TagOutput, rhs: TagOutput) -> Bool {
        lhs.problems == rhs.problems && lhs.dropReason == rhs.dropReason && lhs.pendingReason == rhs.pendingReason
            && lhs.durability == rhs.durability
            && lhs.pendingRecords.map(\.jsonValue) == rhs.pendingRecords.map(\.jsonValue)
            && lhs.records.count == rhs.records.count
            && zip(lhs.records, rhs.records).allSatisfy { $0.jsonValue == $1.jsonValue }
    }
}

extension TagOutput: Hashable {
    public func hash(into hasher: inout Hasher) {
        hasher.combine(records.count)
        hasher.combine(problems)
        hasher.combine(dropReason)
        hasher.combine(pendingReason)
    }
}

/// The JSON of a list of records, encoded once: one buffer and each record's range in it. A sink that
/// encodes records to store them (the durable queue's segment lines) hands the bytes back through
/// ``TagOutput/recordsJSON``, so a push's answer copies them instead of encoding every record again.
public struct RecordsJSON: Sendable {
    /// The buffer (it may hold more than the records' JSON, such as each line's checksum).
    public let bytes: [UInt8]
    /// Where each record's JSON is in ``bytes``, in order.
    public let ranges: [Range<Int>]

    /// Creates the JSON of `ranges.count` records, each `bytes[ranges[i]]`.
    public init(bytes: [UInt8], ranges: [Range<Int>]) {
        self.bytes = bytes
        self.ranges = ranges
    }

    /// How many records.
    public var count: Int { ranges.count }

    /// The JSON of record `index`.
    public subscript(index: Int) -> ArraySlice<UInt8> { bytes[ranges[index]] }
}

/// Something that makes records durable in order and can tell when a position is: a durable queue.
///
/// Positions (tickets) grow with every write. A write can fail on its own (a full disk) while earlier and
/// later writes succeed, so whether a ticket's records are durable is known per ticket: waiting for the
/// highest ticket of a push tells when all of its writes ended, not that all of them succeeded.
///
/// A source converts its own failure into a ``DurabilityError`` once, where the write failed; waiters get
/// that value. A source whose `run()` is not running answers at once with
/// ``DurabilityError/Code-swift.struct/notRunning`` instead of letting the waiter hang.
public protocol DurabilitySource: AnyObject, Sendable {
    /// Returns once everything up to and including `ticket` is durable; throws if the write holding it
    /// failed.
    func waitUntilDurable(ticket: UInt64) async throws(DurabilityError)

    /// Returns once everything up to and including the highest of `tickets` is written; throws the error
    /// of the first write that held one of `tickets` and failed. The default waits for each ticket,
    /// highest first (so that the later waits return at once).
    func waitUntilDurable(tickets: [UInt64]) async throws(DurabilityError)

    /// Whether this source only holds records back for the commit of the push that made them (a committer's
    /// sink): once that push is committed, the commit's token stands for them, and
    /// ``PushResult/waitUntilDurable()`` waits for the commit alone. `false` by default.
    var holdsRecordsForCommit: Bool { get }
}

extension DurabilitySource {
    public func waitUntilDurable(tickets: [UInt64]) async throws(DurabilityError) {
        for ticket in tickets.sorted(by: >) { try await waitUntilDurable(ticket: ticket) }
    }

    public var holdsRecordsForCommit: Bool { false }
}

/// A position in a ``DurabilitySource``: the records a handler handed over are durable once the source
/// has made `ticket` durable.
public struct DurabilityToken: Sendable, Hashable {
    /// The source that resolves the token.
    public let source: any DurabilitySource
    /// The position to wait for.
    public let ticket: UInt64

    /// Creates a token for `ticket` in `source`.
    public init(source: any DurabilitySource, ticket: UInt64) {
        self.source = source
        self.ticket = ticket
    }

    /// Waits until the token's records are durable.
    public func wait() async throws(DurabilityError) { try await source.waitUntilDurable(ticket: ticket) }

    public static func == (lhs: DurabilityToken, rhs: DurabilityToken) -> Bool {
        lhs.source === rhs.source && lhs.ticket == rhs.ticket
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(source))
        hasher.combine(ticket)
    }

    /// Waits until every one of `tokens` is durable: one ``DurabilitySource/waitUntilDurable(tickets:)``
    /// per source, with all of that source's tickets (each may have failed on its own).
    ///
    /// - Throws: the error of a write that held one of the tokens' records, if one failed.
    public static func waitUntilDurable(_ tokens: some Sequence<DurabilityToken>) async throws(DurabilityError) {
        var bySource: [(source: any DurabilitySource, tickets: [UInt64])] = []
        for token in tokens {
            if let i = bySource.firstIndex(where: { $0.source === token.source }) {
                if !bySource[i].tickets.contains(token.ticket) { bySource[i].tickets.append(token.ticket) }
            } else {
                bySource.append((token.source, [token.ticket]))
            }
        }
        for (source, tickets) in bySource {
            if tickets.count == 1 {
                try await source.waitUntilDurable(ticket: tickets[0])
            } else {
                try await source.waitUntilDurable(tickets: tickets)
            }
        }
    }
}
