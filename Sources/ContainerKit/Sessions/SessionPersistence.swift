/// Where a ``SessionStore`` keeps its sessions beyond memory, so that they survive a crash (`kill -9`), a
/// restart, or the user's next request landing on another instance: the store **loads** a session it does
/// not hold when its user comes back (``load(userID:)``), and **saves** the sessions that changed
/// (``save(_:)``), each as a ``StoredSession`` — a ``SessionSnapshot`` and a version that fences a stale
/// owner.
///
/// ContainerKit's delivery library keeps sessions in the durable queue's segment log (a durable `DeliveryPipeline`'s `sessions`,
/// one machine: each push's session change in the same append as its records), ContainerKitPostgres in
/// PostgreSQL (shared by several instances), and ContainerKitTesting in memory
/// (`InMemorySessionPersistence`). Any other store implements the same two requirements.
///
/// ```swift
/// let queue = try DeliveryPipeline.durable(directory: "/var/lib/myservice/queue", destination: braze)
/// let sessions = SessionStore(
///     tagManager: manager,
///     configuration: .init(persistence: queue.sessions, committer: RecordCommitter(queue, keepsSessions: true))
/// )
/// // Beside the server, until shutdown: the queue's run() and the store's (evicts idle sessions, saves
/// // what is left when cancelled).
/// try await sessions.run()
/// // Per request: load on a miss, push, commit the records and the session change in one append.
/// let result = try await sessions.push(event: "played song", parameters: ["genre": "jazz"], for: userID)
/// ```
///
/// ## What an implementation must guarantee
/// - **User IDs are bytes.** Two IDs are the same user only when their UTF-8 bytes are equal (never by
///   Unicode canonical equivalence). IDs passed in are never empty and never contain NUL
///   (``SessionStore/validate(userID:)``).
/// - **Versions fence stale owners.** Every saved session carries a ``StoredSession/version`` greater than
///   the version it was loaded with (a session that was never stored starts at 0 and saves 1, 2, …). A
///   save of version *v* replaces the stored session only if there is none or the stored version is
///   **lower** than *v* (an equal version is refused too: two owners that both loaded version 4 must not
///   both write a version 5); otherwise it changes nothing and the user ID is returned in
///   ``SessionSaveResult/superseded``. (PostgreSQL: `INSERT … ON CONFLICT (user_id) DO UPDATE … WHERE
///   sessions.version < excluded.version`, and the rows not updated are the superseded ones.) The store then
///   drops its copy, and the user's next request loads the newer one. A removal of version *v* deletes the
///   stored session only if its version is *v* or lower. A user who comes back after that gets a new session
///   whose versions continue above ``endedVersion(userID:)``: its saves are kept, and survive a restart.
/// - **Stored sessions may expire.** A persistence may forget a session that was not saved for longer than
///   the store's idle timeout; ``load(userID:)`` then returns `nil`.
/// - **A save is durable when it returns, and atomic per session.** A crash during a ``save(_:)`` keeps,
///   for each session, its old version or its new one, never a mix; a returned call survives a crash.
///   (A transactional store keeps all of a call's changes or none.) A thrown call may have kept some, all
///   or none of its changes: the store counts the versions it tried as used and retries with higher ones,
///   so a retry is never refused because its first attempt was kept after all.
/// - **A load returns the newest saved version** (or `nil` when the user has none), and never a version
///   older than one this process saved for the same user.
/// - **Thread safety.** Both requirements may be called concurrently from many tasks. A load may suspend
///   (for I/O, or while the implementation is still opening); it should not block a thread.
/// - **Errors.** A store that cannot be reached now throws (a ``ContainerError`` with a code and a message
///   that names no secret); the session store answers the request with that error (a service answers 503),
///   and retries saves at its next interval, never dropping a change it could not save.
public protocol SessionPersistence: Sendable {
    /// The newest stored session of `userID`, or `nil` when there is none.
    func load(userID: String) async throws(ContainerError) -> StoredSession?

    /// Stores `changes` (new or changed sessions, and removals), fenced by their versions.
    /// - Returns: the user IDs whose change was refused because a newer version is stored.
    func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult

    /// The version of `userID`'s session that ended (was removed) or expired, while the persistence still
    /// fences with it; 0 when there is none. When ``load(userID:)`` finds no session, the store starts the
    /// user's new session at this version, so that its first save (one more) is kept, not refused as
    /// superseded. A persistence that forgets a removed session entirely (a `DELETE`) keeps the default, 0.
    func endedVersion(userID: String) async throws(ContainerError) -> Int64

    /// The implementation's background work (compaction, a connection pool's upkeep), until the task is
    /// cancelled. ``SessionStore/run()`` runs it beside its own loop and cancels it after its last save;
    /// the default does nothing. Loads and saves must work before it starts.
    func run() async throws
}

extension SessionPersistence {
    /// Nothing is remembered of an ended session.
    public func endedVersion(userID: String) async throws(ContainerError) -> Int64 { 0 }

    /// Nothing to do in the background.
    public func run() async throws {}
}

