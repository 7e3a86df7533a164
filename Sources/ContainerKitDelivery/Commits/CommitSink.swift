public import ContainerKit
import Synchronization

/// The sink of a tag provider whose records a ``RecordCommitter`` commits with the push that made them: it
/// keeps each call's records back (encoded once, in a ``PendingAppend``) instead of writing them, and the
/// committer appends every call's records of the push, with the session's change, in one append at the end
/// of the push's turn.
///
/// ```swift
/// BrazeTagProvider(sink: CommitSink()).register(on: manager)
/// let sessions = SessionStore(tagManager: manager, configuration: .init(committer: RecordCommitter(queue)))
/// ```
///
/// A push made on a session that no committer commits (a data layer made outside such a store) keeps its
/// records nowhere: its ``PushResult/waitUntilDurable()`` throws `not_running`.
public struct CommitSink: AnalyticsSink {
    /// Creates the sink.
    public init() {}

    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        try enqueue(EncodedRecords(records))
    }

    public func enqueue(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken? {
        DurabilityToken(source: PendingAppend(encoded), ticket: 0)
    }
}

/// One tag call's records waiting for their push's commit (a ``CommitSink``'s token): the ``RecordCommitter``
/// takes them into the push's append and then tells every waiter what became of that append.
public final class PendingAppend: DurabilitySource {
    /// The records, encoded once.
    public let encoded: EncodedRecords
    private let outcome = Mutex<Result<DurabilityToken?, DurabilityError>?>(nil)

    init(_ encoded: EncodedRecords) { self.encoded = encoded }

    /// Always: the records wait for their push's commit (whose token ``PushResult/waitUntilDurable()`` waits
    /// for instead, once the push is committed).
    public var holdsRecordsForCommit: Bool { true }

    /// Where the records went: the append's token (`nil`: a store with nothing to wait for), or why it failed.
    func resolve(_ result: Result<DurabilityToken?, DurabilityError>) { outcome.withLock { $0 = result } }

    public func waitUntilDurable(ticket: UInt64) async throws(DurabilityError) {
        switch outcome.withLock({ $0 }) {
        case .success(let token)?: try await token?.wait()
        case .failure(let error)?: throw error
        case nil:
            throw DurabilityError(
                .notRunning,
                "the records were kept for a commit that never came (no committer commits this session's pushes)"
            )
        }
    }
}
