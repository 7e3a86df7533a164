import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The sessions of a service's users: finds or creates the ``DataLayer`` of a user ID, forgets sessions
/// idle for longer than ``Configuration/idleTimeout``, and keeps at most
/// about ``Configuration/maximumSessions`` (the least recently used go first; large stores are split in 16
/// shards, and a full store makes room in the shard of the session it adds: its least recently used goes).
///
/// ```swift
/// let sessions = SessionStore(tagManager: manager, configuration: .init(idleTimeout: .seconds(1800)))
/// // Per request:
/// let session = sessions.session(for: request.userID, context: request.context)
/// let result = await session.push(event: request.event, parameters: request.parameters)
/// ```
///
/// Sessions are kept in shards, each with its own lock, so requests for different users rarely meet.
/// ``run()`` evicts idle sessions as they expire until its task is cancelled; a service runs it beside its
/// server (it is shaped like a swift-service-lifecycle `Service`).
///
/// ## Keeping sessions: a persistence
/// With a ``Configuration/persistence`` (a durable `DeliveryPipeline`'s `sessions` on one machine, or a
/// shared store implementing ``SessionPersistence``), sessions survive a crash and follow their user between
/// instances:
/// - ``loadSession(for:context:)`` loads a session the store does not hold from the persistence (once,
///   however many requests of that user arrive meanwhile; other users do not wait for it);
/// - the sessions handed out or reported with ``didChange(_:)`` are saved by ``run()`` every
///   ``Configuration/saveInterval``, in the background, as snapshots with a version that fences a stale
///   owner (``SessionPersistence``); sessions that ended (idle) are removed from it;
/// - when ``run()`` is cancelled it saves what changed since the last save, then returns.
///
/// With a ``Configuration/committer`` that keeps sessions (`RecordCommitter(queue, keepsSessions: true)` over
/// `queue.sessions`, or PostgreSQL's), each push commits its session's change — a delta, every
/// ``Configuration/snapshotInterval`` commits the snapshot — in its own append, with its records: nothing
/// acknowledged is lost, and ``run()`` saves only the removals of ended ones.
///
/// Otherwise a crash (`kill -9`) loses at most the changes of the last save interval. Without a persistence,
/// ``save(to:)`` and ``restore(from:)`` carry every session across a clean restart as one file, and the
/// ``Configuration/onEvict`` hook can keep an evicted session's snapshot in a store of the host's.
///
/// A session evicted while a request still holds it finishes that request; the user's next request gets
/// a new session (restored by the host from its own store, if it keeps one).
///
/// ## User IDs are bytes
/// Sessions are keyed by the UTF-8 bytes of the user ID, never by `String` equality (which is Unicode
/// canonical equivalence): `"caf\u{E9}"` and `"cafe\u{301}"` are two users with two sessions, as they are two
/// Braze `external_id`s.
public final class SessionStore: Sendable {
    /// Why a session left the store.
    public enum EvictionReason: String, Sendable, Hashable {
        /// It was not used for longer than the idle timeout.
        case idle
        /// The store was full and it was the least recently used.
        case capacity
        /// ``SessionStore/remove(_:)`` removed it.
        case removed
        /// The persistence holds a newer version of it (another instance owns the user now): the next
        /// request loads that one.
        case superseded
    }

