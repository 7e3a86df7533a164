/// Commits a push as one unit: what its tags produced and the session's change, handed to a store in **one
/// append, inside the session's turn** — so an acknowledged event's records and the session state it
/// produced are durable together, and the user's next push starts after this one's append.
///
/// A ``SessionStore`` configured with one (``SessionStore/Configuration/committer``) calls it for every push
/// of its sessions once the push (and the pushes its handlers nested) is processed, before the session's
/// next caller goes on. ``PushResult/waitUntilDurable()`` then waits for what it returned. ContainerKit's
/// delivery library ships `RecordCommitter`, which appends the push's records (kept back by a
/// `CommitSink`) and the session's checkpoint to a delivery pipeline or durable queue; a host switches stores
/// by configuring another, nothing else.
///
/// ```swift
/// let pipeline = DeliveryPipeline(store: postgres, destination: braze)
/// let sessions = SessionStore(tagManager: manager, configuration: .init(committer: RecordCommitter(pipeline)))
/// BrazeTagProvider(sink: CommitSink()).register(on: manager)
/// let result = try await sessions.push(event: "played song", parameters: ["genre": "jazz"], for: "user-42")
/// ```
public protocol PushCommitter: Sendable {
    /// Whether the store keeps sessions with the records (PostgreSQL, the durable queue's segment log).
    /// Then every commit carries the session's checkpoint (a delta, now and then a snapshot) and the
    /// ``SessionStore`` saves nothing else for it but the removal of ended ones; otherwise (a store that keeps
    /// records only) the session is saved by the store's persistence.
    var keepsSessions: Bool { get }

    /// Commits what `result` produced since ``PushResult/committedOutputs`` with `checkpoint`, the session's
    /// change with its next version — a ``SessionDelta`` of what the push changed, or every
    /// ``SessionStore/Configuration/snapshotInterval`` commits the whole snapshot — or `nil` when the store no
    /// longer holds the session (it was dropped meanwhile, and nothing may be committed for it). Only a
    /// committer that keeps sessions gets checkpoints.
    /// - Returns: the position to wait for (`nil`: nothing to wait for), or the error the push's waiters get.
    func commit(_ result: PushResult, checkpoint: SessionCheckpoint?) -> Result<DurabilityToken?, DurabilityError>
}
