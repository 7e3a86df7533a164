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
}

extension TagRecord {
    /// Writes ``jsonValue`` with ``JSONWriter``.
    public func appendJSON(to bytes: inout [UInt8]) { JSONWriter.write(jsonValue, into: &bytes) }
}

/// What a function-call tag handler produced for one call: its records, the problems it found, whether it
/// deliberately dropped the call, and how to wait until its records are durable.
///
/// Handlers return it from ``FunctionCallTagHandler/perform(_:)``; the runtime attaches it to the
/// ``FiredTag`` of the call, so every caller of ``DataLayer/push(_:)`` sees what *its* push produced.
public struct TagOutput: Sendable {
    /// What the call produced, in order.
    public var records: [any TagRecord]
    /// Problems with the call that the handler reported (for Braze, rule violations), in words.
    public var problems: [String]
    /// Why the handler deliberately did nothing with the call (for Braze, a call that breaks a rule);
    /// `nil` when it ran. A dropped call's ``FiredTag/status`` is ``FiredTag/Status/dropped(_:)``.
    public var dropReason: String?
    /// Resolves once ``records`` are durable; `nil` when there is nothing to wait for.
    public var durability: DurabilityToken?

    /// Creates an output.
    public init(
        records: [any TagRecord] = [],
        problems: [String] = [],
        dropReason: String? = nil,
        durability: DurabilityToken? = nil
    ) {
        self.records = records
        self.problems = problems
        self.dropReason = dropReason
        self.durability = durability
    }

    /// A call that produced nothing and reported nothing.
    public static let none = TagOutput()

    /// Whether the output carries nothing at all.
    var isEmpty: Bool { records.isEmpty && problems.isEmpty && dropReason == nil && durability == nil }
}

extension TagOutput: Equatable {
    /// Outputs are equal when their records have the same JSON, their problems and drop reasons are the
    /// same and they wait on the same durable position.
    public static func == (lhs: TagOutput, rhs: TagOutput) -> Bool {
        lhs.problems == rhs.problems && lhs.dropReason == rhs.dropReason && lhs.durability == rhs.durability
            && lhs.records.count == rhs.records.count
            && zip(lhs.records, rhs.records).allSatisfy { $0.jsonValue == $1.jsonValue }
    }
}

extension TagOutput: Hashable {
    public func hash(into hasher: inout Hasher) {
        hasher.combine(records.count)
        hasher.combine(problems)
        hasher.combine(dropReason)
    }
}

/// Something that makes records durable in order and can tell when a position is: a durable queue.
///
/// Positions (tickets) grow with every write, so waiting for the highest ticket a push produced covers all
/// of its records in that source.
public protocol DurabilitySource: AnyObject, Sendable {
    /// Returns once everything up to and including `ticket` is durable; throws if the write holding it
    /// failed.
    func waitUntilDurable(ticket: UInt64) async throws
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
    public func wait() async throws { try await source.waitUntilDurable(ticket: ticket) }

    public static func == (lhs: DurabilityToken, rhs: DurabilityToken) -> Bool {
        lhs.source === rhs.source && lhs.ticket == rhs.ticket
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(source))
        hasher.combine(ticket)
    }

    /// The tokens to wait for so that every one of `tokens` is durable: the highest ticket per source.
    public static func covering(_ tokens: some Sequence<DurabilityToken>) -> [DurabilityToken] {
        var highest: [DurabilityToken] = []
        for token in tokens {
            if let i = highest.firstIndex(where: { $0.source === token.source }) {
                if highest[i].ticket < token.ticket { highest[i] = token }
            } else {
                highest.append(token)
            }
        }
        return highest
    }
}
