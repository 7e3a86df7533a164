import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The sessions of a service's users: finds or creates the ``DataLayer`` of a user ID, forgets sessions
/// idle for longer than ``Configuration/idleTimeout``, and keeps at most
/// about ``Configuration/maximumSessions`` (the least recently used go first; large stores are split in 16
/// shards, each holding a sixteenth).
///
/// ```swift
/// let sessions = SessionStore(tagManager: manager, configuration: .init(idleTimeout: .seconds(1800)))
/// // Per request:
/// let session = sessions.session(for: request.userID, context: request.context)
/// let result = await session.push(event: request.event, parameters: request.parameters)
/// ```
///
/// Sessions are kept in shards, each with its own lock, so requests for different users rarely meet.
/// ``run()`` sweeps idle sessions periodically until its task is cancelled; a service runs it beside its
/// server (it is shaped like a swift-service-lifecycle `Service`). ``save(to:)`` and ``restore(from:)``
/// carry every session across a restart as ``SessionSnapshot``s; the ``Configuration/onEvict`` hook can
/// keep an evicted session's snapshot in a shared store, so that another instance continues it.
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
    }

    /// How the store behaves.
    public struct Configuration: Sendable {
        /// A session unused for this long is evicted by the next sweep (and not returned any more).
        public var idleTimeout: Duration
        /// The most sessions kept; creating one more evicts the least recently used.
        public var maximumSessions: Int
        /// How often ``SessionStore/run()`` sweeps idle sessions.
        public var sweepInterval: Duration
        /// Called (outside the store's locks) for every session that leaves the store, with its user ID.
        public var onEvict: (@Sendable (_ userID: String, _ session: DataLayer, _ reason: EvictionReason) -> Void)?

        /// Creates a configuration: 30 minutes idle, 100,000 sessions, a sweep every 30 seconds.
        public init(
            idleTimeout: Duration = .seconds(30 * 60),
            maximumSessions: Int = 100_000,
            sweepInterval: Duration = .seconds(30),
            onEvict: (@Sendable (_ userID: String, _ session: DataLayer, _ reason: EvictionReason) -> Void)? = nil
        ) {
            self.idleTimeout = idleTimeout
            self.maximumSessions = max(1, maximumSessions)
            self.sweepInterval = sweepInterval
            self.onEvict = onEvict
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
    private final class Entry: @unchecked Sendable {
        let userID: String
        let session: DataLayer
        /// When the session was last handed out, as the store's clock reads it (nanoseconds).
        var lastUsed: Int64
        unowned var newer: Entry?
        unowned var older: Entry?

        init(userID: String, session: DataLayer, now: Int64) {
            self.userID = userID
            self.session = session
            self.lastUsed = now
        }
    }

    private struct Shard: Sendable {
        var entries: [SessionKey: Entry] = [:]
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

        mutating func remove(_ entry: Entry) {
            unlink(entry)
            entries[SessionKey(entry.userID)] = nil
            evicted += 1
        }
    }

    /// One shard's lock (a class, so the shards can live in an array).
    private final class ShardLock: Sendable {
        let mutex = Mutex(Shard())
        func withLock<R>(_ body: (inout sending Shard) throws -> sending R) rethrows -> R {
            try mutex.withLock(body)
        }
    }

    /// The longest line (one session's snapshot) ``restore(from:)`` reads: 16 MiB; a longer one is
    /// skipped as unreadable.
    public static let maximumSnapshotBytes = SessionFileReader.maximumLineBytes

    private let shards: [ShardLock]
    private let perShardMaximum: Int
    /// Nanoseconds since the store was created, on the injected clock.
    private let now: @Sendable () -> Int64
    private let sleep: @Sendable (Duration) async throws -> Void

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
        self.shards = (0..<count).map { _ in ShardLock() }
        self.perShardMaximum = max(1, configuration.maximumSessions / count)
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

    /// The session of `userID`: the live one, or a new one with `context` (the tag manager's default
    /// context when `nil`). Marks it as used now. A given `context` also replaces a live session's context
    /// when it differs (the client may have upgraded its app).
    public func session(for userID: String, context: ClientContext? = nil) -> DataLayer {
        let time = now()
        let key = SessionKey(userID)
        var evicted: [(Entry, EvictionReason)] = []
        let session = shard(for: key).withLock { shard -> DataLayer in
            if let entry = shard.entries[key] {
                if time - entry.lastUsed <= SessionStore.nanoseconds(configuration.idleTimeout) {
                    entry.lastUsed = time
                    if shard.newest !== entry {
                        shard.unlink(entry)
                        shard.link(entry)
                    }
                    return entry.session
                }
                shard.remove(entry)
                evicted.append((entry, .idle))
            }
            let session = tagManager.makeDataLayer(context: context, sessionID: userID)
            insert(Entry(userID: userID, session: session, now: time), into: &shard, evicted: &evicted)
            shard.created += 1
            return session
        }
        report(evicted)
        if let context, session.context != context { session.updateContext(context) }
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
        let key = SessionKey(userID)
        let entry = shard(for: key).withLock { shard -> Entry? in
            guard let entry = shard.entries[key] else { return nil }
            shard.remove(entry)
            return entry
        }
        guard let entry else { return nil }
        report([(entry, .removed)])
        return entry.session
    }

    /// Adds `entry`, first evicting the shard's least recently used session when it is full.
    private func insert(_ entry: Entry, into shard: inout Shard, evicted: inout [(Entry, EvictionReason)]) {
        if shard.entries.count >= perShardMaximum, let oldest = shard.oldest {
            shard.remove(oldest)
            evicted.append((oldest, .capacity))
        }
        shard.entries[SessionKey(entry.userID)] = entry
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
                    shard.remove(oldest)
                    idle.append(oldest)
                }
                return idle
            }
            evicted.append(contentsOf: idle.map { ($0, .idle) })
        }
        report(evicted)
        return evicted.count
    }

    /// Sweeps idle sessions every ``Configuration/sweepInterval`` until the task is cancelled, then
    /// returns (there is nothing to drain: the sessions stay in the store for ``save(to:)``).
    public func run() async throws {
        while !Task.isCancelled {
            do {
                try await sleep(configuration.sweepInterval)
            } catch is CancellationError {
                return
            }
            evictIdle()
        }
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
            let session = tagManager.restoreDataLayer(from: snapshot)
            let key = SessionKey(snapshot.sessionID)
            shard(for: key).withLock { shard in
                if let live = shard.entries[key] { shard.remove(live) }
                insert(Entry(userID: snapshot.sessionID, session: session, now: time), into: &shard, evicted: &evicted)
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
                "skipped \(skipped) unreadable session snapshot line(s) of '\(path)'; first: \(firstProblem.map { "\($0)" } ?? "")",
                metadata: ["path": path, "skipped": "\(skipped)"]
            )
        }
        return restored
    }
}

extension ContainerError.Code {
    /// A user ID that cannot name a session: empty, or with a NUL character (see
    /// ``SessionStore/validate(userID:)``).
    public static let invalidUserID = ContainerError.Code(rawValue: "invalid_user_id")
}

extension String {
    /// The string with each NUL shown as `\0`, for messages.
    fileprivate func replacingNUL() -> String {
        String(decoding: utf8.flatMap { $0 == 0 ? Array("\\0".utf8) : [$0] }, as: UTF8.self)
    }
}