    /// How the store behaves.
    public struct Configuration: Sendable {
        /// A session unused for this long is evicted by the next sweep (and not returned any more).
        public var idleTimeout: Duration
        /// The most sessions kept; creating one more evicts the least recently used (in a store of 1,024 or
        /// more, split in shards: the least recently used of the new session's shard).
        public var maximumSessions: Int
        /// The longest time between two sweeps of ``SessionStore/run()``; it also wakes when the least
        /// recently used session expires, so an idle session is evicted on time, not at the next sweep.
        public var sweepInterval: Duration
        /// Called (outside the store's locks) for every session that leaves the store, with its user ID.
        public var onEvict: (@Sendable (_ userID: String, _ session: DataLayer, _ reason: EvictionReason) -> Void)?
        /// Where sessions are kept beyond memory; `nil`: only in memory.
        public var persistence: (any SessionPersistence)?
        /// How often ``SessionStore/run()`` saves the changed sessions into the ``persistence``: what a crash
        /// may lose at most.
        public var saveInterval: Duration
        /// Whether the host writes each session's change itself, with the records of its push
        /// (``SessionStore/checkpoint(_:)``, a transactional store such as PostgreSQL): then handing a
        /// session out does not mark it changed, and the store's own saves only remove sessions that ended
        /// and keep what ``SessionStore/didChange(_:)`` reports (`false`).
        public var checkpointsWithRecords = false
        /// How many times ``SessionStore/push(event:parameters:for:context:eventID:waitsForDurability:tracing:prepare:)`` pushes
        /// an event whose commit was refused because another instance stored a newer version of the session
        /// (each time on the newest state, after a short random pause that grows): the user's requests landing
        /// on two instances at once settle without an error to the client.
        public var maximumPushAttempts = 16
        /// Commits each push of the store's sessions as one unit, inside the session's turn: its records and,
        /// when the committer keeps sessions (``PushCommitter/keepsSessions``), the session's checkpoint, in one
        /// append (see ``SessionStore/push(event:parameters:for:context:eventID:waitsForDurability:tracing:prepare:)``).
        /// `nil`: the host commits (or a tag's sink writes records as they are made).
        public var committer: (any PushCommitter)?
        /// With a committer that keeps sessions: a session's commits are deltas (``SessionDelta``), and every
        /// this many commits (and a session's first) the whole snapshot instead, in the push's own append, so
        /// that a load applies at most this many deltas. (The segment log also folds the chains that keep old
        /// segments into snapshots of its own: its compaction.)
        public var snapshotInterval = 16
        /// Called after each save into the ``persistence`` that kept something, with how many changes it
        /// kept (for a log line or a metric).
        public var onSave: (@Sendable (_ saved: Int) -> Void)?

        /// Creates a configuration: 30 minutes idle, 100,000 sessions, a sweep at least every 30 seconds,
        /// no persistence (saves every second when there is one).
        public init(
            idleTimeout: Duration = .seconds(30 * 60),
            maximumSessions: Int = 100_000,
            sweepInterval: Duration = .seconds(30),
            onEvict: (@Sendable (_ userID: String, _ session: DataLayer, _ reason: EvictionReason) -> Void)? = nil,
            persistence: (any SessionPersistence)? = nil,
            saveInterval: Duration = .seconds(1),
            committer: (any PushCommitter)? = nil,
            onSave: (@Sendable (_ saved: Int) -> Void)? = nil
        ) {
            self.onSave = onSave
            self.committer = committer
            self.idleTimeout = idleTimeout
            self.maximumSessions = max(1, maximumSessions)
            self.sweepInterval = sweepInterval
            self.onEvict = onEvict
            self.persistence = persistence
            self.saveInterval = saveInterval
        }
    }

    /// Counts since the store was created.
    public struct Statistics: Sendable, Hashable {
        /// Sessions in the store now.
        public var live = 0
        /// Sessions created by ``SessionStore/session(for:context:)``.
        public var created = 0
        /// Sessions made from snapshots.
        public var restored = 0
        /// Sessions evicted (idle, capacity or removed).
        public var evicted = 0
        /// Lines of sessions files that ``SessionStore/restore(from:)`` skipped because they could not be
        /// read (torn, corrupt, too long).
        public var skippedSnapshots = 0
        /// Sessions loaded from the persistence on a miss.
        public var loaded = 0
        /// Session versions written into the persistence.
        public var saved = 0
        /// Saves into the persistence that failed (their changes are kept for the next save).
        public var saveFailures = 0
        /// Changes waiting for the next save.
        public var unsaved = 0

