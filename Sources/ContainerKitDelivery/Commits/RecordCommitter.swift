public import ContainerKit

/// The ``PushCommitter`` over a delivery front (a ``DeliveryPipeline`` over any ``RecordStore``: in
/// memory, durable, PostgreSQL): at the end of each push's turn it appends the records the push's tags kept back in a
/// ``CommitSink`` and, for a store that keeps sessions, the session's checkpoint — **one append per push**,
/// which the store's group commit makes durable with others.
///
/// ```swift
/// let pipeline = DeliveryPipeline(store: postgresStore, destination: braze)   // or DeliveryPipeline.durable(…)
/// let sessions = SessionStore(
///     tagManager: manager,
///     configuration: .init(committer: RecordCommitter(pipeline, keepsSessions: true))
/// )
/// BrazeTagProvider(sink: CommitSink()).register(on: manager)
/// try await sessions.push(event: "played song", for: "user-42")   // records + session, durable together
/// ```
///
/// Records that a push's tags wrote to another sink directly are not touched (their own tokens are waited
/// for as before).
public struct RecordCommitter: PushCommitter {
    /// Where the appends go.
    public let front: any AnalyticsSink
    public let keepsSessions: Bool

    /// A committer appending to `front`.
    /// - Parameter keepsSessions: whether `front`'s store commits ``EncodedRecords/sessions`` with the
    ///   records (PostgreSQL): then each append carries the session's checkpoint. A segment log or memory
    ///   store keeps records only (`false`): the session store's persistence saves the sessions.
    public init(_ front: any AnalyticsSink, keepsSessions: Bool = false) {
        self.front = front
        self.keepsSessions = keepsSessions
    }

    public func commit(
        _ result: PushResult,
        checkpoint: SessionCheckpoint?
    ) -> Result<DurabilityToken?, DurabilityError> {
        var pending: [PendingAppend] = []
        for output in result.outputs.dropFirst(result.committedOutputs) {
            if let held = output.durability?.source as? PendingAppend { pending.append(held) }
        }
        if keepsSessions && checkpoint == nil {
            // The store dropped the session meanwhile (another instance stored a newer version): nothing of
            // this push may be committed; the caller pushes again on the newest session.
            let error = DurabilityError(.superseded, "the session was replaced while the push ran")
            for held in pending { held.resolve(.failure(error)) }
            return .failure(error)
        }
        if pending.isEmpty && !keepsSessions { return .success(nil) }
        var encoded = pending.count == 1 ? pending[0].encoded : EncodedRecords([])
        if pending.count > 1 {
            for held in pending { encoded.append(held.encoded) }
        }
        if keepsSessions, let checkpoint { encoded.sessions = [checkpoint] }
        let outcome: Result<DurabilityToken?, DurabilityError>
        do {
            let token = try front.enqueue(encoded)
            outcome = .success(token)
            for held in pending { held.resolve(.success(token)) }
        } catch {
            let failure = DurabilityError(error)
            for held in pending { held.resolve(.failure(failure)) }
            outcome = .failure(failure)
        }
        return outcome
    }
}
