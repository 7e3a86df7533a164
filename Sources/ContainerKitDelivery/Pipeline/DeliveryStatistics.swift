/// Counters of a ``DeliveryPipeline`` and its ``RecordStore``, for monitoring and tests: the one
/// statistics type of every pipeline and every store. A counter a store
/// has no use for stays 0 (the memory store reads nothing from disk).
public struct DeliveryStatistics: Sendable, Hashable {
    /// Records the store took.
    public var enqueuedRecords = 0
    /// Records the store committed (durable for a durable store).
    public var durableRecords = 0
    /// Commits the store reported (for the segment log, group commits: one `write` and one `fsync` each).
    public var commits = 0
    /// Records the destination accepted.
    public var deliveredRecords = 0
    /// Records the destination rejected (dropped with its message).
    public var rejectedRecords = 0
    /// Records refused (the store full or shut down), lost to a failed commit, or given up on (out of
    /// attempts, or still held when an in-memory front stopped).
    public var droppedRecords = 0
    /// Deliveries that failed in a retryable way (and were retried, or given up on).
    public var failedDeliveries = 0
    /// Deliveries repeated after a failure.
    public var retries = 0
    /// Acknowledgements given to the store (one per settled batch, or run of settled batches).
    public var acknowledgements = 0
    /// Records the store skipped as provably bad (torn, unparsable, or corrupt lines).
    public var skippedRecords = 0
    /// Of ``skippedRecords``, those whose checksum did not match their bytes (flipped bits on disk).
    public var corruptRecords = 0
    /// Reads of the store that failed for the moment (`EMFILE`, `EIO`, …) and were retried after a
    /// backoff; nothing after them is acknowledged meanwhile.
    public var failedReads = 0
    /// Records read back from disk (a previous run's, or a backlog beyond the memory buffer).
    public var recordsReadFromDisk = 0
    /// Files the store holds (the segment log's segments).
    public var segmentCount = 0
    /// Bytes the store holds (segments and lines not committed yet).
    public var queueBytes = 0
    /// Session lines a load or a compaction could not apply (a changed byte, a gap), for a store that keeps
    /// sessions.
    public var unappliedSessionLines = 0
    /// Appends refused because the session change they carried was fenced (a newer version is stored).
    public var fencedAppends = 0
    /// Snapshots the store wrote itself to fold old sessions' chains (the segment log's compaction).
    public var sessionCompactions = 0

    /// All zero.
    public init() {}
}