/// One session as a ``SessionPersistence`` keeps it: everything it remembers and its version.
public struct StoredSession: Sendable, Hashable {
    /// Everything the session remembers; ``SessionSnapshot/sessionID`` is the user ID.
    public var snapshot: SessionSnapshot
    /// The version: 1 for the first save of a session, one more for each save after it (see
    /// ``SessionPersistence`` for how it fences).
    public var version: Int64
    /// How many deltas (``SessionDelta``) a load applied on top of the stored snapshot to make
    /// ``snapshot``: the store writes the next snapshot sooner when the chain is long. 0 for a snapshot as
    /// saved.
    public var deltas: Int
    /// The ``SessionCheckpoint/id`` of the newest change the store holds for the session (0: none is known, as
    /// for a store without lineage): the session's next commit continues it (``SessionCheckpoint/parent``).
    public var checkpointID: UInt64

    /// Creates a stored session.
    public init(snapshot: SessionSnapshot, version: Int64, deltas: Int = 0, checkpointID: UInt64 = 0) {
        self.snapshot = snapshot
        self.version = version
        self.deltas = deltas
        self.checkpointID = checkpointID
    }

    /// The user ID (``SessionSnapshot/sessionID``).
    public var userID: String { snapshot.sessionID }
}

/// One change a ``SessionStore`` asks its ``SessionPersistence`` to keep.
public enum SessionChange: Sendable, Hashable {
    /// Keep this session (new, or changed since its last save), if no newer version is stored.
    case save(StoredSession)
    /// The session ended (it was idle for longer than the idle timeout, or the host removed it): forget it,
    /// if the stored version is `version` or lower.
    case remove(userID: String, version: Int64)

    /// The user the change is about.
    public var userID: String {
        switch self {
        case .save(let stored): stored.userID
        case .remove(let userID, _): userID
        }
    }
}

/// What a ``SessionPersistence/save(_:)`` refused.
public struct SessionSaveResult: Sendable, Hashable {
    /// The users whose change was not kept because a newer version of their session is stored (another
    /// instance owns them now).
    public var superseded: [String]

    /// Creates a result.
    public init(superseded: [String] = []) { self.superseded = superseded }
}

/// One commit of a session's state, in the append of the push that produced it (see ``PushCommitter``): a
/// delta from the state of the version before (``SessionDelta``), or the whole state (``SessionSnapshot``).
///
/// A store keeps a session as its last snapshot and the deltas committed after it, and **fences** each
/// commit by version and lineage: a snapshot is kept only if the stored session's newest version is
/// ``expected`` or lower (or there is none); a delta only if it is exactly ``expected`` (``version`` − 1), since
/// it applies to that state. A commit with a ``parent`` is kept only if the newest change stored is that very
/// change (its ``id``), or — for a snapshot — if none is stored, the session ended or the owner had no change
/// before (a new session, `parent` 0: fenced by version alone): two owners that both
/// wrote a version 5 (one of them refused) never see the refused owner's version 6 continue the other's 5. A
/// refused commit fails the whole append with ``DurabilityError/Code-swift.struct/superseded``.
public struct SessionCheckpoint: Sendable, Hashable {
    /// What the checkpoint holds.
    public enum Content: Sendable, Hashable {
        /// The whole state.
        case snapshot(SessionSnapshot)
        /// The changes since version ``SessionCheckpoint/expected``.
        case delta(SessionDelta)
    }

    /// The user ID.
    public var userID: String
    /// The version this commit makes.
    public var version: Int64
    /// The newest version of the session this owner knows is stored (loaded or committed by it).
    public var expected: Int64
    /// This change's identity: random, never 0.
    public var id: UInt64
    /// The ``id`` of the change this one continues — the one this owner loaded or committed last (0: none, a
    /// new session) — or `nil` for a change fenced by version alone (a snapshot saved through
    /// ``SessionPersistence/save(_:)``).
    public var parent: UInt64?
    /// The state or the change.
    public var content: Content

    /// Creates a checkpoint.
    public init(
        userID: String,
        version: Int64,
        expected: Int64,
        id: UInt64 = SessionCheckpoint.makeID(),
        parent: UInt64? = nil,
        content: Content
    ) {
        self.userID = userID
        self.version = version
        self.expected = expected
        self.id = id
        self.parent = parent
        self.content = content
    }

