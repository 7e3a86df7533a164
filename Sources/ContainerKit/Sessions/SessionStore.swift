// SessionStore's core: its types, configuration and statistics, the shards and their recency lists, finding,
// creating and inserting sessions.

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
        /// How many times ``SessionStore/push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)`` pushes
        /// an event whose commit was refused because another instance stored a newer version of the session
        /// (each time on the newest state, after a short random pause that grows): the user's requests landing
        /// on two instances at once settle without an error to the client.
        public var maximumPushAttempts = 16
        /// Commits each push of the store's sessions as one unit, inside the session's turn: its records and,
        /// when the committer keeps sessions (``PushCommitter/keepsSessions``), the session's checkpoint, in one
        /// append (see ``SessionStore/push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)``).
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
    final class Entry: @unchecked Sendable {
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
    struct Departed {
        var entry: Entry
        var reason: EvictionReason
    }

    /// A load in progress: the requests of the same user waiting for it.
    typealias LoadWaiter = CheckedContinuation<Result<DataLayer, ContainerError>, Never>

    struct Shard: Sendable {
        /// Whether changes are tracked for a persistence.
        var persistent = false
        /// The sessions of every shard (the store's one count, changed with each shard's entries).
        fileprivate let live: LiveCount
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
    fileprivate final class LiveCount: Sendable {
        let value = Atomic<Int>(0)
    }

    /// One shard's lock (a class, so the shards can live in an array).
    final class ShardLock: Sendable {
        let mutex: Mutex<Shard>
        fileprivate init(persistent: Bool, live: LiveCount) {
            mutex = Mutex(Shard(persistent: persistent, live: live))
        }
        func withLock<R>(_ body: (inout sending Shard) throws -> sending R) rethrows -> R {
            try mutex.withLock(body)
        }
    }

    let shards: [ShardLock]
    private let live: LiveCount
    /// Nanoseconds since the store was created, on the injected clock.
    let now: @Sendable () -> Int64
    let sleep: @Sendable (Duration) async throws -> Void
    /// Opened by ``gracefulShutdown()``: ``run()`` saves once more and returns.
    let shutdown = Latch()
    /// Whether a save is running (saves must not overlap), and whether the last one failed (for the log).
    let saving = Mutex((running: false, failing: false, lastFailureLog: Int64?.none, loadFailing: false))

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

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }

    func shard(for key: SessionKey) -> ShardLock {
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

    /// Marks `entry`, just handed out, as changed (to be saved), unless the host checkpoints its changes.
    func markHandedOut(_ entry: Entry, in shard: inout Shard) {
        if !checkpointsWithRecords { shard.markDirty(entry) }
    }

    /// Whether each push's session change is written with its records (by the host or the committer).
    private var checkpointsWithRecords: Bool {
        configuration.checkpointsWithRecords || configuration.committer?.keepsSessions == true
    }

    /// Whether the store's sessions keep their changes for delta commits.
    var keepsDeltas: Bool { configuration.committer?.keepsSessions == true }

    /// The live session of `key`, marked as used (and changed); an expired one is evicted (and `nil`).
    func liveSession(
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
    func newSession(
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

    /// Adds `entry`, first evicting the shard's least recently used session when the store is full.
    ///
    /// The limit is the store's, not a share per shard: users never fall evenly into the shards, and a
    /// shard held to a sixteenth evicts on every miss once it has more users than that (its least recently
    /// used is the next one a user walking through them comes back to) while the store is not full.
    func insert(_ entry: Entry, into shard: inout Shard, evicted: inout [(Entry, EvictionReason)]) {
        if live.value.load(ordering: .relaxed) >= configuration.maximumSessions, let oldest = shard.oldest {
            shard.remove(oldest, .capacity)
            evicted.append((oldest, .capacity))
        }
        if shard.entries.updateValue(entry, forKey: SessionKey(entry.userID)) == nil {
            live.value.add(1, ordering: .relaxed)
        }
        shard.link(entry)
    }

    func report(_ evicted: [(Entry, EvictionReason)]) {
        guard let onEvict = configuration.onEvict else { return }
        for (entry, reason) in evicted { onEvict(entry.userID, entry.session, reason) }
    }

    // MARK: Statistics

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
