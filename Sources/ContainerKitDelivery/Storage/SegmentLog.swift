import ContainerKit
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A fault to inject into a ``SegmentLog`` (tests of full disks and failing devices): the hook sees each
/// operation and the file it touches, and returns an `errno` to fail it with, or `nil` to let it run.
package struct SegmentLogFaults: Sendable {
    /// The operations that can fail.
    package enum Operation: Sendable, Hashable {
        /// Creating a new segment file.
        case create
        /// Writing a commit's bytes.
        case write
        /// `fsync` of a segment after a write.
        case sync
        /// Writing the ack file.
        case acknowledge
        /// Opening a segment to read it (delivery).
        case open
        /// Reading a segment's bytes (delivery).
        case read
    }

    /// Decides whether `operation` on `path` fails.
    package var hook: @Sendable (Operation, String) -> Int32?

    /// Creates a fault injector.
    package init(_ hook: @escaping @Sendable (Operation, String) -> Int32?) { self.hook = hook }
}

/// The files of a segment log's directory (``SegmentRecordStore``): it owns appending, `fsync`, rotating, acknowledging and
/// reading.
///
/// - `segment-<20-digit index>.jsonl`: append-only segments of record lines (``AnalyticsRecord/jsonLine``
///   plus a line feed). Only the newest segment of a running queue is written; a queue opening the
///   directory always writes to a new one (created with its first commit, so a run that commits
///   nothing, or whose first commit fails, leaves no empty segment), so a torn line can only be the last
///   line of a sealed segment.
/// - `ack`: `v1 <segment> <offset>\n`, the position just after the last record the destination
///   confirmed. Opening writes it atomically (temporary file, `fsync`, `rename`, `fsync` of the directory)
///   with fixed-width numbers; each acknowledged batch then overwrites it in place (one `pwrite` of 45
///   bytes, within one disk sector), synced at most once per second, before deleting a segment and at the
///   end of a run. An unreadable ack replays everything.
/// - `lock`: held with `flock` while a queue has the directory open.
///
/// Writing (``append(_:to:at:)``) happens on the queue's writer thread only; acknowledging and reading on
/// its delivery loop. A failed append leaves no trace: the segment is truncated back to its last good
/// size (or a segment created for the commit is removed).
///
/// ``close()`` may race an acknowledgement: a pipeline cancelled while it writes one runs it on its own
/// task while the store closes the log. The ack's descriptor is used and closed under one lock, so that
/// acknowledgement either completes first or fails (`.closed`) — it never writes to a descriptor number
/// the process has since reused for another file (a segment of another queue took the ack's 45 bytes so).
final class SegmentLog: @unchecked Sendable {
    /// The queue's directory.
    let directory: String
    private let faults: SegmentLogFaults?
    /// The ack and the directory lock, open until ``close()``.
    private struct Files {
        var ack: Int32
        var lock: Int32
        /// The newest position acknowledged.
        var lastAcknowledged: Position?
    }
    private let files: Mutex<Files>
    /// Whether ``close()`` ran. Set under ``files``' lock, and read under it where a descriptor is used; an append
    /// reads it without (the writer stops before a close).
    private let closed = Atomic<Bool>(false)
    // The writer thread's: the segment being appended to (closed by ``close()`` once the writer stopped).
    private var activeFD: Int32 = -1
    private var activeIndex: UInt64 = 0