        /// Creates statistics with the given counts.
        public init(live: Int = 0, created: Int = 0, restored: Int = 0, evicted: Int = 0, skippedSnapshots: Int = 0) {
            self.live = live
            self.created = created
            self.restored = restored
            self.evicted = evicted
            self.skippedSnapshots = skippedSnapshots
        }
    }

    /// The runtime whose data layers the store creates.
    public let tagManager: TagManager
    /// How the store behaves.
    public let configuration: Configuration

    /// A live session, linked into its shard's recency list (most recently used first). Mutated only
    /// under its shard's lock.
    ///
    /// The shard's dictionary owns the entries; the list links are `unowned`, so dropping a store releases
    /// every entry (two strong links made each neighbour pair a retain cycle, and dropping a strongly linked
    /// list would release it recursively, one stack frame per session). An entry is unlinked before it
    /// leaves the dictionary.
    ///
    /// `@unchecked`: the `unowned` links and the mutable fields are only touched under the shard's `Mutex`
    /// (a value type cannot hold an intrusive list's links, and the list keeps eviction O(1)).
    private final class Entry: @unchecked Sendable {
        let userID: String
        let session: DataLayer
        /// When the session was last handed out, as the store's clock reads it (nanoseconds).
        var lastUsed: Int64
        unowned var newer: Entry?
        unowned var older: Entry?
        /// The version the persistence holds (0: none).
        var version: Int64
        /// Whether the session changed since its last save (it is then in its shard's `dirty` list).
        var dirty = false
        /// Deltas committed since the session's last snapshot (`Int.max`: none stored yet, or a load could not
        /// apply them all: the next commit is a snapshot).
        var deltas: Int
        /// The identity of the newest change this copy continues (``SessionCheckpoint/id``): the one loaded, then
        /// each one committed; 0 for a session never stored.
        var headID: UInt64

        init(
            userID: String,
            session: DataLayer,
            now: Int64,
            version: Int64 = 0,
            deltas: Int = .max,
            headID: UInt64 = 0
        ) {
            self.userID = userID
            self.session = session
            self.lastUsed = now
            self.version = version
            self.deltas = deltas
            self.headID = headID
        }
    }

    /// A session that left the store before its change was saved: a capacity-evicted session whose last
    /// changes are not saved yet, or a session that ended (idle, removed) and is to be removed from the
    /// persistence.
    private struct Departed {
        var entry: Entry
        var reason: EvictionReason
    }

    /// A load in progress: the requests of the same user waiting for it.
    private typealias LoadWaiter = CheckedContinuation<Result<DataLayer, ContainerError>, Never>

    private struct Shard: Sendable {
        /// Whether changes are tracked for a persistence.
        var persistent = false
        /// The sessions of every shard (the store's one count, changed with each shard's entries).
        let live: LiveCount
        var entries: [SessionKey: Entry] = [:]
        /// Sessions changed since their last save (some may have left the store or been saved since).
        var dirty: [Entry] = []
        /// Sessions that left with a change to save.
        var departed: [SessionKey: Departed] = [:]
        /// Users whose session is being loaded, with the requests waiting for it.
        var loading: [SessionKey: [LoadWaiter]] = [:]
        var loaded = 0
        var saved = 0
        var saveFailures = 0
        /// The most recently used entry.
        unowned var newest: Entry?
        /// The least recently used entry.
        unowned var oldest: Entry?
        var created = 0
        var restored = 0
        var evicted = 0
        var skipped = 0

        mutating func link(_ entry: Entry) {
            entry.older = newest
            entry.newer = nil
            newest?.newer = entry
            newest = entry
            if oldest == nil { oldest = entry }
        }

        mutating func unlink(_ entry: Entry) {
            if let newer = entry.newer { newer.older = entry.older } else { newest = entry.older }
            if let older = entry.older { older.newer = entry.newer } else { oldest = entry.newer }
            entry.newer = nil
            entry.older = nil
        }

