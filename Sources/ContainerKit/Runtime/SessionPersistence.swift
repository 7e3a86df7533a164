/// Where a ``SessionStore`` keeps its sessions beyond memory, so that they survive a crash (`kill -9`), a
/// restart, or the user's next request landing on another instance: the store **loads** a session it does
/// not hold when its user comes back (``load(userID:)``), and **saves** the sessions that changed
/// (``save(_:)``), each as a ``StoredSession`` — a ``SessionSnapshot`` and a version that fences a stale
/// owner.
///
/// ContainerKit ships ``FileSessionPersistence`` (one machine: an append-only log in a private
/// directory, compacted in the background). A store shared by several instances (PostgreSQL, for one)
/// implements the same two requirements.
///
/// ```swift
/// let persistence = try FileSessionPersistence(directory: "/var/lib/myservice/sessions")
/// let sessions = SessionStore(tagManager: manager, configuration: .init(persistence: persistence))
/// // Beside the server, until shutdown: loads the saved sessions' index, saves changes every second,
/// // saves what is left when cancelled.
/// try await sessions.run()
/// // Per request:
/// let session = try await sessions.loadSession(for: userID, context: context)
/// let result = await session.push(event: "played song", parameters: ["genre": "jazz"])
/// sessions.didChange(session)
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
///   the store's idle timeout (``FileSessionPersistence/lifetime``); ``load(userID:)`` then returns `nil`.
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

    /// Creates a stored session.
    public init(snapshot: SessionSnapshot, version: Int64) {
        self.snapshot = snapshot
        self.version = version
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