    /// Opens `directory` (creating it), takes its lock, validates the ack and the segments, deletes the
    /// segments the ack confirms and rewrites the ack in its fixed-width form.
    /// - Throws: `.unwritable`/`.io` when the directory cannot be used, `.locked` when another queue has
    ///   it, `.corruptFile` for an ack or segment name out of range.
    init(directory: String, faults: SegmentLogFaults? = nil) throws(AnalyticsSinkError) {
        self.directory = directory
        self.faults = faults
        try FileIO.makeDirectory(directory)
        let lockPath = Self.path(directory, Self.lockFileName)
        let lock = try FileIO.openFile(lockPath, O_RDWR | O_CREAT)
        guard flock(lock, LOCK_EX | LOCK_NB) == 0 else {
            let number = errno
            closeFD(lock)
            if number == EWOULDBLOCK {
                throw AnalyticsSinkError(.locked, "queue directory '\(directory)' is in use by another queue")
            }
            throw FileIO.error("locking", lockPath, errorNumber: number)
        }
        _ = unlink(Self.path(directory, Self.ackFileName + ".tmp"))
        var warnings: [String] = []
        let ack: Position?
        let found: [SegmentExtent]
        do {
            ack = try Self.readAck(directory, warnings: &warnings)
            found = try Self.listSegments(directory)
        } catch {
            closeFD(lock)
            throw error
        }
        let (cursor, confirmed, kept) = Self.recover(
            ack: ack,
            segments: found,
            directory: directory,
            warnings: &warnings
        )
        // Sessions live in the segments too: every segment is read for them, and a delivered segment is kept
        // while it holds a line a load still reads.
        var sessions = SessionIndex()
        var sessionProblems = 0
        do {
            sessionProblems = try Self.scanSessions(
                directory,
                segments: confirmed + kept,
                into: &sessions,
                warnings: &warnings
            )
        } catch {
            closeFD(lock)
            throw error
        }
        var retained: [SegmentExtent] = []
        for segment in confirmed {
            if sessions.isPinned(segment.index) {
                retained.append(segment)
            } else {
                _ = unlink(Self.path(directory, Self.segmentName(segment.index)))
            }
        }
        let ackPath = Self.path(directory, Self.ackFileName)
        do {
            files = Mutex(Files(ack: try Self.openAck(ackPath, at: cursor, faults: faults), lock: lock))
        } catch {
            closeFD(lock)
            throw error
        }
        // A queue whose ack points at a segment not written yet (a fresh queue's is segment 1) writes that
        // segment next, so a restart finds the ack at a segment that is there.
        let nextIndex = kept.last.map { max($0.index + 1, cursor.segment + 1) } ?? max(cursor.segment, 1)
        recovery = Recovery(
            segments: retained + kept,
            cursor: cursor,
            nextIndex: nextIndex,
            warnings: warnings,
            sessions: sessions,
            unreadableSessionLines: sessionProblems
        )
    }

    /// What opening found.
    private(set) var recovery: Recovery

    private func fault(_ operation: SegmentLogFaults.Operation, _ path: String) -> AnalyticsSinkError? {
        Self.fault(faults, operation, path)
    }

    /// The injected failure of `operation` on `path`, if any.
    static func fault(
        _ faults: SegmentLogFaults?,
        _ operation: SegmentLogFaults.Operation,
        _ path: String
    ) -> AnalyticsSinkError? {
        guard let number = faults?.hook(operation, path) else { return nil }
        let verb: String
        switch operation {
        case .create: verb = "creating"
        case .write: verb = "writing"
        case .sync: verb = "syncing"
        case .acknowledge: verb = "writing"
        case .open: verb = "opening"
        case .read: verb = "reading"
        }
        return FileIO.error(verb, path, errorNumber: number)
    }

    /// How a failed append left the segment it wrote to.
    enum AppendFailure: Error {
        /// Nothing of the commit remains; the segment can be appended to again.
        case clean(AnalyticsSinkError)
        /// The segment may hold part of the commit beyond its last good size: seal it and use a new one.
        case segmentUnusable(AnalyticsSinkError)

        var error: AnalyticsSinkError {
            switch self {
            case .clean(let error), .segmentUnusable(let error): return error
            }
        }
    }