        mutating func remove(_ entry: Entry, _ reason: EvictionReason) {
            unlink(entry)
            let key = SessionKey(entry.userID)
            entries[key] = nil
            live.value.subtract(1, ordering: .relaxed)
            evicted += 1
            guard persistent else { return }
            switch reason {
            case .capacity where entry.dirty: departed[key] = Departed(entry: entry, reason: reason)
            case .idle, .removed: departed[key] = Departed(entry: entry, reason: reason)
            default: break
            }
            entry.dirty = false
        }

        mutating func markDirty(_ entry: Entry) {
            guard persistent, !entry.dirty else { return }
            entry.dirty = true
            dirty.append(entry)
        }
    }

    /// How many sessions all the shards hold: one atomic count, changed only when a session is added or
    /// leaves (finding a live session does not touch it), so that the store holds
    /// ``Configuration/maximumSessions`` whatever way its users fall into the shards.
    private final class LiveCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// One shard's lock (a class, so the shards can live in an array).
    private final class ShardLock: Sendable {
        let mutex: Mutex<Shard>
        init(persistent: Bool, live: LiveCount) {
            mutex = Mutex(Shard(persistent: persistent, live: live))
        }
        func withLock<R>(_ body: (inout sending Shard) throws -> sending R) rethrows -> R {
            try mutex.withLock(body)
        }
    }

    /// The longest line (one session's snapshot) ``restore(from:)`` reads: 16 MiB; a longer one is
    /// skipped as unreadable.
    public static let maximumSnapshotBytes = SessionFileReader.maximumLineBytes

    private let shards: [ShardLock]
    private let live: LiveCount
    /// Nanoseconds since the store was created, on the injected clock.
    private let now: @Sendable () -> Int64
    private let sleep: @Sendable (Duration) async throws -> Void
    /// Opened by ``gracefulShutdown()``: ``run()`` saves once more and returns.
    private let shutdown = Latch()
    /// Whether a save is running (saves must not overlap), and whether the last one failed (for the log).
    private let saving = Mutex((running: false, failing: false, lastFailureLog: Int64?.none, loadFailing: false))

    /// Creates an empty store.
    /// - Parameters:
    ///   - tagManager: the runtime that makes the sessions.
    ///   - configuration: timeouts and limits.
    ///   - clock: the clock idle times are measured on (a test clock in tests).
    public init<C: Clock>(
        tagManager: TagManager,
        configuration: Configuration = Configuration(),
        clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        self.tagManager = tagManager
        self.configuration = configuration
        let count = configuration.maximumSessions >= 1024 ? 16 : 1
        let live = LiveCount()
        self.live = live
        self.shards = (0..<count).map { _ in ShardLock(persistent: configuration.persistence != nil, live: live) }
        let start = clock.now
        self.now = { SessionStore.nanoseconds(start.duration(to: clock.now)) }
        self.sleep = { try await clock.sleep(for: $0) }
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }

    private func shard(for key: SessionKey) -> ShardLock {
        if shards.count == 1 { return shards[0] }
        return shards[Int(UInt(bitPattern: key.hashValue) % UInt(shards.count))]
    }

    // MARK: Finding sessions

    /// Checks that `userID` can name a session: not empty and without a NUL character.
    ///
    /// A NUL is refused because the places a user ID travels cannot all hold it: C strings and file names
    /// end at it, PostgreSQL `text` refuses it, and Braze documents no such `external_id`. A service
    /// answers such an ID as a bad request; ``loadSession(for:context:)`` refuses it with this error.
    /// (The synchronous ``session(for:context:)`` keys any bytes, NUL included, as given: it is for IDs the
    /// host made or checked itself.)
    /// - Throws: ``ContainerError`` with code ``ContainerError/Code/invalidUserID``.
    public static func validate(userID: String) throws(ContainerError) {
        if userID.isEmpty { throw ContainerError(.invalidUserID, "a user id must not be empty") }
        if userID.utf8.contains(0) {
            throw ContainerError(.invalidUserID, "the user id '\(userID.replacingNUL())' contains a NUL character")
        }
    }

