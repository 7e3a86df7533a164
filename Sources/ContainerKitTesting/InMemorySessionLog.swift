public import ContainerKit
public import ContainerKitDelivery
import Synchronization

/// A ``RecordStore`` in memory that keeps sessions with the records — the reference of what a store that keeps
/// sessions promises (see "Stores that keep sessions" in ``RecordStore``), in a hundred lines: each append's
/// records and session change are taken together or not at all; a session is its last snapshot and the deltas
/// after it (kept as JSON text, as a real store keeps them); a change is fenced by version; a load folds.
///
/// ```swift
/// let log = InMemorySessionLog()
/// let pipeline = DeliveryPipeline(store: log, destination: destination)
/// let sessions = SessionStore(
///     tagManager: manager,
///     configuration: .init(persistence: log.sessions, committer: RecordCommitter(pipeline, keepsSessions: true))
/// )
/// ```
public final class InMemorySessionLog: RecordStore {
    private struct Line {
        var version: Int64
        var id: UInt64
        var snapshot: Bool
        var text: String
    }

    private struct Session {
        var head: Int64 = 0
        var headID: UInt64 = 0
        var lines: [Line] = []
        var ended = false
    }

    private let records = MemoryRecordStore()
    /// Sessions keyed by the user ID's bytes.
    private let sessionLines = Mutex<[[UInt8]: Session]>([:])

    /// Creates an empty log.
    public init() {}

    public var isDurable: Bool { false }

    /// Takes the records and the session changes together, or refuses the whole append (`.superseded`) when a
    /// change is fenced.
    public func append(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 {
        try sessionLines.withLock { sessions throws(AnalyticsSinkError) in
            var heads: [[UInt8]: Session] = [:]
            for checkpoint in encoded.sessions {
                let key = Array(checkpoint.userID.utf8)
                let head = heads[key] ?? sessions[key] ?? Session()
                guard checkpoint.isAdmitted(afterHead: head.head, headID: head.headID, ended: head.ended) else {
                    throw AnalyticsSinkError(
                        .superseded,
                        "version \(head.head) of the session of '\(checkpoint.userID)' is stored, not the one this "
                            + "change continues"
                    )
                }
                heads[key] = Session(head: checkpoint.version, headID: checkpoint.id)
            }
            let ticket = try records.append(encoded)
            for checkpoint in encoded.sessions {
                let key = Array(checkpoint.userID.utf8)
                var session = sessions[key] ?? Session()
                let line = Line(
                    version: checkpoint.version,
                    id: checkpoint.id,
                    snapshot: !checkpoint.isDelta,
                    text: checkpoint.jsonText
                )
                if line.snapshot { session.lines = [line] } else { session.lines.append(line) }
                session.head = checkpoint.version
                session.headID = checkpoint.id
                session.ended = false
                sessions[key] = session
            }
            return ticket
        }
    }

    public func run(reporting commits: RecordStoreCommits) async throws { try await records.run(reporting: commits) }

    public func read(after position: UInt64?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<UInt64> {
        try await records.read(after: position, limit: limit)
    }

    public func acknowledge(through position: UInt64) async throws(AnalyticsSinkError) {
        try await records.acknowledge(through: position)
    }

    /// The sessions of this log, as a ``SessionPersistence``.
    public var sessions: Sessions { Sessions(log: self) }

    /// See ``InMemorySessionLog/sessions``.
    public struct Sessions: SessionPersistence {
        let log: InMemorySessionLog

        public func load(userID: String) async throws(ContainerError) -> StoredSession? {
            guard let session = log.sessionLines.withLock({ $0[Array(userID.utf8)] }), !session.lines.isEmpty else {
                return nil
            }
            var fold = SessionFold()
            for line in session.lines {
                if line.snapshot {
                    do throws(ContainerError) {
                        let snapshot = try SessionSnapshot(jsonText: line.text)
                        fold.apply(snapshot: snapshot, version: line.version, id: line.id)
                    } catch {
                        fold.skip(version: line.version, id: line.id, problem: error.message)
                    }
                } else {
                    fold.apply(deltaText: line.text, version: line.version, id: line.id)
                }
            }
            return fold.stored
        }

        public func endedVersion(userID: String) async throws(ContainerError) -> Int64 {
            log.sessionLines.withLock { sessions in
                guard let session = sessions[Array(userID.utf8)], session.ended else { return 0 }
                return session.head
            }
        }

        public func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult {
            var superseded: [String] = []
            for change in changes {
                switch change {
                case .save(let stored):
                    do {
                        _ = try log.append(EncodedRecords([], sessions: [SessionCheckpoint(stored)]))
                    } catch {
                        superseded.append(stored.userID)
                    }
                case .remove(let userID, let version):
                    let kept = log.sessionLines.withLock { sessions -> Bool in
                        let key = Array(userID.utf8)
                        guard var session = sessions[key], !session.ended else { return true }
                        guard session.head <= version else { return false }
                        session = Session(head: version, headID: SessionCheckpoint.makeID(), lines: [], ended: true)
                        sessions[key] = session
                        return true
                    }
                    if !kept { superseded.append(userID) }
                }
            }
            return SessionSaveResult(superseded: superseded)
        }
    }
}