    /// Appends `bytes` to segment `index` at `offset` (its current good size) and `fdatasync`s it; creates the
    /// segment (and syncs the directory) when `index` is new. On failure nothing of the commit is left
    /// behind: the segment is truncated back to `offset`, or removed when this commit created it.
    /// Writer thread only.
    func append(_ bytes: [UInt8], to index: UInt64, at offset: Int) throws(AppendFailure) {
        let path = Self.path(directory, Self.segmentName(index))
        guard index <= Self.maximumSegmentIndex else {
            // Creating it would leave a file the next open refuses as corrupt.
            throw .clean(
                AnalyticsSinkError(
                    .queueFull,
                    "segment indexes are used up: '\(Self.segmentName(index))' would pass the largest a queue "
                        + "reads (\(Self.maximumSegmentIndex)); deliver the backlog, stop the queue and remove '\(directory)'"
                )
            )
        }
        var created = false
        if closed.load(ordering: .acquiring) { throw .clean(closedError("no commit is written")) }
        if index != activeIndex || activeFD < 0 {
            if let error = fault(.create, path) { throw .clean(error) }
            let fd: Int32
            do {
                fd = try FileIO.openFile(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND)
            } catch {
                throw .clean(error)
            }
            if activeFD >= 0 { closeFD(activeFD) }
            activeFD = fd
            activeIndex = index
            created = true
        }
        do throws(AnalyticsSinkError) {
            if let error = fault(.write, path) { throw error }
            try FileIO.writeAll(activeFD, bytes, path: path)
            if let error = fault(.sync, path) { throw error }
            // The data and the new size; not the timestamps (fsync's extra journal update cost ~18% more
            // per commit on this machine's disk, and the commit's latency bounds the group commit's rate).
            try FileIO.syncData(activeFD, path: path)
            if created { try FileIO.syncDirectory(directory) }
        } catch {
            if created {
                closeFD(activeFD)
                activeFD = -1
                _ = unlink(path)
                throw .clean(error)
            }
            if ftruncate(activeFD, off_t(offset)) == 0 && fsync(activeFD) == 0 { throw .clean(error) }
            closeFD(activeFD)
            activeFD = -1
            throw .segmentUnusable(error)
        }
        do throws(AnalyticsSinkError) {
            try Self.checkLinked(activeFD, path: path)
        } catch {
            // Deleted under the writer: nothing of it is found after a restart; the next commit starts a new one.
            closeFD(activeFD)
            activeFD = -1
            throw .segmentUnusable(error)
        }
    }

