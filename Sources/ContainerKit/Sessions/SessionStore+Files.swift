// SessionStore: snapshots of every session, and carrying them across a clean restart as one file.

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension SessionStore {
    /// The longest line (one session's snapshot) ``restore(from:)`` reads: 16 MiB; a longer one is
    /// skipped as unreadable.
    public static let maximumSnapshotBytes = SessionFileReader.maximumLineBytes

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
