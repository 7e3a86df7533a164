// SessionStore: sessions leaving the store (idle, removed, invalidated) and run(): the sweep that evicts
// them as they expire and saves periodically, until the graceful shutdown.

extension SessionStore {
    /// Removes the session of `userID` (the eviction hook sees reason `removed`); returns it.
    @discardableResult
    public func remove(_ userID: String) -> DataLayer? {
        remove(userID, reason: .removed)
    }

    /// Drops the session of `userID` because the persistence holds a newer version of it (another instance
    /// wrote it: the eviction hook sees reason `superseded`), or because a write of it may or may not have
    /// been kept. Nothing is saved or removed for it; its user's next ``loadSession(for:context:)`` loads
    /// the stored one.
    @discardableResult
    public func invalidate(_ userID: String) -> DataLayer? {
        remove(userID, reason: .superseded)
    }

    /// Drops `session` if it is still the store's session of its user (see ``invalidate(_:)-(String)``): a push
    /// whose commit failed drops the copy it ran on, never a newer one another request loaded meanwhile.
    @discardableResult
    public func invalidate(_ session: DataLayer) -> Bool {
        remove(session.sessionID, reason: .superseded, only: session) != nil
    }

    private func remove(_ userID: String, reason: EvictionReason, only session: DataLayer? = nil) -> DataLayer? {
        let key = SessionKey(userID)
        let entry = shard(for: key).withLock { shard -> Entry? in
            guard let entry = shard.entries[key], session == nil || entry.session === session else { return nil }
            shard.remove(entry, reason)
            return entry
        }
        guard let entry else { return nil }
        report([(entry, reason)])
        return entry.session
    }

    /// Evicts every session idle for longer than the idle timeout; returns how many.
    @discardableResult
    public func evictIdle() -> Int {
        let time = now()
        let timeout = SessionStore.nanoseconds(configuration.idleTimeout)
        var evicted: [(Entry, EvictionReason)] = []
        for shard in shards {
            let idle = shard.withLock { shard -> [Entry] in
                var idle: [Entry] = []
                while let oldest = shard.oldest, time - oldest.lastUsed > timeout {
                    shard.remove(oldest, .idle)
                    idle.append(oldest)
                }
                return idle
            }
            evicted.append(contentsOf: idle.map { ($0, .idle) })
        }
        report(evicted)
        return evicted.count
    }

    /// How long until the least recently used session expires (at most the sweep interval and the idle
    /// timeout).
    private func untilNextExpiry() -> Duration {
        let time = now()
        let timeout = SessionStore.nanoseconds(configuration.idleTimeout)
        var next = min(configuration.sweepInterval, configuration.idleTimeout)
        for shard in shards {
            guard let lastUsed = shard.withLock({ $0.oldest?.lastUsed }) else { continue }
            let left = Duration.nanoseconds(max(0, lastUsed &+ timeout &- time) &+ 1)
            next = min(next, left)
        }
        return max(next, .milliseconds(1))
    }

    /// Until ``gracefulShutdown()`` or the task's cancellation: evicts each idle session when it expires
    /// (checking at least every ``Configuration/sweepInterval``) and, with a persistence, runs the
    /// persistence's own work and saves the changed sessions every ``Configuration/saveInterval``.
    ///
    /// After ``gracefulShutdown()`` it saves what changed since the last save (with a persistence), then
    /// returns. Cancelled, it stops at once and saves nothing more (what each push committed with a
    /// ``Configuration/committer`` is durable already); the sessions stay in the store for
    /// ``saveChanges()`` or ``save(to:)``.
    public func run() async throws {
        let persistence = configuration.persistence
        await withTaskGroup(of: Void.self) { group in
            if let persistence { group.addTask { try? await persistence.run() } }
            // The sweep and the periodic saves, until the shutdown (or the cancellation: the wait ends then too).
            await withTaskGroup(of: Void.self) { loop in
                loop.addTask { await self.sweep(saving: persistence != nil) }
                await shutdown.wait()
                loop.cancelAll()
            }
            if persistence != nil, !Task.isCancelled { await saveLogged() }
            group.cancelAll()
        }
    }

    /// Stops ``run()`` gracefully: it saves what changed since the last save (with a persistence) and
    /// returns. Safe to call at any time (a ``run()`` that starts later returns after that save) and more
    /// than once.
    public func gracefulShutdown() { shutdown.open() }

    /// Evicts idle sessions as they expire and, when `saving`, saves every ``Configuration/saveInterval``,
    /// until the task is cancelled.
    private func sweep(saving: Bool) async {
        var sinceSave: Duration = .zero
        while !Task.isCancelled {
            let wait = max(
                saving ? min(untilNextExpiry(), configuration.saveInterval - sinceSave) : untilNextExpiry(),
                .milliseconds(1)
            )
            do {
                try await sleep(wait)
            } catch {
                return
            }
            sinceSave += wait
            evictIdle()
            if saving, sinceSave >= configuration.saveInterval {
                sinceSave = .zero
                await saveLogged()
            }
        }
    }
}