    /// The session of `userID` in memory: the live one, or a new one with `context` (the tag manager's
    /// default context when `nil`). Marks it as used now. A given `context` also replaces a live session's
    /// context when it differs (the client may have upgraded its app).
    ///
    /// This synchronous form never consults the ``Configuration/persistence``: with one, use
    /// ``loadSession(for:context:)``, or a user whose session is only in the persistence gets a new one
    /// (whose first save is then refused as stale, and which is dropped).
    public func session(for userID: String, context: ClientContext? = nil) -> DataLayer {
        let time = now()
        let key = SessionKey(userID)
        var evicted: [(Entry, EvictionReason)] = []
        let session = shard(for: key).withLock { shard -> DataLayer in
            if let session = liveSession(key, in: &shard, at: time, evicted: &evicted) { return session }
            return newSession(userID, key, context: context, in: &shard, at: time, evicted: &evicted)
        }
        report(evicted)
        if let context, session.context != context { session.updateContext(context) }
        return session
    }

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

    /// Marks `entry`, just handed out, as changed (to be saved), unless the host checkpoints its changes.
    private func markHandedOut(_ entry: Entry, in shard: inout Shard) {
        if !checkpointsWithRecords { shard.markDirty(entry) }
    }

    /// Whether each push's session change is written with its records (by the host or the committer).
    private var checkpointsWithRecords: Bool {
        configuration.checkpointsWithRecords || configuration.committer?.keepsSessions == true
    }

    /// Whether the store's sessions keep their changes for delta commits.
    private var keepsDeltas: Bool { configuration.committer?.keepsSessions == true }

    /// The hook a session of this store commits its pushes with (none without a committer).
    private var committing: (@Sendable (DataLayer, inout PushResult) -> Void)? {
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

    /// The live session of `key`, marked as used (and changed); an expired one is evicted (and `nil`).
    private func liveSession(
        _ key: SessionKey,
        in shard: inout Shard,
        at time: Int64,
        evicted: inout [(Entry, EvictionReason)]
    ) -> DataLayer? {
        guard let entry = shard.entries[key] else { return nil }
        if time - entry.lastUsed <= SessionStore.nanoseconds(configuration.idleTimeout) {
            entry.lastUsed = time
            if shard.newest !== entry {
                shard.unlink(entry)
                shard.link(entry)
            }
            markHandedOut(entry, in: &shard)
            return entry.session
        }
        shard.remove(entry, .idle)
        evicted.append((entry, .idle))
        return nil
    }

    /// A new session for `userID`, inserted; its versions continue above those of a session of the same
    /// user that ended and is still to be removed from the persistence.
    private func newSession(
        _ userID: String,
        _ key: SessionKey,
        context: ClientContext?,
        in shard: inout Shard,
        at time: Int64,
        evicted: inout [(Entry, EvictionReason)]
    ) -> DataLayer {
        let session = tagManager.makeDataLayer(
            context: context,
            sessionID: userID,
            debug: false,
            committing: committing,
            keepsChanges: keepsDeltas
        )
        let entry = Entry(userID: userID, session: session, now: time, version: shard.departed[key]?.entry.version ?? 0)
        insert(entry, into: &shard, evicted: &evicted)
        markHandedOut(entry, in: &shard)
        shard.created += 1
        return session
    }

    /// The live session of `userID`, if there is one (not marked as used).
    public func existingSession(for userID: String) -> DataLayer? {
        let key = SessionKey(userID)
        return shard(for: key).withLock { $0.entries[key]?.session }
    }

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
    /// snapshot when none is stored yet or ``Configuration/snapshotInterval`` deltas follow the last snapshot.
    /// Counts the version as used. `nil` when `session` is not the store's live session of its user.
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
        if !snapshots, let delta { content = .delta(delta) } else { content = .snapshot(session.snapshot()) }
        return SessionCheckpoint(
            userID: session.sessionID,
            version: version,
            expected: version - 1,
            id: id,
            parent: parent,
            content: content
        )
    }

