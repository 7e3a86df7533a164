// SessionStore: loading a session it does not hold from its persistence, once per user however many
// requests wait for it.

import Synchronization

extension SessionStore {
    /// The session of `userID`: the live one, the one the ``Configuration/persistence`` holds (loaded now),
    /// or a new one with `context`. Marks it as used now (and as changed, to be saved); a given `context`
    /// replaces the session's context when it differs.
    ///
    /// A load happens once per user however many requests of that user wait for it; requests of other
    /// users do not wait for it. Without a persistence this is ``session(for:context:)`` with the user ID
    /// checked.
    /// - Throws: ``ContainerError``: `invalid_user_id` (see ``validate(userID:)``), or what the persistence
    ///   threw when the session could not be loaded (the request should be answered as unavailable and
    ///   retried; nothing was created).
    public func loadSession(for userID: String, context: ClientContext? = nil) async throws(ContainerError)
        -> DataLayer
    {
        try Self.validate(userID: userID)
        guard let persistence = configuration.persistence else { return session(for: userID, context: context) }
        let time = now()
        let key = SessionKey(userID)
        let lock = shard(for: key)
        enum Step {
            case found(DataLayer)
            case wait
            case load
        }
        var evicted: [(Entry, EvictionReason)] = []
        let step = lock.withLock { shard -> Step in
            if let session = liveSession(key, in: &shard, at: time, evicted: &evicted) { return .found(session) }
            if let departed = shard.departed[key] {
                if departed.reason == .capacity {
                    // Evicted before its last change was saved: it is the newest version; take it back.
                    shard.departed[key] = nil
                    departed.entry.lastUsed = time
                    insert(departed.entry, into: &shard, evicted: &evicted)
                    markHandedOut(departed.entry, in: &shard)
                    return .found(departed.entry.session)
                }
                // It ended (idle): a new session, whose versions continue above the ended one's.
                return .found(newSession(userID, key, context: context, in: &shard, at: time, evicted: &evicted))
            }
            if shard.loading[key] != nil { return .wait }
            shard.loading[key] = []
            return .load
        }
        report(evicted)
        let session: DataLayer
        switch step {
        case .found(let found):
            session = found
        case .wait:
            let result = await withCheckedContinuation { (continuation: LoadWaiter) in
                let done = lock.withLock { shard -> Result<DataLayer, ContainerError>? in
                    if shard.loading[key] != nil {
                        shard.loading[key]!.append(continuation)
                        return nil
                    }
                    return shard.entries[key].map { .success($0.session) }
                        ?? .failure(ContainerError(.io, "the session of '\(userID)' did not load"))
                }
                if let done { continuation.resume(returning: done) }
            }
            // The loader made the session before it took the lock to resume the waiters; taking it here too
            // orders this task after that for the thread sanitizer, which on Linux does not see the
            // continuation's own ordering (swiftlang/swift#57803). Only concurrent loads of one user wait here.
            lock.withLock { _ in }
            session = try result.get()
        case .load:
            let result: Result<DataLayer, ContainerError>
            do {
                let stored = try await persistence.load(userID: userID)
                // A user whose session ended (or expired) continues above its version.
                let floor = stored == nil ? try await persistence.endedVersion(userID: userID) : 0
                let made = stored.map {
                    tagManager.restoreDataLayer(
                        from: $0.snapshot,
                        debug: false,
                        committing: committing,
                        keepsChanges: keepsDeltas
                    )
                }
                evicted = []
                result = .success(
                    lock.withLock { shard -> DataLayer in
                        if let live = shard.entries[key] { return live.session }  // made meanwhile (synchronously)
                        let session =
                            made
                            ?? tagManager.makeDataLayer(
                                context: context,
                                sessionID: userID,
                                debug: false,
                                committing: committing,
                                keepsChanges: keepsDeltas
                            )
                        let entry = Entry(
                            userID: userID,
                            session: session,
                            now: now(),
                            version: stored?.version ?? floor,
                            deltas: stored?.deltas ?? .max,
                            headID: stored?.checkpointID ?? 0
                        )
                        insert(entry, into: &shard, evicted: &evicted)
                        markHandedOut(entry, in: &shard)
                        if stored == nil { shard.created += 1 } else { shard.loaded += 1 }
                        return session
                    }
                )
                report(evicted)
            } catch {
                result = .failure(error)
            }
            let failed: Bool
            if case .failure = result { failed = true } else { failed = false }
            saving.withLock { $0.loadFailing = failed }
            let waiters = lock.withLock { shard in shard.loading.removeValue(forKey: key) ?? [] }
            for waiter in waiters { waiter.resume(returning: result) }
            session = try result.get()
        }
        if let context, session.context != context { session.updateContext(context) }
        return session
    }
}