    /// Fails when the segment open as `fd` has been deleted (`st_nlink` is 0): what was just synced went to
    /// a file no restart will find, so the commit must not be reported durable.
    private static func checkLinked(_ fd: Int32, path: String) throws(AnalyticsSinkError) {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw FileIO.error("checking", path) }
        guard info.st_nlink > 0 else {
            throw AnalyticsSinkError(
                .io,
                "segment '\(path)' was deleted while the queue wrote it; its last commit is not durable",
                errorNumber: ENOENT
            )
        }
    }

    /// Opens the ack file at `path` for the in-place writes of ``acknowledge(_:deleting:sync:)`` and makes it
    /// hold `cursor`. An existing ack is only written when it differs, in place (one `pwrite` within its
    /// first block, then `fdatasync`): that needs no free block, so a queue opens — and drains — on a full
    /// disk. Only a missing ack is created, atomically through a temporary file.
    static func openAck(_ path: String, at cursor: Position, faults: SegmentLogFaults?) throws(AnalyticsSinkError)
        -> Int32
    {
        let text = Array(ackText(cursor).utf8)
        let fd: Int32
        do {
            fd = try FileIO.openFile(path, O_RDWR)
        } catch {
            guard error.errorNumber == ENOENT else { throw error }
            if let error = fault(faults, .create, path + ".tmp") { throw error }
            try FileIO.replaceFile(path, with: text)
            return try FileIO.openFile(path, O_RDWR)
        }
        do throws(AnalyticsSinkError) {
            let current = try FileIO.readBytes(fd, count: text.count + 1, at: 0, path: path)
            if current != text {
                if let error = fault(faults, .acknowledge, path) { throw error }
                let written = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
                guard written == text.count else {
                    throw FileIO.error("writing", path, errorNumber: written < 0 ? errno : EIO)
                }
                if current.count > text.count, ftruncate(fd, off_t(text.count)) != 0 {
                    throw FileIO.error("truncating", path)
                }
                while fdatasync(fd) != 0 { if errno != EINTR { throw FileIO.error("syncing", path) } }
            }
            return fd
        } catch {
            closeFD(fd)
            throw error
        }
    }

    /// Records that everything before `position` is delivered — one in-place `pwrite` of the 45-byte ack,
    /// which a process crash cannot undo — then deletes the fully delivered segments `deleting`. The ack
    /// is `fdatasync`ed first when `sync` is set or segments are deleted (so a power loss cannot keep an
    /// older ack pointing at a deleted segment); otherwise it is left to the page cache: an ack that a
    /// power loss rolls back only re-delivers records, it never skips any.
    func acknowledge(_ position: Position, deleting: [UInt64], sync: Bool) throws(AnalyticsSinkError) {
        let path = Self.path(directory, Self.ackFileName)
        if let error = fault(.acknowledge, path) { throw error }
        try files.withLock { files throws(AnalyticsSinkError) in
            // Closed: the directory may be another queue's by now (its lock is released).
            guard !closed.load(ordering: .relaxed) else {
                throw closedError("the acknowledgement through \(position) is not written (delivered again later)")
            }
            // Two callers queue acknowledgements (delivery, and a commit whose session lines freed segments): one
            // queued later with an older position must not move the ack back.
            let position = max(position, files.lastAcknowledged ?? position)
            files.lastAcknowledged = position
            let bytes = Array(Self.ackText(position).utf8)
            let written = bytes.withUnsafeBytes { pwrite(files.ack, $0.baseAddress, $0.count, 0) }
            guard written == bytes.count else {
                throw FileIO.error("writing", path, errorNumber: written < 0 ? errno : EIO)
            }
            if sync || !deleting.isEmpty { try Self.syncData(files.ack, path: path) }
            for index in deleting { _ = unlink(Self.path(directory, Self.segmentName(index))) }
        }
    }

    /// `fdatasync`s the ack file (nothing once closed).
    func syncAck() throws(AnalyticsSinkError) {
        let path = Self.path(directory, Self.ackFileName)
        try files.withLock { files throws(AnalyticsSinkError) in
            guard !closed.load(ordering: .relaxed) else { return }
            try Self.syncData(files.ack, path: path)
        }
    }

    private static func syncData(_ fd: Int32, path: String) throws(AnalyticsSinkError) {
        while fdatasync(fd) != 0 {
            if errno != EINTR { throw FileIO.error("syncing", path) }
        }
    }

    /// The error of a step asked of a closed log.
    private func closedError(_ consequence: String) -> AnalyticsSinkError {
        AnalyticsSinkError(.closed, "the segment log in '\(directory)' is closed: \(consequence)")
    }

    /// Closes the files and releases the directory's lock; an acknowledgement running meanwhile finishes
    /// first, and one asked for later fails. Call once the writer stopped. Safe to call twice.
    func close() {
        files.withLock { files in
            guard !closed.load(ordering: .relaxed) else { return }
            closed.store(true, ordering: .releasing)
            if activeFD >= 0 { closeFD(activeFD) }
            activeFD = -1
            closeFD(files.ack)
            closeFD(files.lock)
        }
    }

    deinit { close() }

    /// A place in the log: a segment and a byte offset in it (``SegmentPosition``).
    typealias Position = SegmentPosition

    /// A segment's index and how many of its bytes may be read.
    struct SegmentExtent: Sendable, Hashable {
        var index: UInt64
        var size: Int
    }

    /// Records read from segments, the position after the last line consumed, and how many lines
    /// were skipped (torn, unparsable or corrupt).
    struct ReadResult: Sendable {
        var records: [AnalyticsRecord] = []
        var end: Position
        var skippedLines = 0
        /// Of ``skippedLines``, those whose checksum did not match.
        var corruptLines = 0
        /// Segments skipped whole because they are not files (named in `messages`).
        var skippedSegments = 0
        var messages: [String] = []
        /// Why the read stopped at ``end`` before the data asked for: a segment could not be opened or read
        /// right now. Nothing at or after ``end`` may be acknowledged; the read is retried later.
        var failure: AnalyticsSinkError?
    }

    /// What opening a directory found.
    struct Recovery: Sendable {
        /// The segments present, oldest first (all sealed).
        var segments: [SegmentExtent]
        /// Where delivery starts.
        var cursor: Position
        /// The index the first new segment gets.
        var nextIndex: UInt64
        /// Problems found (an ack that does not fit the segments), as warnings naming the files.
        var warnings: [String]
        /// The sessions the segments hold.
        var sessions = SessionIndex()
        /// Session lines that could not be read (a changed byte): the loads of their users stop before them.
        var unreadableSessionLines = 0
    }

    /// Segment indexes above this (and acks pointing above it) are refused as corrupt, so index
    /// arithmetic can never overflow.
    static let maximumSegmentIndex: UInt64 = 999_999_999_999_999_999

    static let ackFileName = "ack"
    static let lockFileName = "lock"

    static func segmentName(_ index: UInt64) -> String {
        let digits = String(index)
        return "segment-" + String(repeating: "0", count: max(0, 20 - digits.utf8.count)) + digits + ".jsonl"
    }

    static func segmentIndex(fromName name: String) -> UInt64? {
        guard name.hasPrefix("segment-"), name.hasSuffix(".jsonl") else { return nil }
        return UInt64(name.dropFirst(8).dropLast(6))
    }

    static func path(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The segments in `directory`, oldest first, with their sizes on disk.
    static func listSegments(_ directory: String) throws(AnalyticsSinkError) -> [SegmentExtent] {
        var segments: [SegmentExtent] = []
        for name in try FileIO.listDirectory(directory) {
            guard let index = segmentIndex(fromName: name) else { continue }
            let path = path(directory, name)
            guard index <= maximumSegmentIndex else {
                throw AnalyticsSinkError(
                    .corruptFile,
                    "segment '\(path)' has the index \(index), beyond the largest a queue writes (\(maximumSegmentIndex))"
                )
            }
            var info = stat()
            guard stat(path, &info) == 0 else {
                // A running queue deletes segments once they are confirmed; one may vanish meanwhile.
                if errno == ENOENT { continue }
                throw FileIO.error("reading", path)
            }
            segments.append(SegmentExtent(index: index, size: Int(info.st_size)))
        }
        return segments.sorted { $0.index < $1.index }
    }

    /// The ack line, numbers zero-padded to 20 digits so every ack has the same length (45 bytes).
    static func ackText(_ position: Position) -> String {
        func padded(_ n: UInt64) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, 20 - digits.utf8.count)) + digits
        }
        return "v1 \(padded(position.segment)) \(padded(UInt64(max(position.offset, 0))))\n"
    }

    /// The confirmed position; `nil` when there is no ack file, or (with a warning in `warnings`) when it
    /// is unreadable — then everything is replayed.
    /// - Throws: `.corruptFile` naming the file when it holds numbers out of range.
    static func readAck(_ directory: String, warnings: inout [String]) throws(AnalyticsSinkError) -> Position? {
        let path = path(directory, ackFileName)
        guard let bytes = try FileIO.readFile(path) else { return nil }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: " ")
        guard parts.count == 3, parts[0] == "v1", parts[2].hasSuffix("\n"),
            parts[1].allSatisfy(\.isASCIIDigit), parts[2].dropLast().allSatisfy(\.isASCIIDigit),
            !parts[1].isEmpty, parts[2].count > 1
        else {
            warnings.append("ack file '\(path)' is unreadable; every segment present is delivered again")
            return nil
        }
        guard let segment = UInt64(parts[1]), segment <= maximumSegmentIndex,
            let offset = Int(parts[2].dropLast()), offset <= Int(Int32.max) * 1024
        else {
            throw AnalyticsSinkError(
                .corruptFile,
                "ack file '\(path)' holds a position out of range ('\(parts[1]) \(parts[2].dropLast())'); "
                    + "remove it to deliver every segment again"
            )
        }
        return Position(segment: segment, offset: offset)
    }

    /// Where delivery starts given the ack and the segments present, and which segments the ack
    /// confirms (to delete). An ack past its segment's end or at a segment that is not there does not
    /// fit the files: it is reported and nothing is skipped.
    static func recover(
        ack: Position?,
        segments: [SegmentExtent],
        directory: String,
        warnings: inout [String]
    ) -> (cursor: Position, confirmed: [SegmentExtent], kept: [SegmentExtent]) {
        let nextIndex = (segments.last.map { $0.index + 1 } ?? 1)
        guard let ack else {
            return (Position(segment: segments.first?.index ?? nextIndex, offset: 0), [], segments)
        }
        let ackPath = path(directory, ackFileName)
        guard let segment = segments.first(where: { $0.index == ack.segment }) else {
            if let first = segments.first {
                warnings.append(
                    "ack file '\(ackPath)' points at segment \(ack.segment), which is not there; delivering the "
                        + "\(segments.count) segments present (from '\(segmentName(first.index))') again"
                )
                return (Position(segment: first.index, offset: 0), [], segments)
            }
            return (Position(segment: max(ack.segment, nextIndex), offset: 0), [], [])
        }
        let confirmed = segments.filter { $0.index < ack.segment }
        let kept = segments.filter { $0.index >= ack.segment }
        guard ack.offset <= segment.size else {
            warnings.append(
                "ack file '\(ackPath)' points at offset \(ack.offset) of '\(segmentName(segment.index))', "
                    + "past its end (\(segment.size) bytes); delivering that segment again from its start"
            )
            return (Position(segment: ack.segment, offset: 0), confirmed, kept)
        }
        return (ack, confirmed, kept)
    }

    /// Reads up to `limit` records from `start`, through `segments` (oldest first), never past each
    /// segment's `size`. A segment's unterminated last line is skipped as torn when `sealed(index)`;
    /// in an open segment it is left for later.
    ///
    /// Only provably bad data is skipped: a torn last line, a line that is not a record, a line whose
    /// checksum does not match, and a segment that is not a file (a directory). A failure to open or read
    /// a segment (`EMFILE`, `EIO`, `EACCES`, …) stops the read before it: ``ReadResult/failure`` says why,
    /// ``ReadResult/end`` stays before the bytes not read, and the caller retries later without
    /// acknowledging past them.
    static func read(
        _ directory: String,
        from start: Position,
        segments: [SegmentExtent],
        limit: Int,
        sealed: (UInt64) -> Bool,
        faults: SegmentLogFaults? = nil
    ) -> ReadResult {
        var result = ReadResult(end: start)
        var position = start
        for segment in segments where segment.index >= position.segment {
            if segment.index > position.segment { position = Position(segment: segment.index, offset: 0) }
            guard position.offset < segment.size else {
                result.end = position
                continue
            }
            let path = path(directory, segmentName(segment.index))
            let fd: Int32
            do throws(AnalyticsSinkError) {
                if let error = fault(faults, .open, path) { throw error }
                fd = try FileIO.openFile(path, O_RDONLY)
            } catch {
                // Deleted by a running queue after the listing: it was fully confirmed.
                if error.errorNumber == ENOENT {
                    position = Position(segment: segment.index, offset: segment.size)
                    result.end = position
                    continue
                }
                result.failure = AnalyticsSinkError(
                    error.code,
                    "cannot read segment '\(path)' (\(error.message)); delivery retries it",
                    errorNumber: error.errorNumber
                )
                break
            }
            defer { closeFD(fd) }
            // About what `limit` lines take (a record line is a few hundred bytes), between 16 KiB and 1 MiB: a
            // batch of 75 records reads 38 KiB, not a MiB it parses a twentieth of. A longer line doubles it.
            let (estimate, overflow) = limit.multipliedReportingOverflow(by: Self.readBytesPerLine)
            var chunkSize = overflow ? 1 << 20 : min(1 << 20, max(16 << 10, estimate))
            while position.offset < segment.size && result.records.count < limit {
                let count = min(chunkSize, segment.size - position.offset)
                let bytes: [UInt8]
                do throws(AnalyticsSinkError) {
                    if let error = fault(faults, .read, path) { throw error }
                    bytes = try FileIO.readBytes(fd, count: count, at: position.offset, path: path)
                } catch {
                    if error.errorNumber == EISDIR {
                        // Not a file a queue writes: nothing in it can be read, ever.
                        result.skippedSegments += 1
                        result.messages.append("segment '\(path)' is a directory; it is skipped")
                        position.offset = segment.size
                        break
                    }
                    result.failure = AnalyticsSinkError(
                        error.code,
                        "cannot read segment '\(path)' at offset \(position.offset) (\(error.message)); "
                            + "delivery retries it",
                        errorNumber: error.errorNumber
                    )
                    break
                }
                guard !bytes.isEmpty else { break }
                var lineStart = 0
                var consumedAny = false
                while result.records.count < limit, let newline = bytes[lineStart...].firstIndex(of: 0x0A) {
                    let line = bytes[lineStart..<newline]
                    // Session lines are the sessions' (see ``SessionLine``), not records: passed over unread.
                    if !line.isEmpty && !SessionLine.isSessionLine(line) {
                        switch parseLine(line) {
                        case .success(let record):
                            result.records.append(record)
                        case .failure(let problem):
                            result.skippedLines += 1
                            if problem.checksum { result.corruptLines += 1 }
                            result.messages.append(
                                "skipped \(problem.checksum ? "a corrupt" : "an unreadable") line at "
                                    + "'\(segmentName(segment.index))' offset \(position.offset + lineStart): "
                                    + problem.message
                            )
                        }
                    }
                    lineStart = newline + 1
                    consumedAny = true
                }
                position.offset += lineStart
                if !consumedAny {
                    if position.offset + bytes.count >= segment.size {
                        // No line feed before the end: a torn last line (never acknowledged).
                        if sealed(segment.index) {
                            result.skippedLines += 1
                            result.messages.append(
                                "ignored a torn last line of \(segment.size - position.offset) bytes in "
                                    + "'\(segmentName(segment.index))'"
                            )
                            position.offset = segment.size
                        }
                        break
                    }
                    chunkSize *= 2
                }
            }
            result.end = position
            if result.failure != nil || result.records.count >= limit || position.offset < segment.size { break }
        }
        return result
    }

    /// Reads the session lines of `segments` (oldest first) into `index`, in log order. A line that cannot
    /// be read (its checksum or its JSON) is counted and reported in `warnings` (the first few); its user's
    /// loads stop before the gap it leaves. A torn last line is ignored.
    /// - Throws: when a segment cannot be opened or read (the log cannot be opened now).
    static func scanSessions(
        _ directory: String,
        segments: [SegmentExtent],
        into index: inout SessionIndex,
        warnings: inout [String],
        chunkBytes: Int = 1 << 20,
        maximumLineBytes: Int = maximumSessionLineBytes
    ) throws(AnalyticsSinkError) -> Int {
        var problems = 0
        for segment in segments where segment.size > 0 {
            let path = path(directory, segmentName(segment.index))
            let fd: Int32
            do {
                fd = try FileIO.openFile(path, O_RDONLY)
            } catch {
                if error.errorNumber == ENOENT || error.errorNumber == EISDIR { continue }
                throw error
            }
            defer { closeFD(fd) }
            var offset = 0
            var carry: [UInt8] = []
            // Inside a line longer than any line a queue writes (a damaged file): skipped to its line feed, so that
            // memory stays bounded by a chunk and a line, not by the file.
            var skipping = false
            while offset < segment.size {
                let bytes: [UInt8]
                do throws(AnalyticsSinkError) {
                    bytes = try FileIO.readBytes(
                        fd,
                        count: min(chunkBytes, segment.size - offset),
                        at: offset,
                        path: path
                    )
                } catch {
                    if error.errorNumber == EISDIR { break }
                    throw error
                }
                if bytes.isEmpty { break }
                let chunkStart = offset - carry.count
                let data = carry.isEmpty ? bytes : carry + bytes
                offset += bytes.count
                var lineStart = 0
                if skipping {
                    guard let newline = data.firstIndex(of: 0x0A) else {
                        carry = []
                        continue
                    }
                    lineStart = newline + 1
                    skipping = false
                }
                while let newline = data[lineStart...].firstIndex(of: 0x0A) {
                    let line = data[lineStart..<newline]
                    if SessionLine.isSessionLine(line) {
                        switch SessionLine.parse(line) {
                        case .success(let parsed):
                            let ref = SessionLineRef(
                                segment: segment.index,
                                offset: chunkStart + lineStart,
                                length: newline + 1 - lineStart,
                                version: parsed.header.version,
                                kind: parsed.header.kind
                            )
                            index.add(parsed.header, at: ref)
                        case .failure(let problem):
                            problems += 1
                            if problems <= 3 {
                                warnings.append(
                                    "skipped an unreadable session line at '\(segmentName(segment.index))' offset "
                                        + "\(chunkStart + lineStart): \(problem.message)"
                                )
                            }
                        }
                    }
                    lineStart = newline + 1
                }
                carry = Array(data[lineStart...])
                if carry.count > maximumLineBytes {
                    problems += 1
                    if problems <= 3 {
                        warnings.append(
                            "skipped a line of more than \(maximumLineBytes) bytes at '\(segmentName(segment.index))' "
                                + "offset \(chunkStart + lineStart)"
                        )
                    }
                    carry = []
                    skipping = true
                }
            }
        }
        return problems
    }

    /// The longest line the scan for session lines reads (a session's snapshot is bounded far below it).
    static let maximumSessionLineBytes = 64 << 20

    /// The session line at `ref` (without its line feed), parsed and checked.
    /// - Throws: when the segment cannot be read now; a line that does not parse is a `.failure`.
    static func readSessionLine(_ directory: String, _ ref: SessionLineRef) throws(AnalyticsSinkError)
        -> Result<SessionLine.Parsed, LineProblem>
    {
        let path = path(directory, segmentName(ref.segment))
        let fd = try FileIO.openFile(path, O_RDONLY)
        defer { closeFD(fd) }
        let bytes = try FileIO.readBytes(fd, count: ref.length, at: ref.offset, path: path)
        guard bytes.count == ref.length, bytes.last == 0x0A else {
            return .failure(LineProblem(message: "the session line was cut short", checksum: false))
        }
        return SessionLine.parse(bytes[0..<(bytes.count - 1)])
    }

    /// The bytes a read asks for per record line it wants (the first chunk of a read; lines are 200–400
    /// bytes for typical records).
    static let readBytesPerLine = 512

    /// Why a segment line was skipped.
    struct LineProblem: Error {
        var message: String
        /// The line's checksum does not match its bytes (flipped bits), as opposed to a line that is not a
        /// record.
        var checksum: Bool
    }

    /// The separator between a line's record and its checksum (JSON never holds a raw tab).
    static let checksumSeparator: UInt8 = 0x09

    /// Appends `record` as a segment line: its JSON, a tab, the CRC-32C of the JSON in eight hexadecimal
    /// digits, a line feed.
    static func appendLine(_ record: AnalyticsRecord, to json: inout JSONByteWriter) {
        let start = json.count
        record.write(to: &json)
        let crc = json.withBytes(from: start) { CRC32C.checksum(UnsafeRawBufferPointer($0)) }
        json.raw(checksumSeparator)
        CRC32C.appendHex(crc, to: &json)
        json.raw(0x0A)
    }

    /// The record of a segment line (without its line feed): `<json>\t<crc32c>` as written now, or a bare
    /// JSON line as earlier versions wrote (no checksum to verify).
    static func parseLine(_ line: ArraySlice<UInt8>) -> Result<AnalyticsRecord, LineProblem> {
        var json = line
        if line.count > 9, line[line.endIndex - 9] == checksumSeparator {
            json = line[line.startIndex..<(line.endIndex - 9)]
            guard let stored = CRC32C.parseHex(line[(line.endIndex - 8)...]) else {
                return .failure(LineProblem(message: "its checksum is not 8 hexadecimal digits", checksum: true))
            }
            let actual = CRC32C.checksum(json)
            guard actual == stored else {
                return .failure(LineProblem(message: "checksum mismatch (the bytes changed on disk)", checksum: true))
            }
        }
        do {
            return .success(try AnalyticsRecord(jsonBytes: Array(json)))
        } catch {
            return .failure(LineProblem(message: error.message, checksum: false))
        }
    }
}

private func closeFD(_ fd: Int32) {
    #if canImport(Glibc)
        _ = Glibc.close(fd)
    #else
        _ = Darwin.close(fd)
    #endif
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

/// A place in a segment log (``SegmentRecordStore/Position``): a segment and a byte offset in it. Ordered by
/// segment, then offset.
public struct SegmentPosition: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The segment's index.
    public var segment: UInt64
    /// The byte offset in the segment.
    public var offset: Int

    /// A position.
    public init(segment: UInt64, offset: Int) {
        self.segment = segment
        self.offset = offset
    }

    public static func < (lhs: SegmentPosition, rhs: SegmentPosition) -> Bool {
        (lhs.segment, lhs.offset) < (rhs.segment, rhs.offset)
    }

    public var description: String { "\(segment):\(offset)" }
}
