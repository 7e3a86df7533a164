// SessionStore: what a push commits of its session — the checkpoint a host writes with its records, or
// the next delta or snapshot the committer appends.

extension SessionStore {
    /// The hook a session of this store commits its pushes with (none without a committer).
    var committing: (@Sendable (DataLayer, inout PushResult) -> Void)? {
        guard configuration.committer != nil else { return nil }
        return { [weak self] session, result in self?.commit(session, &result) }
    }

    /// Commits what `result` produced since its last commit, with the session's checkpoint when the committer
    /// keeps sessions (else the session is marked changed, for the persistence's next save).
    private func commit(_ session: DataLayer, _ result: inout PushResult) {
        guard let committer = configuration.committer else { return }
        let checkpoint: SessionCheckpoint?
        if committer.keepsSessions {
            checkpoint = self.nextCheckpoint(session)
        } else {
            checkpoint = nil
            didChange(session)
        }
        switch committer.commit(result, checkpoint: checkpoint) {
        case .success(let token?): result.commits.append(token)
        case .success(nil): break
        case .failure(let error): if result.commitFailure == nil { result.commitFailure = error }
        }
        result.committedOutputs = result.outputs.count
    }

    /// Takes the change of `session` out of the store's own saves, for the host to write it elsewhere —
    /// with the records its push produced, in one transaction (``EncodedRecords/sessions``): returns its
    /// snapshot with the next version, and counts that version as used. The store's next saves skip it
    /// until it changes again.
    ///
    /// When that write fails, call ``invalidate(_:)`` (the write may have been kept after all: the next
    /// request loads whatever is stored); when it is refused because a newer version is stored, too.
    /// - Returns: `nil` when `session` is not the store's live session of its user (it was dropped
    ///   meanwhile: push again on the one ``loadSession(for:context:)`` returns).
    public func checkpoint(_ session: DataLayer) -> StoredSession? {
        let key = SessionKey(session.sessionID)
        guard
            let next = shard(for: key).withLock({ shard -> (Int64, UInt64)? in
                guard let entry = shard.entries[key], entry.session === session else { return nil }
                entry.dirty = false
                entry.version += 1
                entry.deltas = 0
                entry.headID = SessionCheckpoint.makeID()
                return (entry.version, entry.headID)
            })
        else { return nil }
        // The snapshot is taken outside the shard's lock (it takes the session's own); the changes it holds are
        // not committed again as a delta.
        _ = session.takeDelta()
        return StoredSession(snapshot: session.snapshot(), version: next.0, checkpointID: next.1)
    }

    /// The checkpoint of `session`'s next commit: a delta of what changed since its last one, or the whole
    /// snapshot when ``Configuration/snapshotInterval`` deltas follow the last snapshot, or when the stored chain
    /// could not be read whole. A new session's first commit is a delta from the empty state when that rebuilds
    /// it (``firstCommit(_:of:)``). Counts the version as used. `nil` when `session` is not the store's live
    /// session of its user.
    private func nextCheckpoint(_ session: DataLayer) -> SessionCheckpoint? {
        let key = SessionKey(session.sessionID)
        let interval = max(1, configuration.snapshotInterval)
        guard
            let (version, snapshots, parent, id) = shard(for: key).withLock({
                shard -> (Int64, Bool, UInt64, UInt64)? in
                guard let entry = shard.entries[key], entry.session === session else { return nil }
                entry.dirty = false
                entry.version += 1
                let snapshots = entry.deltas >= interval - 1
                entry.deltas = snapshots ? 0 : entry.deltas + 1
                // Each commit continues the one before it (or the loaded one): a store keeps it only on that very
                // change, so a copy whose earlier commit was refused cannot continue another owner's.
                let parent = entry.headID
                entry.headID = SessionCheckpoint.makeID()
                return (entry.version, snapshots, parent, entry.headID)
            })
        else { return nil }
        // Taken outside the shard's lock (it takes the session's own), inside the session's turn.
        let delta = session.takeDelta()
        let content: SessionCheckpoint.Content
        if !snapshots, let delta {
            content = .delta(delta)
        } else if version == 1, parent == 0, let delta {
            content = Self.firstCommit(delta, of: session)
        } else {
            content = .snapshot(session.snapshot())
        }
        return SessionCheckpoint(
            userID: session.sessionID,
            version: version,
            expected: version - 1,
            id: id,
            parent: parent,
            content: content
        )
    }

    /// The first commit of a session never stored (version 1, continuing nothing): a delta from the empty state
    /// (`SessionSnapshot(sessionID:)`, which ``SessionFold`` applies a first delta to) when it rebuilds the
    /// session's snapshot exactly — the push's changes, with the client context, user properties, attributes and
    /// consent the session began with — else the whole snapshot. A user's first event then stores what it changed
    /// rather than the whole state (in PostgreSQL, 1,500 bytes of WAL per first event → about 730 in the psql
    /// harness); the snapshot comes at the store's interval as it does for every session.
    static func firstCommit(_ delta: SessionDelta, of session: DataLayer) -> SessionCheckpoint.Content {
        let snapshot = session.snapshot()
        let empty = SessionSnapshot(sessionID: session.sessionID)
        var first = delta
        if first.userProperties == nil, snapshot.userProperties != empty.userProperties {
            first.userProperties = snapshot.userProperties
        }
        if first.attributes == nil, snapshot.attributes != empty.attributes { first.attributes = snapshot.attributes }
        if first.context == nil, snapshot.context != empty.context { first.context = snapshot.context }
        if first.consent == nil, snapshot.consent != empty.consent { first.consent = snapshot.consent }
        var rebuilt = empty
        first.apply(to: &rebuilt)
        return rebuilt == snapshot ? .delta(first) : .snapshot(snapshot)
    }
}