    /// Adds `entry`, first evicting the shard's least recently used session when the store is full.
    ///
    /// The limit is the store's, not a share per shard: users never fall evenly into the shards, and a
    /// shard held to a sixteenth evicts on every miss once it has more users than that (its least recently
    /// used is the next one a user walking through them comes back to) while the store is not full.
    private func insert(_ entry: Entry, into shard: inout Shard, evicted: inout [(Entry, EvictionReason)]) {
        if live.value.load(ordering: .relaxed) >= configuration.maximumSessions, let oldest = shard.oldest {
            shard.remove(oldest, .capacity)
            evicted.append((oldest, .capacity))
        }
        if shard.entries.updateValue(entry, forKey: SessionKey(entry.userID)) == nil {
            live.value.add(1, ordering: .relaxed)
        }
        shard.link(entry)
    }

    private func report(_ evicted: [(Entry, EvictionReason)]) {
        guard let onEvict = configuration.onEvict else { return }
        for (entry, reason) in evicted { onEvict(entry.userID, entry.session, reason) }
    }

    // MARK: Idle sessions

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

    /// ``saveChanges()``, logging a failure on the tag manager's logger: the first of a run of failures,
    /// then at most one a minute, and the recovery.
    private func saveLogged() async {
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

    // MARK: Saving

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

    // MARK: Statistics

    /// Whether the ``Configuration/persistence`` works as far as the store knows: `false` from a failed save
    /// until a save succeeds, and from a failed load until a load succeeds. A service answers "not ready"
    /// while it is `false` (a store that cannot save or load loses nothing, but cannot keep its promises).
    /// Always `true` without a persistence.
    public var persistenceIsHealthy: Bool {
        saving.withLock { !$0.failing && !$0.loadFailing }
    }

    /// Live, created, restored and evicted counts.
    public var statistics: Statistics {
        var total = Statistics()
        for shard in shards {
            shard.withLock { shard in
                total.live += shard.entries.count
                total.created += shard.created
                total.restored += shard.restored
                total.evicted += shard.evicted
                total.skippedSnapshots += shard.skipped
                total.loaded += shard.loaded
                total.saved += shard.saved
                total.saveFailures += shard.saveFailures
                total.unsaved += shard.dirty.count { $0.dirty } + shard.departed.count
            }
        }
        return total
    }

    /// How many sessions the store holds.
    public var count: Int { shards.reduce(0) { sum, shard in sum + shard.withLock { $0.entries.count } } }

    // MARK: Snapshots

    /// A snapshot of every live session, sorted by user ID.
    public func snapshots() -> [SessionSnapshot] {
        var sessions: [DataLayer] = []
        for shard in shards {
            let live = shard.withLock { shard in shard.entries.values.map { $0.session } }
            sessions.append(contentsOf: live)
        }
        return sessions.map { $0.snapshot() }.sorted { $0.sessionID.utf8.lexicographicallyPrecedes($1.sessionID.utf8) }
    }

    /// Makes sessions from snapshots (each under its ``SessionSnapshot/sessionID`` as user ID), replacing
    /// live sessions of the same users; marks them as used now. Returns how many were restored.
    @discardableResult
    public func restore(_ snapshots: [SessionSnapshot]) -> Int {
        let time = now()
        var evicted: [(Entry, EvictionReason)] = []
        for snapshot in snapshots {
            let session = tagManager.restoreDataLayer(
                from: snapshot,
                debug: false,
                committing: committing,
                keepsChanges: keepsDeltas
            )
            let key = SessionKey(snapshot.sessionID)
            shard(for: key).withLock { shard in
                var version: Int64 = 0
                if let live = shard.entries[key] {
                    version = live.version
                    shard.remove(live, .removed)
                }
                let entry = Entry(userID: snapshot.sessionID, session: session, now: time, version: version)
                insert(entry, into: &shard, evicted: &evicted)
                shard.markDirty(entry)
                shard.restored += 1
            }
        }
        report(evicted)
        return snapshots.count
    }

    /// Writes a snapshot of every live session to `path`, one JSON object per line (see
    /// ``SessionSnapshot/jsonText``), atomically: a crash leaves the previous file or the new one. A new
    /// file is private to the service's user (mode `0600`): it holds user IDs and event parameters.
    /// - Returns: how many sessions were written.
    @discardableResult
    public func save(to path: String) throws(ContainerError) -> Int {
        let all = snapshots()
        var text = ""
        for snapshot in all {
            text += snapshot.jsonText
            text += "\n"
        }
        do {
            try AtomicFile.write(Array(text.utf8), to: path, uniqueTemporary: true, mode: 0o600)
        } catch {
            throw ContainerError(
                .io,
                "cannot write sessions to '\(path)' (\(error.step) '\(error.path)': \(error.reason))",
                file: path
            )
        }
        return all.count
    }

    /// Restores the sessions a ``save(to:)`` wrote to `path`; a missing file restores nothing.
    ///
    /// The file is read line by line (memory stays bounded by one line, not the file), and only when it
    /// is a regular file: a FIFO, a device such as `/dev/zero` or a directory is refused at once. A line
    /// that cannot be read — torn by a crash, corrupt, longer than ``maximumSnapshotBytes`` — is skipped
    /// and counted in ``Statistics/skippedSnapshots``, with one warning on the tag manager's logger naming
    /// the first such line; the other sessions are restored.
    /// - Returns: how many sessions were restored.
    /// - Throws: ``ContainerError`` (`io_error`) when the file cannot be opened or read, or is not a
    ///   regular file.
    @discardableResult
    public func restore(from path: String) throws(ContainerError) -> Int {
        guard let fd = try SessionFileReader.open(path) else { return 0 }
        defer { close(fd) }
        var batch: [SessionSnapshot] = []
        var restored = 0
        var skipped = 0
        var firstProblem: ContainerError?
        try SessionFileReader.forEachLine(of: fd, path: path) { line throws(ContainerError) in
            guard let bytes = line.bytes else {
                skipped += 1
                if firstProblem == nil {
                    firstProblem = ContainerError(
                        .tooLarge,
                        "session snapshot longer than \(SessionStore.maximumSnapshotBytes) bytes",
                        file: path,
                        location: SourceLocation(line: line.number, column: 1, offset: line.offset)
                    )
                }
                return
            }
            if SessionFileReader.isBlank(bytes) { return }
            do throws(ContainerError) {
                batch.append(try SessionSnapshot(jsonValue: try Value(jsonBytes: Array(bytes))))
            } catch {
                skipped += 1
                if firstProblem == nil {
                    firstProblem = ContainerError(
                        error.code,
                        "cannot read session snapshot: \(error.message)",
                        file: path,
                        pointer: error.pointer,
                        location: SourceLocation(line: line.number, column: error.location?.column ?? 1)
                    )
                }
            }
            if batch.count >= 1024 {
                restored += restore(batch)
                batch.removeAll(keepingCapacity: true)
            }
        }
        restored += restore(batch)
        if skipped > 0 {
            shards[0].withLock { $0.skipped += skipped }
            tagManager.logger.warning(
                "skipped unreadable session snapshot lines",
                metadata: ["path": path, "skipped": "\(skipped)", "first": firstProblem.map { "\($0)" } ?? ""]
            )
        }
        return restored
    }
}

extension ContainerError.Code {
    /// A user ID that cannot name a session: empty, or with a NUL character (see
    /// ``SessionStore/validate(userID:)``).
    public static let invalidUserID = ContainerError.Code(rawValue: "invalid_user_id")

    /// A push that would take a session past ``TagManager/maximumDataLayerBytes`` (refused, see
    /// ``PushResult/refusal``).
    public static let sessionTooLarge = ContainerError.Code(rawValue: "session_too_large")
}

extension String {
    /// The string with each NUL shown as `\0`, for messages.
    fileprivate func replacingNUL() -> String {
        String(decoding: utf8.flatMap { $0 == 0 ? Array("\\0".utf8) : [$0] }, as: UTF8.self)
    }
}
