public import ContainerKit

extension DeliveryPipeline where Store == SegmentRecordStore {
    /// The sessions this pipeline keeps in its segment log, as a ``SessionPersistence``: a ``SessionStore``
    /// configured with it and with `RecordCommitter(pipeline, keepsSessions: true)` keeps every session in the
    /// same log as the records — each push's delta (and now and then its snapshot) in the push's own append,
    /// one format, one checksum, one writer thread and one group commit for both.
    ///
    /// ```swift
    /// let pipeline = try DeliveryPipeline.durable(directory: "/var/lib/app/queue", destination: braze)
    /// let sessions = SessionStore(
    ///     tagManager: manager,
    ///     configuration: .init(persistence: pipeline.sessions, committer: RecordCommitter(pipeline, keepsSessions: true))
    /// )
    /// BrazeTagProvider(sink: CommitSink()).register(on: manager)
    /// // in the service's task group:  try await pipeline.run();  try await sessions.run()
    /// try await sessions.push(event: "played song", for: "user-42")   // records + session change, one fsync
    /// ```
    ///
    /// A load on a miss reads the user's last snapshot and the deltas after it (on the store's reader thread,
    /// never on the caller's) and applies them; a line that cannot be applied (a changed byte, a gap) stops the
    /// fold there, is counted (``DeliveryStatistics/unappliedSessionLines``) and logged with the user id, and the
    /// session's next commit is a snapshot fenced at the newest version the log holds. Delivered segments are
    /// kept while they hold a line a load reads; when more than two are, the oldest is compacted (its sessions'
    /// chains folded into new snapshots at the head of the log) and deleted.
    public var sessions: SegmentLogSessions { SegmentLogSessions(pipeline: self) }

    /// Writes `sessions` into the log as snapshots, durably, before the pipeline runs: how a service moves the
    /// sessions of another store (the files of an earlier version's `FileSessionPersistence`, read with
    /// `LegacySessionFiles`) into the one log once. A session the log already holds at the same or a newer
    /// version is left as it is.
    /// - Returns: how many sessions were written.
    /// - Throws: `.closed` once ``run()`` started; the write's error (nothing of it is kept then).
    @discardableResult
    public func importSessions(_ sessions: [StoredSession]) throws(AnalyticsSinkError) -> Int {
        try store.importSessions(sessions)
    }

    /// Returns once the compactions of the session lines started so far are written and the segments they
    /// freed are deleted (for tests: a compaction runs beside the writer).
    func settleSessionCompactions() async throws {
        for _ in 0..<20 {
            await store.drainReaderJobs()
            try await waitUntilDurable(ticket: store.lastTicket)
            await store.drainReaderJobs()
            guard store.segmentsKeptForSessions > SegmentLogMachine.maximumRetainedSegments else { return }
            // More kept than a compaction allows (the writer started segments faster than compactions ran):
            // compact the oldest now.
            await store.compactOldestNow()
        }
    }
}

/// The sessions of a durable pipeline's segment log (see ``DeliveryPipeline/sessions``).
public struct SegmentLogSessions: SessionPersistence {
    /// The pipeline whose log holds the sessions.
    public let pipeline: DeliveryPipeline<SegmentRecordStore>

    public func load(userID: String) async throws(ContainerError) -> StoredSession? {
        let fold: SessionFold?
        do {
            fold = try await pipeline.store.loadSession(userID)
        } catch {
            throw ContainerError(
                .io,
                "cannot load the session of '\(userID)' from '\(pipeline.store.directory)': \(error.message)"
            )
        }
        guard let fold else { return nil }
        if fold.unapplied > 0 {
            pipeline.logWarning(
                key: "unapplied-session",
                "a session was loaded without lines that cannot be applied; its next commit is a snapshot",
                metadata: [
                    "user_id": userID, "unapplied": String(fold.unapplied), "problem": fold.problem ?? "",
                ]
            )
        }
        return fold.stored
    }

    public func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult {
        var lines: [(header: SessionLine, body: ((inout JSONByteWriter) -> Void)?)] = []
        for change in changes {
            switch change {
            case .save(let stored):
                lines.append(SessionLine.snapshot(stored))
            case .remove(let userID, let version):
                lines.append((SessionLine(userID: userID, version: version, expected: version, kind: .removal), nil))
            }
        }
        let tickets: [UInt64]
        do {
            tickets = try pipeline.store.appendSessionLines(lines)
        } catch {
            throw ContainerError(.io, "cannot save sessions into '\(pipeline.store.directory)': \(error.message)")
        }
        if let last = tickets.last { pipeline.noteAppended(ticket: last) }
        var superseded: [String] = []
        var failure: DurabilityError?
        for (change, ticket) in zip(changes, tickets) {
            do {
                try await pipeline.waitUntilDurable(ticket: ticket)
            } catch {
                if error.code == .superseded { superseded.append(change.userID) } else { failure = failure ?? error }
            }
        }
        if let failure {
            throw ContainerError(.io, "cannot save sessions into '\(pipeline.store.directory)': \(failure.message)")
        }
        return SessionSaveResult(superseded: superseded)
    }

    public func endedVersion(userID: String) async throws(ContainerError) -> Int64 {
        pipeline.store.endedVersion(userID)
    }
}

extension SegmentRecordStore {
    /// See ``DeliveryPipeline/importSessions(_:)``: one commit, written and synced on the caller's thread (no
    /// writer runs yet).
    func importSessions(_ sessions: [StoredSession]) throws(AnalyticsSinkError) -> Int {
        guard !sessions.isEmpty else { return 0 }
        guard !isRunning else {
            throw AnalyticsSinkError(.closed, "sessions are imported before the queue runs")
        }
        _ = try appendSessionLines(sessions.map(SessionLine.snapshot))
        return try commitNow()
    }
}