    /// A new random identity (never 0).
    public static func makeID() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return max(1, generator.next())
    }

    /// Whether a store whose newest change of the session has version `head` and identity `headID` (0: none
    /// known; `ended`: it is a removal) keeps this checkpoint. See the type's documentation.
    public func isAdmitted(afterHead head: Int64, headID: UInt64, ended: Bool) -> Bool {
        switch content {
        case .delta:
            guard head == expected else { return false }
            return parent == nil || parent == headID
        case .snapshot:
            // A whole state from an owner with no change of its own before (`parent` 0: a new session) is fenced
            // by version alone; one that continues a change must continue the newest.
            guard head <= expected else { return false }
            guard let parent, parent != 0 else { return true }
            return parent == headID || headID == 0 || ended
        }
    }

    /// A whole snapshot saved as `stored` (fenced as a ``SessionPersistence`` save: it replaces versions
    /// below its own).
    public init(_ stored: StoredSession) {
        self.init(
            userID: stored.userID,
            version: stored.version,
            expected: stored.version - 1,
            id: stored.checkpointID != 0 ? stored.checkpointID : SessionCheckpoint.makeID(),
            content: .snapshot(stored.snapshot)
        )
    }

    /// Whether it is a delta.
    public var isDelta: Bool {
        if case .delta = content { return true }
        return false
    }

    /// The content's compact JSON text (a ``SessionSnapshot`` or a ``SessionDelta``).
    public var jsonText: String {
        switch content {
        case .snapshot(let snapshot): snapshot.jsonText
        case .delta(let delta): delta.jsonText
        }
    }

    /// Appends the content's compact JSON text.
    package func writeJSON(to writer: inout JSONByteWriter) {
        switch content {
        case .snapshot(let snapshot): snapshot.writeJSON(to: &writer)
        case .delta(let delta): delta.writeJSON(to: &writer)
        }
    }
}

/// Folds a stored session from its last snapshot and the deltas after it, as a store loads one on a miss.
public struct SessionFold: Sendable {
    /// The state so far (`nil` until a snapshot is applied), with the newest version seen.
    ///
    /// When deltas could not be applied, it holds the state of what applied with the **newest version
    /// seen** and ``StoredSession/deltas`` `Int.max`: the session's next commit is then a whole snapshot that
    /// replaces the unreadable chain, and is still fenced if another instance stored a newer version.
    public var stored: StoredSession? {
        guard var state else { return nil }
        if unapplied > 0 {
            state.version = max(state.version, newest)
            state.checkpointID = newestID
            state.deltas = .max
        }
        return state
    }
    private var state: StoredSession?
    private var newest: Int64 = 0
    /// The identity of the newest line seen (applied or not), when known.
    private var newestID: UInt64 = 0

    /// Notes the identity of the line of `version` (for lineage: ``StoredSession/checkpointID``).
    private mutating func note(version: Int64, id: UInt64) {
        if version >= newest {
            newest = version
            newestID = id
        }
    }
    /// Deltas that could not be applied: one before any snapshot (but a first commit's, of version 1), one whose
    /// version does not follow the state's (a gap), or one that does not parse. Counted, and the fold stops
    /// applying deltas at the first of them.
    public private(set) var unapplied = 0
    /// What was wrong with the first delta not applied.
    public private(set) var problem: String?

    /// An empty fold.
    public init() {}

    /// Takes a snapshot of `version` (the change `id`, 0 when unknown) as the state (replacing anything before
    /// it).
    public mutating func apply(snapshot: SessionSnapshot, version: Int64, id: UInt64 = 0) {
        note(version: version, id: id)
        guard unapplied == 0 else {
            unapplied += 1
            return
        }
        state = StoredSession(snapshot: snapshot, version: version, checkpointID: id)
    }

    /// Applies the delta of `version` (JSON text as ``SessionDelta/jsonText`` writes it).
    public mutating func apply(deltaText: String, version: Int64, id: UInt64 = 0) {
        do throws(ContainerError) {
            apply(delta: try SessionDelta(jsonText: deltaText), version: version, id: id)
        } catch {
            refuse("the delta of version \(version) does not parse: \(error.message)", version: version, id: id)
        }
    }

    /// Applies the delta of `version` (the change `id`), if it follows the state's version. A delta of version 1
    /// with nothing before it is a new session's first commit: it applies to the empty state
    /// (`SessionSnapshot(sessionID:)`, version 0; see ``SessionStore``'s first commits).
    public mutating func apply(delta: SessionDelta, version: Int64, id: UInt64 = 0) {
        let empty = { StoredSession(snapshot: SessionSnapshot(sessionID: delta.sessionID), version: 0) }
        guard unapplied == 0, var next = state ?? (version == 1 ? empty() : nil) else {
            refuse("the delta of version \(version) has no snapshot before it", version: version, id: id)
            return
        }
        guard version == next.version + 1 else {
            refuse("the delta of version \(version) does not follow version \(next.version)", version: version, id: id)
            return
        }
        delta.apply(to: &next.snapshot)
        next.version = version
        next.deltas += 1
        next.checkpointID = id
        note(version: version, id: id)
        state = next
    }

    /// Applies a checkpoint (its snapshot, or its delta).
    public mutating func apply(_ checkpoint: SessionCheckpoint) {
        switch checkpoint.content {
        case .snapshot(let snapshot): apply(snapshot: snapshot, version: checkpoint.version, id: checkpoint.id)
        case .delta(let delta): apply(delta: delta, version: checkpoint.version, id: checkpoint.id)
        }
    }

    /// Notes a version the store holds that is not read (a line that cannot be parsed at all): counted as not
    /// applied.
    public mutating func skip(version: Int64, id: UInt64 = 0, problem: String) {
        refuse(problem, version: version, id: id)
    }

    private mutating func refuse(_ message: String, version: Int64, id: UInt64) {
        note(version: version, id: id)
        unapplied += 1
        if problem == nil { problem = message }
    }
}
