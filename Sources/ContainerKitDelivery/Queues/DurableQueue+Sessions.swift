import ContainerKit

extension DurableQueue {
    /// The sessions this queue keeps in its segment log, as a ``SessionPersistence``: a ``SessionStore``
    /// configured with it and with `RecordCommitter(queue, keepsSessions: true)` keeps every session in the
    /// same log as the records — each push's delta (and now and then its snapshot) in the push's own append,
    /// one format, one checksum, one writer thread and one group commit for both.
    ///
    /// ```swift
    /// let queue = try DurableQueue(directory: "/var/lib/app/queue", destination: braze)
    /// let sessions = SessionStore(
    ///     tagManager: manager,
    ///     configuration: .init(persistence: queue.sessions, committer: RecordCommitter(queue, keepsSessions: true))
    /// )
    /// BrazeTagProvider(sink: CommitSink()).register(on: manager)
    /// // in the service's task group:  try await queue.run();  try await sessions.run()
    /// try await sessions.push(event: "played song", for: "user-42")   // records + session change, one fsync
    /// ```
    ///
    /// A load on a miss reads the user's last snapshot and the deltas after it (on the queue's reader thread,
    /// never on the caller's) and applies them; a line that cannot be applied (a changed byte, a gap) stops the
    /// fold there, is counted (``DurableQueue/Statistics``) and logged with the user id, and the session's next
    /// commit is a snapshot fenced at the newest version the log holds. Delivered segments are kept while they
    /// hold a line a load reads; when more than two are, the oldest is compacted (its sessions' chains folded
    /// into new snapshots at the head of the log) and deleted.
    public var sessions: DurableQueueSessions { DurableQueueSessions(queue: self) }
}

/// The sessions of a ``DurableQueue`` (see ``DurableQueue/sessions``).
public struct DurableQueueSessions: SessionPersistence {
    /// The queue whose log holds the sessions.
    public let queue: DurableQueue

    public func load(userID: String) async throws(ContainerError) -> StoredSession? {
        let fold: SessionFold?
        do {
            fold = try await queue.store.loadSession(userID)
        } catch {
            throw ContainerError(
                .io,
                "cannot load the session of '\(userID)' from '\(queue.directory)': \(error.message)"
            )
        }
        guard let fold else { return nil }
        if fold.unapplied > 0 {
            queue.reportUnapplied(userID: userID, fold: fold)
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
            tickets = try queue.store.appendSessionLines(lines)
        } catch {
            throw ContainerError(.io, "cannot save sessions into '\(queue.directory)': \(error.message)")
        }
        if let last = tickets.last { queue.pipeline.noteAppended(ticket: last) }
        var superseded: [String] = []
        var failure: DurabilityError?
        for (change, ticket) in zip(changes, tickets) {
            do {
                try await queue.waitUntilDurable(ticket: ticket)
            } catch {
                if error.code == .superseded { superseded.append(change.userID) } else { failure = failure ?? error }
            }
        }
        if let failure {
            throw ContainerError(.io, "cannot save sessions into '\(queue.directory)': \(failure.message)")
        }
        return SessionSaveResult(superseded: superseded)
    }

    public func endedVersion(userID: String) async throws(ContainerError) -> Int64 {
        queue.store.endedVersion(userID)
    }
}

extension DurableQueue {
    /// Logs that a load of `userID` could not apply some of its session lines.
    func reportUnapplied(userID: String, fold: SessionFold) {
        logs.log(
            .warning,
            key: "unapplied-session",
            "a session was loaded without lines that cannot be applied; its next commit is a snapshot",
            metadata: [
                "queue": directory, "user_id": userID, "unapplied": String(fold.unapplied),
                "problem": fold.problem ?? "",
            ]
        )
    }
}

extension DurableQueue {
    /// Writes `sessions` into the log as snapshots, durably, before the queue runs: how a service moves the
    /// sessions of another store (the files of an earlier version's `FileSessionPersistence`, read with
    /// `LegacySessionFiles`) into the one log once. A session the log already holds at the same or a newer
    /// version is left as it is.
    /// - Returns: how many sessions were written.
    /// - Throws: `.closed` once ``run()`` started; the write's error (nothing of it is kept then).
    @discardableResult
    public func importSessions(_ sessions: [StoredSession]) throws(AnalyticsSinkError) -> Int {
        try store.importSessions(sessions)
    }
}

extension SegmentRecordStore {
    /// See ``DurableQueue/importSessions(_:)``: one commit, written and synced on the caller's thread (no
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

extension DurableQueue {
    /// Returns once the compactions of the session lines started so far are written and the segments they
    /// freed are deleted (for tests: a compaction runs beside the writer).
    func settleSessionCompactions() async throws {
        for _ in 0..<20 {
            await store.drainReaderJobs()
            try await waitUntilDurable(ticket: store.lastTicket)
            await store.drainReaderJobs()
            guard store.segmentsKeptForSessions > DurableQueueMachine.maximumRetainedSegments else { return }
            // More kept than a compaction allows (the writer started segments faster than compactions ran):
            // compact the oldest now.
            await store.compactOldestNow()
        }
    }
}
