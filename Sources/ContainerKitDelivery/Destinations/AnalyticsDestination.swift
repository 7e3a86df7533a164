public import ContainerKit

/// Where a ``DeliveryPipeline`` delivers records: Braze's `/users/track`
/// (``BrazeUsersTrackDestination``), a JSON-lines file or standard output (``JSONLinesDestination``), or
/// memory (`InMemoryAnalyticsSink`, in `ContainerKitTesting`).
///
/// A destination makes **one attempt** per ``deliver(_:)`` and says how it went, record by record, in a
/// ``DeliveryResult``: what it accepted, what it refused for good (and why), and what may succeed later.
/// It never retries or sleeps itself: the front owns the single retry and backoff policy
/// (``DeliveryRetryPolicy``).
///
/// ```swift
/// struct PrintingDestination: AnalyticsDestination {
///     func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
///         for record in records { print(record.jsonLine) }
///         return .accepted(records)
///     }
/// }
/// ```
public protocol AnalyticsDestination: Sendable {
    /// Makes one attempt to deliver `records`, in order, and reports the outcome of each.
    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult
    /// Like ``deliver(_:)``, with each record's JSON as the store keeps it (`json[i]` is the
    /// ``AnalyticsRecord/jsonLine`` of `records[i]`, byte for byte), so a destination that sends JSON can
    /// copy parts of it instead of encoding the records again. The pipeline passes it when its store has the
    /// bytes at hand (the records were encoded once, when they were enqueued). The default ignores `json`.
    func deliver(_ records: [AnalyticsRecord], json: RecordsJSON?) async -> DeliveryResult
    /// How many records one ``deliver(_:)`` call should carry (for Braze, one request's worth, so a
    /// failure repeats as little as possible). 500 unless the destination says otherwise.
    var preferredBatchSize: Int { get }
    /// Runs what the destination owns (for Braze, its HTTP client's I/O thread) until the calling task is
    /// cancelled. The front that delivers to it runs it beside its delivery loop and cancels it after the
    /// loop ended; a destination with nothing to run returns at once (the default).
    func run() async throws
}

extension AnalyticsDestination {
    /// Ignores `json`: ``deliver(_:)``.
    public func deliver(_ records: [AnalyticsRecord], json: RecordsJSON?) async -> DeliveryResult {
        await deliver(records)
    }

    /// 500 records.
    public var preferredBatchSize: Int { 500 }

    /// Nothing to run: returns at once.
    public func run() async throws {}
}

/// What one ``AnalyticsDestination/deliver(_:)`` attempt did with its records. Every record of the
/// batch is in exactly one of ``accepted``, ``rejected`` and ``retryable``.
public struct DeliveryResult: Sendable {
    /// Records refused for good, with the reason (for Braze, its `message` and `errors`).
    public struct Rejection: Sendable {
        /// The records refused.
        public var records: [AnalyticsRecord]
        /// Why.
        public var error: DeliveryError

        /// Creates a rejection.
        public init(records: [AnalyticsRecord], error: DeliveryError) {
            self.records = records
            self.error = error
        }
    }

    /// Records the destination took.
    public var accepted: [AnalyticsRecord]
    /// Records refused for good; retrying cannot help.
    public var rejected: [Rejection]
    /// Records to offer again later, in order.
    public var retryable: [AnalyticsRecord]
    /// Why ``retryable`` failed (its ``DeliveryError/retryAfter`` paces the next attempt); `nil` when
    /// nothing is retryable.
    public var retryError: DeliveryError?
    /// Problems the destination reported about accepted records (for Braze, a 2xx with `errors`).
    public var warnings: [String]

    /// Creates a result.
    public init(
        accepted: [AnalyticsRecord] = [],
        rejected: [Rejection] = [],
        retryable: [AnalyticsRecord] = [],
        retryError: DeliveryError? = nil,
        warnings: [String] = []
    ) {
        self.accepted = accepted
        self.rejected = rejected
        self.retryable = retryable
        self.retryError = retryError
        self.warnings = warnings
    }

    /// Every record accepted.
    public static func accepted(_ records: [AnalyticsRecord]) -> DeliveryResult { DeliveryResult(accepted: records) }

    /// Every record to be offered again, because of `error`.
    public static func retry(_ records: [AnalyticsRecord], _ error: DeliveryError) -> DeliveryResult {
        DeliveryResult(retryable: records, retryError: error)
    }

    /// Every record refused for good, because of `error`.
    public static func rejected(_ records: [AnalyticsRecord], _ error: DeliveryError) -> DeliveryResult {
        DeliveryResult(rejected: records.isEmpty ? [] : [Rejection(records: records, error: error)])
    }

    /// Adds `other`'s records and reasons to this result (for a destination that sends a batch in parts).
    public mutating func merge(_ other: DeliveryResult) {
        accepted += other.accepted
        rejected += other.rejected
        retryable += other.retryable
        retryError = retryError ?? other.retryError
        warnings += other.warnings
    }

    /// The number of records rejected.
    public var rejectedCount: Int { rejected.reduce(0) { $0 + $1.records.count } }
}
