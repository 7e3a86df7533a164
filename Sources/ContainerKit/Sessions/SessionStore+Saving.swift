// SessionStore: saving changed and ended sessions into the persistence, logging its failures, and the
// persistence's health.

import Synchronization

extension SessionStore {
    /// Reports that `session` changed outside a handing-out (a push that finished after the store last
    /// saved it, an attribute set by the host): the next save of ``run()`` keeps it. A host calls it after
    /// each push; without a persistence it does nothing.
    public func didChange(_ session: DataLayer) {
        guard configuration.persistence != nil else { return }
        let key = SessionKey(session.sessionID)
        shard(for: key).withLock { shard in
            if let entry = shard.entries[key], entry.session === session { shard.markDirty(entry) }
        }
    }

    /// ``saveChanges()``, logging a failure on the tag manager's logger: the first of a run of failures,
    /// then at most one a minute, and the recovery.
    func saveLogged() async {
        do {
            try await saveChanges()
            let recovered = saving.withLock { state in
                defer { state.failing = false }
                return state.failing
            }
            if recovered { tagManager.logger.info("sessions are saved again") }
        } catch {
            let time = now()
            let logs = saving.withLock { state -> Bool in
                state.failing = true
                if let last = state.lastFailureLog, time &- last < 60_000_000_000 { return false }
                state.lastFailureLog = time
                return true
            }
            if logs {
                tagManager.logger.error(
                    "cannot save sessions; their changes are kept and saved again",
                    metadata: ["code": error.code.rawValue, "error": error.message]
                )
            }
        }
    }

    /// Saves into the ``Configuration/persistence`` every session that changed since its last save (with
    /// the next version), the last changes of sessions evicted for capacity, and the removal of sessions
    /// that ended. ``run()`` calls it every ``Configuration/saveInterval``; a call while another is running
    /// returns 0 at once.
    ///
    /// A session the persistence holds a newer version of (another instance owns the user now) is dropped
    /// from the store (reason ``EvictionReason/superseded``); the user's next request loads the newer one.
    /// - Returns: how many changes were saved.
    /// - Throws: what the persistence threw; every change is kept for the next call.
    @discardableResult
    public func saveChanges() async throws(ContainerError) -> Int {
        guard let persistence = configuration.persistence else { return 0 }
        let first = saving.withLock { state -> Bool in
            defer { state.running = true }
            return !state.running
        }
        guard first else { return 0 }
        defer { saving.withLock { $0.running = false } }

        // 1. Take the changes, shard by shard.
        var live: [(ShardLock, Entry, Int64)] = []
        var departed: [(ShardLock, SessionKey, Departed)] = []
        for lock in shards {
            lock.withLock { shard in
                for entry in shard.dirty where entry.dirty {
                    entry.dirty = false
                    // Counted as used now: a ``checkpoint(_:)`` meanwhile writes a higher one.
                    entry.version += 1
                    live.append((lock, entry, entry.version))
                }
                shard.dirty.removeAll(keepingCapacity: true)
                for (key, gone) in shard.departed { departed.append((lock, key, gone)) }
                shard.departed.removeAll(keepingCapacity: true)
            }
        }
        if live.isEmpty && departed.isEmpty { return 0 }

        // 2. Snapshot outside the locks (each takes its session's own lock) and save.
        var changes: [SessionChange] = []
        changes.reserveCapacity(live.count + departed.count)
        for (_, key, gone) in departed {
            if gone.reason == .capacity {
                let snapshot = gone.entry.session.snapshot()
                changes.append(.save(StoredSession(snapshot: snapshot, version: gone.entry.version + 1)))
            } else if gone.entry.version > 0 {
                changes.append(.remove(userID: key.userID, version: gone.entry.version))
            }
        }
        for (_, entry, version) in live {
            changes.append(.save(StoredSession(snapshot: entry.session.snapshot(), version: version)))
        }
        let result: SessionSaveResult
        do {
            result = try await persistence.save(changes)
        } catch {
            // 3a. Keep every change for the next save. The versions tried count as used (the save may have
            // been kept after all): the retry writes higher ones.
            for (lock, entry, version) in live {
                lock.withLock { shard in
                    shard.saveFailures += 1
                    if entry.version < version { entry.version = version }
                    if shard.entries[SessionKey(entry.userID)] === entry { shard.markDirty(entry) }
                }
            }
            for (lock, key, gone) in departed {
                lock.withLock { shard in
                    if gone.reason == .capacity { gone.entry.version += 1 }
                    if shard.departed[key] == nil && shard.entries[key] == nil { shard.departed[key] = gone }
                }
            }
            throw error
        }
        // 3b. Record the versions; drop the superseded sessions.
        let superseded = Set(result.superseded.map(SessionKey.init))
        var dropped: [(Entry, EvictionReason)] = []
        for (lock, entry, version) in live {
            let key = SessionKey(entry.userID)
            lock.withLock { shard in
                guard !superseded.contains(key) else {
                    if shard.entries[key] === entry {
                        shard.remove(entry, .superseded)
                        dropped.append((entry, .superseded))
                    }
                    return
                }
                shard.saved += 1
                if entry.version < version { entry.version = version }
            }
        }
        for (lock, _, gone) in departed where gone.reason == .capacity {
            lock.withLock { $0.saved += 1 }
        }
        report(dropped)
        let kept = changes.count - result.superseded.count
        if kept > 0 { configuration.onSave?(kept) }
        return kept
    }

    /// Whether the ``Configuration/persistence`` works as far as the store knows: `false` from a failed save
    /// until a save succeeds, and from a failed load until a load succeeds. A service answers "not ready"
    /// while it is `false` (a store that cannot save or load loses nothing, but cannot keep its promises).
    /// Always `true` without a persistence.
    public var persistenceIsHealthy: Bool {
        saving.withLock { !$0.failing && !$0.loadFailing }
    }
}
