import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The one-machine ``SessionPersistence``: an append-only log of changed sessions in a private directory,
/// compacted in the background.
///
/// ## Files
/// The directory (created `0700`) holds segments `<number>.sessions`, each created `0600` (they hold user
/// IDs and event parameters). Every ``save(_:)`` appends one line per change to the active segment and
/// `fsync`s it before it returns:
///
/// ```
/// {"v":3,"u":"ada","t":1795000000,"k":"<checksum>","s":{…the SessionSnapshot…}}
/// {"v":3,"u":"bob","t":1795000060,"k":"<checksum>","r":1}     ← bob's session ended (idle, or removed)
/// ```
///
/// `t` is when the line was written (seconds since 1970), `k` the FNV-1a 64 checksum (hex) of every other
/// byte of the line: a changed byte anywhere, in the version or the user ID too, makes the line unreadable
/// instead of giving one user another's session. Lines of the earlier format (`"c"`, a checksum of the
/// snapshot alone, and no time) are still read, so an upgrade loses nothing; their snapshot must name the
/// line's user.
///
/// A write cut short (a full disk) is cut off the file again, or, when that fails too, the next save starts a
/// new segment: a torn tail never swallows a later line.
///
/// When the log outgrows the live sessions (more than twice their bytes), ``run()`` compacts it: the newest
/// line of each live session in the closed segments is written to a temporary file, which then replaces the
/// oldest closed segment (one `rename`), and the other closed segments are deleted oldest first. A crash at
/// any step leaves files whose newest line of each user is what it was: an ended session never comes back.
///
/// ## Expiry
/// With a ``lifetime`` (a ``SessionStore``'s idle timeout, say), a stored session not saved for that long has
/// expired: ``load(userID:)`` no longer returns it, compaction drops it, and ``endedVersion(userID:)``
/// remembers its version so that the user's new session is not refused. Without one, stored sessions are
/// kept until they are removed.
///
/// ## Opening
/// The first ``load(userID:)``, ``save(_:)`` or ``run()`` reads the segments' **index** (user ID, version and
/// position of each line; the snapshots themselves are parsed only when their user comes back), so the
/// start costs one sequential read of the files (a frame and a checksum per line) and no session is
/// rebuilt before its user needs it. Loads wait for that index once; each then reads and parses one line. A torn line (the crash came during an append) or one whose
/// checksum does not match is skipped and counted (``skippedLines``); the newest good version of that user
/// is used. A new active segment is started at each opening, so nothing is appended after a torn line.
///
/// Only regular files named `<number>.sessions` (1 to 999,999,999,999) are read; a FIFO, a device, a
/// directory or a number out of range under that name is left alone and counted (``ignoredFiles``).
public final class FileSessionPersistence: SessionPersistence, Sendable {
    /// The directory of the segments.
    public let directory: String
    /// A segment takes appends until it is this large (64 MiB by default); then a new one starts.
    public let segmentBytes: Int
    /// How often ``run()`` checks whether compaction is due.
    public let compactionCheckInterval: Duration
    /// How long a stored session lives after its last save (`nil`: until it is removed).
    public let lifetime: Duration?
    /// The highest segment number read or written (the file names have 12 digits).
    static let maximumSegmentNumber = 999_999_999_999

    private struct Location {
        var segment: Int
        var offset: Int
        var length: Int
        var version: Int64
        var removed: Bool
        /// When the line was written, in seconds since 1970.
        var time: Int64
    }

    private struct Segment {
        var fd: Int32
        var size: Int
    }

    private struct State {
        var opened = false
        var opening = false
        var waiters: [CheckedContinuation<ContainerError?, Never>] = []
        var index: [SessionKey: Location] = [:]
        var segments: [Int: Segment] = [:]
        var active = 0
        var nextSegment = 1
        var liveBytes = 0
        var skippedLines = 0
        var ignoredFiles = 0
        var compactionFailures = 0
        /// A failed append could not be cut off the active segment: the next save starts a new one.
        var activeIsTorn = false
    }

    private let state = Mutex(State())
    /// Held by each save and by compaction's switch-over, so that fencing decisions and appends are in
    /// one order.
    private let writing = Mutex(())
    /// Seconds since 1970, now.
    private let now: @Sendable () -> Int64
    /// Tests of full disks: given an append's size, how many of its bytes reach the file before it fails
    /// with `ENOSPC` (`nil`: the append works).
    private let appendFault: (@Sendable (Int) -> Int?)?

    /// Creates the persistence of `directory`; nothing is read or created until it is first used.
    /// - Parameters:
    ///   - directory: where the segments live (created `0700` with its missing parents at first use).
    ///   - segmentBytes: the size at which a new segment starts.
    ///   - compactionCheckInterval: how often ``run()`` checks whether compaction is due.
    ///   - lifetime: how long a stored session lives after its last save; `nil` keeps it until it is
    ///     removed. Give it the session store's idle timeout.
    public convenience init(
        directory: String,
        segmentBytes: Int = 64 << 20,
        compactionCheckInterval: Duration = .seconds(5),
        lifetime: Duration? = nil
    ) {
        self.init(
            directory: directory,
            segmentBytes: segmentBytes,
            compactionCheckInterval: compactionCheckInterval,
            lifetime: lifetime,
            now: { Int64(time(nil)) }
        )
    }

    /// A persistence whose clock is `now` (seconds since 1970) and whose appends fail as `appendFault` says,
    /// for tests.
    package init(
        directory: String,
        segmentBytes: Int = 64 << 20,
        compactionCheckInterval: Duration = .seconds(5),
        lifetime: Duration?,
        now: @escaping @Sendable () -> Int64,
        appendFault: (@Sendable (Int) -> Int?)? = nil
    ) {
        self.appendFault = appendFault
        self.directory = directory
        self.segmentBytes = max(4096, segmentBytes)
        self.compactionCheckInterval = compactionCheckInterval
        self.lifetime = lifetime
        self.now = now
    }

    deinit {
        state.withLock { state in
            for segment in state.segments.values { close(segment.fd) }
        }
    }

    /// Lines skipped at opening because they were torn or corrupt.
    public var skippedLines: Int { state.withLock { $0.skippedLines } }

    /// Compactions that failed (a full disk, say); the log is compacted at a later check.
    public var compactionFailures: Int { state.withLock { $0.compactionFailures } }

    /// Entries of the directory named like a segment that were not read: not a regular file (a FIFO, a
    /// device, a directory), or a number out of range.
    public var ignoredFiles: Int { state.withLock { $0.ignoredFiles } }

    /// How many users have a stored session that has not ended or expired.
    public var count: Int {
        let limit = expiryLimit
        return state.withLock { $0.index.values.count { !$0.removed && $0.time >= limit } }
    }

    /// Lines written before this time (seconds since 1970) have expired.
    private var expiryLimit: Int64 {
        guard let lifetime else { return .min }
        return now() &- lifetime.components.seconds
    }

    /// The segment files now (for tests and operators).
    public var segmentPaths: [String] {
        state.withLock { $0.segments.keys.sorted().map(path(of:)) }
    }

    // MARK: SessionPersistence

    public func load(userID: String) async throws(ContainerError) -> StoredSession? {
        try await open()
        let key = SessionKey(userID)
        let limit = expiryLimit
        let line = try state.withLock { state throws(ContainerError) -> [UInt8]? in
            guard let location = state.index[key], !location.removed, location.time >= limit,
                let segment = state.segments[location.segment]
            else { return nil }
            do throws(FileSystemError) {
                return try FileSystem.readBytes(
                    segment.fd,
                    count: location.length,
                    at: location.offset,
                    path: path(of: location.segment)
                )
            } catch {
                throw ContainerError(.io, "cannot read the session of '\(userID)': \(error.reason)")
            }
        }
        guard let line, let parsed = Self.parse(line[...]), let range = parsed.snapshot else {
            if line != nil {
                throw ContainerError(.io, "the stored session of '\(userID)' changed on disk and does not read")
            }
            return nil
        }
        let snapshot = try SessionSnapshot(jsonValue: try Value(jsonBytes: Array(line[range])))
        guard snapshot.sessionID.utf8.elementsEqual(userID.utf8) else {
            // Only a line of the earlier format (whose checksum left the user ID out) can get here.
            throw ContainerError(.io, "the stored session of '\(userID)' names another user and is not used")
        }
        return StoredSession(snapshot: snapshot, version: parsed.version)
    }

    /// The version of `userID`'s ended or expired session while its line is still in the log (0 when there
    /// is none): the store's new session for the user saves versions above it.
    public func endedVersion(userID: String) async throws(ContainerError) -> Int64 {
        try await open()
        let key = SessionKey(userID)
        return state.withLock { $0.index[key]?.version ?? 0 }
    }

    public func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult {
        try await open()
        // Serialised before any lock is taken (the snapshots are the expensive part), every line into one
        // buffer: appended as it is when no line is superseded, as it nearly always is.
        var lines = JSONByteWriter(capacity: 640 * changes.count)
        var frames: [(key: SessionKey, version: Int64, removal: Bool, range: Range<Int>)] = []
        frames.reserveCapacity(changes.count)
        let time = now()
        for index in changes.indices {
            let start = lines.count
            switch changes[index] {
            case .save(let stored):
                Self.writeLine(for: stored, time: time, to: &lines)
                frames.append((SessionKey(stored.userID), stored.version, false, start..<lines.count))
            case .remove(let userID, let version):
                Self.writeRemovalLine(userID: userID, version: version, time: time, to: &lines)
                frames.append((SessionKey(userID), version, true, start..<lines.count))
            }
        }
        return try writing.withLock { _ throws(ContainerError) -> SessionSaveResult in
            var superseded: [String] = []
            // The accepted lines (their frames' indices) and where each goes in the appended bytes.
            var accepted: [(frame: Int, offset: Int)] = []
            accepted.reserveCapacity(frames.count)
            let (fd, start, active) = try state.withLock { state throws(ContainerError) -> (Int32, Int, Int) in
                var offset = 0
                for (index, frame) in frames.enumerated() {
                    let current = state.index[frame.key]
                    var keep = true
                    if frame.removal {
                        if let current, !current.removed {
                            if current.version > frame.version {
                                superseded.append(frame.key.userID)
                                keep = false
                            }
                        } else {
                            keep = false
                        }
                    } else if let current, current.version >= frame.version {
                        superseded.append(frame.key.userID)
                        keep = false
                    }
                    guard keep else { continue }
                    accepted.append((index, offset))
                    offset += frame.range.count
                }
                if state.activeIsTorn, !accepted.isEmpty {
                    try startSegment(&state)
                    state.activeIsTorn = false
                }
                let segment = state.segments[state.active]!
                return (segment.fd, segment.size, state.active)
            }
            if accepted.isEmpty { return SessionSaveResult(superseded: superseded) }
            var buffer = lines.bytes
            if accepted.count < frames.count {
                // Only the accepted lines, in order (their offsets were counted that way).
                let all = buffer
                buffer = []
                for entry in accepted { buffer.append(contentsOf: all[frames[entry.frame].range]) }
            }
            do throws(FileSystemError) {
                if let written = appendFault?(buffer.count) {
                    try FileSystem.writeAll(fd, Array(buffer.prefix(written)), path: path(of: active))
                    throw FileSystemError(step: "writing", path: path(of: active), errorNumber: ENOSPC)
                }
                try FileSystem.writeAll(fd, buffer, path: path(of: active))
                try FileSystem.sync(fd, path: path(of: active))
            } catch {
                // What was appended is not indexed. Cut it off, so that the next line does not start inside a
                // torn one (which would make it unreadable too); when that fails, the next save starts a new
                // segment.
                let cut = ftruncate(fd, off_t(start)) == 0
                state.withLock { state in
                    state.segments[active]?.size = cut ? start : Int(lseek(fd, 0, SEEK_END))
                    if !cut { state.activeIsTorn = true }
                }
                throw ContainerError(.io, "cannot save sessions in '\(directory)': \(error.reason)")
            }
            try state.withLock { state throws(ContainerError) in
                for entry in accepted {
                    let frame = frames[entry.frame]
                    if let old = state.index[frame.key], !old.removed { state.liveBytes -= old.length }
                    state.index[frame.key] = Location(
                        segment: active,
                        offset: start + entry.offset,
                        length: frame.range.count,
                        version: frame.version,
                        removed: frame.removal,
                        time: time
                    )
                    if !frame.removal { state.liveBytes += frame.range.count }
                }
                state.segments[active]?.size = start + buffer.count
                if start + buffer.count >= segmentBytes { try startSegment(&state) }
            }
            return SessionSaveResult(superseded: superseded)
        }
    }

    /// Opens the directory (if no call did yet), then compacts the segments whenever the log has grown to
    /// more than twice the live sessions' bytes, checking every ``compactionCheckInterval``, until the task
    /// is cancelled. Then it returns (every returned save is already durable: there is nothing to drain).
    public func run() async throws {
        try await open()
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: compactionCheckInterval)
            } catch {
                return
            }
            if compactionIsDue {
                do {
                    try compact()
                } catch {
                    // Nothing changed; the log keeps growing until a later compaction succeeds.
                    state.withLock { $0.compactionFailures += 1 }
                }
            }
        }
    }

    // MARK: Opening

    private func open() async throws(ContainerError) {
        enum Step {
            case ready
            case open
            case wait
        }
        let step = state.withLock { state -> Step in
            if state.opened { return .ready }
            if state.opening { return .wait }
            state.opening = true
            return .open
        }
        switch step {
        case .ready:
            return
        case .wait:
            let failure = await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.opened { return true }
                    state.waiters.append(continuation)
                    return false
                }
                if ready { continuation.resume(returning: nil) }
            }
            if let failure { throw failure }
        case .open:
            var failure: ContainerError?
            do {
                try openNow()
            } catch {
                failure = error
            }
            let waiters = state.withLock { state in
                state.opening = false
                state.opened = failure == nil
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume(returning: failure) }
            if let failure { throw failure }
        }
    }

    /// Creates the directory if needed, reads every segment's index and starts a new active segment.
    private func openNow() throws(ContainerError) {
        do {
            try FileSystem.makeDirectory(directory, mode: 0o700)
        } catch {
            throw ContainerError(.io, "cannot create the sessions directory '\(directory)': \(error.reason)")
        }
        let names: [String]
        do {
            names = try FileSystem.listDirectory(directory)
        } catch {
            throw ContainerError(.io, "cannot list the sessions directory '\(directory)': \(error.reason)")
        }
        var numbers: [Int] = []
        var ignored = 0
        for name in names {
            let path = directory + "/" + name
            var info = stat()
            if name.hasSuffix(".tmp") {
                if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG { unlink(path) }
            } else if name.hasSuffix(".sessions") {
                // Only what this class writes: a regular file under a name it would give.
                guard let number = Int(name.dropLast(".sessions".count)),
                    (1...Self.maximumSegmentNumber).contains(number), path == self.path(of: number),
                    lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG
                else {
                    ignored += 1
                    continue
                }
                numbers.append(number)
            }
        }
        guard (numbers.max() ?? 0) < Self.maximumSegmentNumber else {
            throw ContainerError(.io, "the sessions directory '\(directory)' has no segment number left")
        }
        var index: [SessionKey: Location] = [:]
        var segments: [Int: Segment] = [:]
        var skipped = 0
        // Lines of the earlier format have no time: they count as written now.
        let openedAt = now()
        do throws(ContainerError) {
            for number in numbers.sorted() {
                let path = path(of: number)
                guard let fd = try SessionFileReader.open(path) else { continue }
                var size = 0
                do throws(ContainerError) {
                    try SessionFileReader.forEachLine(of: fd, path: path) { line throws(ContainerError) in
                        size = line.offset + (line.bytes?.count ?? 0) + 1
                        guard let bytes = line.bytes else {
                            skipped += 1
                            return
                        }
                        if SessionFileReader.isBlank(bytes) { return }
                        guard let parsed = Self.parse(bytes) else {
                            skipped += 1
                            return
                        }
                        let key = SessionKey(parsed.userID)
                        if let old = index[key], old.version > parsed.version { return }
                        index[key] = Location(
                            segment: number,
                            offset: line.offset,
                            length: bytes.count + 1,
                            version: parsed.version,
                            removed: parsed.snapshot == nil,
                            time: parsed.time ?? openedAt
                        )
                    }
                } catch {
                    close(fd)
                    throw error
                }
                segments[number] = Segment(fd: fd, size: (try? FileSystem.fileSize(fd, path: path)) ?? size)
            }
        } catch {
            for segment in segments.values { close(segment.fd) }
            throw error
        }
        try state.withLock { state throws(ContainerError) in
            state.index = index
            state.segments = segments
            state.liveBytes = index.values.reduce(0) { $0 + ($1.removed ? 0 : $1.length) }
            state.skippedLines += skipped
            state.ignoredFiles += ignored
            state.nextSegment = (numbers.max() ?? 0) + 1
            try startSegment(&state)
        }
    }

    /// Starts a new, empty active segment.
    private func startSegment(_ state: inout State) throws(ContainerError) {
        let number = state.nextSegment
        guard number <= Self.maximumSegmentNumber else {
            throw ContainerError(.io, "the sessions directory '\(directory)' has no segment number left")
        }
        let path = path(of: number)
        let fd: Int32
        do {
            fd = try FileSystem.openFile(path, O_RDWR | O_CREAT | O_EXCL | O_APPEND, mode: 0o600)
            try FileSystem.syncDirectory(directory)
        } catch {
            throw ContainerError(.io, "cannot create the session segment '\(path)': \(error.reason)")
        }
        state.segments[number] = Segment(fd: fd, size: 0)
        state.active = number
        state.nextSegment = number + 1
    }

    private func path(of segment: Int) -> String {
        let digits = String(segment)
        return directory + "/" + String(repeating: "0", count: max(0, 12 - digits.count)) + digits + ".sessions"
    }

    // MARK: Compaction

    private var compactionIsDue: Bool {
        let limit = expiryLimit
        return state.withLock { state in
            let closedBytes = state.segments.filter { $0.key != state.active }.reduce(0) { $0 + $1.value.size }
            guard closedBytes > 0 else { return false }
            // Expired sessions count as dead: compaction is what drops them from the index and the disk.
            let liveBytes =
                lifetime == nil
                ? state.liveBytes
                : state.index.values.reduce(0) { $0 + ($1.removed || $1.time < limit ? 0 : $1.length) }
            return closedBytes > 2 * liveBytes
        }
    }

    /// Writes the newest line of every live, unexpired session held in the closed segments into a temporary
    /// file, which replaces the oldest closed segment; then deletes the other closed segments, oldest first.
    /// Appends go on meanwhile (into the active segment). A crash at any step leaves files whose newest line
    /// of each user is the same: the copies replace the oldest segment, so every line that ended a session
    /// outlives the older lines it ended. ``run()`` calls it when it is due; it must not run twice at once.
    /// - Throws: ``ContainerError`` (`io_error`) when a file cannot be written; nothing changed then.
    public func compact() throws(ContainerError) {
        guard state.withLock({ $0.opened }) else { return }
        let limit = expiryLimit
        // 1. Which lines to keep: the live ones outside the active segment.
        let (closed, keep) = try writing.withLock { _ throws(ContainerError) in
            try state.withLock { state throws(ContainerError) -> ([Int: Segment], [(SessionKey, Location)]) in
                if state.segments[state.active].map({ $0.size > 0 }) == true { try startSegment(&state) }
                let closed = state.segments.filter { $0.key != state.active }
                let keep = state.index.filter {
                    closed[$0.value.segment] != nil && !$0.value.removed && $0.value.time >= limit
                }
                .map { ($0.key, $0.value) }
                return (closed, keep)
            }
        }
        guard let number = closed.keys.min() else { return }
        // 2. Copy them into a temporary file, sync it and give it the oldest closed segment's name.
        let target = path(of: number)
        let temporary = target + ".tmp"
        var moved: [SessionKey: (old: Location, new: Location)] = [:]
        let fd: Int32
        do {
            fd = try FileSystem.openFile(temporary, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, mode: 0o600)
        } catch {
            throw ContainerError(.io, "cannot compact sessions into '\(temporary)': \(error.reason)")
        }
        do throws(FileSystemError) {
            var buffer: [UInt8] = []
            var offset = 0
            for (key, location) in keep.sorted(by: { ($0.1.segment, $0.1.offset) < ($1.1.segment, $1.1.offset) }) {
                var line = try FileSystem.readBytes(
                    closed[location.segment]!.fd,
                    count: location.length,
                    at: location.offset,
                    path: path(of: location.segment)
                )
                // A segment's last line may lack its newline (a crash cut the append just before it; the line
                // still reads): the copy gets one, or it would run into the next line copied after it.
                if line.last != 0x0A { line.append(0x0A) }
                var new = location
                new.segment = number
                new.offset = offset + buffer.count
                moved[key] = (location, new)
                buffer.append(contentsOf: line)
                if buffer.count >= 1 << 20 {
                    try FileSystem.writeAll(fd, buffer, path: temporary)
                    offset += buffer.count
                    buffer.removeAll(keepingCapacity: true)
                }
            }
            try FileSystem.writeAll(fd, buffer, path: temporary)
            offset += buffer.count
            try FileSystem.sync(fd, path: temporary)
            guard rename(temporary, target) == 0 else {
                throw FileSystemError(step: "renaming", path: temporary, errorNumber: errno)
            }
            try FileSystem.syncDirectory(directory)
        } catch {
            close(fd)
            unlink(temporary)
            throw ContainerError(.io, "cannot compact sessions (\(error.step) '\(error.path)': \(error.reason))")
        }
        // 3. Point the index at the copies (unless a newer save replaced them), forget what stayed behind in
        // the closed segments (ended and expired sessions), and drop the old segments.
        let size = offset(of: fd)
        writing.withLock { _ in
            state.withLock { state in
                var index: [SessionKey: Location] = [:]
                index.reserveCapacity(state.index.count)
                for (key, current) in state.index {
                    if closed[current.segment] == nil {
                        index[key] = current
                    } else if let move = moved[key], move.old.segment == current.segment,
                        move.old.offset == current.offset
                    {
                        index[key] = move.new
                    }
                }
                state.index = index
                state.liveBytes = index.values.reduce(0) { $0 + ($1.removed ? 0 : $1.length) }
                for file in closed.values { close(file.fd) }
                for segment in closed.keys { state.segments[segment] = nil }
                state.segments[number] = Segment(fd: fd, size: size)
            }
        }
        // Oldest first: a crash in between leaves the newer segments, whose lines end older ones.
        for segment in closed.keys.sorted() where segment != number { unlink(path(of: segment)) }
        try? FileSystem.syncDirectory(directory)
    }

    private func offset(of fd: Int32) -> Int { max(0, Int(lseek(fd, 0, SEEK_END))) }

    // MARK: Lines

    /// `{"v":<version>,"u":<user ID>,"t":<time>,"k":"<checksum>","s":<snapshot>}` and a newline.
    static func line(for stored: StoredSession, time: Int64 = 0) -> [UInt8] {
        var writer = JSONByteWriter(capacity: 640 + stored.userID.utf8.count)
        writeLine(for: stored, time: time, to: &writer)
        return writer.bytes
    }

    /// Appends ``line(for:time:)``: the snapshot goes straight after a 16-byte hole that the checksum of the
    /// whole line fills once it is written (no snapshot value, separate snapshot array or version string).
    static func writeLine(for stored: StoredSession, time: Int64, to writer: inout JSONByteWriter) {
        let start = writer.count
        let hole = writeHead(version: stored.version, userID: stored.userID, time: time, to: &writer)
        writer.raw(#"","s":"#)
        stored.snapshot.writeJSON(to: &writer)
        writer.raw("}")
        fillChecksum(of: start, hole: hole, in: &writer)
        writer.raw(0x0A)
    }

    /// Appends `{"v":<version>,"u":<user ID>,"t":<time>,"k":"<checksum>","r":1}` and a newline.
    static func writeRemovalLine(userID: String, version: Int64, time: Int64, to writer: inout JSONByteWriter) {
        let start = writer.count
        let hole = writeHead(version: version, userID: userID, time: time, to: &writer)
        writer.raw(#"","r":1}"#)
        fillChecksum(of: start, hole: hole, in: &writer)
        writer.raw(0x0A)
    }

    /// Writes a line up to its checksum's hole (16 zeros); returns where the hole is.
    private static func writeHead(version: Int64, userID: String, time: Int64, to writer: inout JSONByteWriter)
        -> Int
    {
        writer.raw(#"{"v":"#)
        writer.integer(version)
        writer.raw(#","u":"#)
        writer.string(userID)
        writer.raw(#","t":"#)
        writer.integer(max(0, time))
        writer.raw(#","k":""#)
        let hole = writer.count
        writer.raw("0000000000000000")
        return hole
    }

    /// Fills the hole at `hole` with the checksum of the line from `start` to the end, the hole left out.
    private static func fillChecksum(of start: Int, hole: Int, in writer: inout JSONByteWriter) {
        let sum = writer.withBytes(from: start) { bytes in
            lineChecksum(bytes, hole: hole - start)
        }
        let digits: StaticString = "0123456789abcdef"
        digits.withUTF8Buffer { digits in
            for index in 0..<16 {
                writer[hole + index] = digits[Int((sum >> UInt64((15 - index) * 4)) & 0xF)]
            }
        }
    }

    /// The checksum of `bytes` with the 16 bytes at `hole` left out.
    private static func lineChecksum(_ bytes: UnsafeBufferPointer<UInt8>, hole: Int) -> UInt64 {
        let before = UnsafeBufferPointer(rebasing: bytes[..<hole])
        let after = UnsafeBufferPointer(rebasing: bytes[(hole + 16)...])
        return checksum(after, continuing: checksum(before))
    }

    /// One parsed line: version, user ID, when it was written (`nil` for the earlier format), and the
    /// snapshot's byte range (`nil` for a removal).
    typealias ParsedLine = (version: Int64, userID: String, time: Int64?, snapshot: Range<Int>?)

    /// Reads the frame of a line (with or without its newline). `nil` when the line is torn, malformed or
    /// its checksum does not match.
    static func parse(_ line: ArraySlice<UInt8>) -> ParsedLine? {
        var bytes = line
        if bytes.last == 0x0A { bytes = bytes.dropLast() }
        var at = bytes.startIndex
        func expect(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard bytes.endIndex - at >= count else { return false }
            let matches = text.withUTF8Buffer { bytes[at..<at + count].elementsEqual($0) }
            if matches { at += count }
            return matches
        }
        func number() -> Int64? {
            var value: Int64 = 0
            let digits = at
            while at < bytes.endIndex, (0x30...0x39).contains(bytes[at]), at - digits < 18 {
                value = value * 10 + Int64(bytes[at] - 0x30)
                at += 1
            }
            return at > digits ? value : nil
        }
        guard expect(#"{"v":"#), let version = number(), expect(#","u":""#) else { return nil }
        let idStart = at
        var escaped = false
        while at < bytes.endIndex, bytes[at] != 0x22 {
            if bytes[at] == 0x5C {
                escaped = true
                at += 1
            }
            at += 1
        }
        guard at < bytes.endIndex else { return nil }
        let userID: String
        if escaped {
            guard case .string(let decoded)? = try? Value(jsonBytes: Array(bytes[(idStart - 1)...at])) else {
                return nil
            }
            userID = decoded
        } else {
            guard let decoded = String(validating: bytes[idStart..<at], as: UTF8.self) else { return nil }
            userID = decoded
        }
        at += 1
        if expect(#","t":"#) {
            // This format: the checksum covers the whole line but itself.
            guard let time = number(), expect(#","k":""#), bytes.endIndex - at >= 16 else { return nil }
            let hole = at
            at += 16
            let matches = bytes.withUnsafeBufferPointer { buffer in
                hex(lineChecksum(buffer, hole: hole - bytes.startIndex)).elementsEqual(bytes[hole..<hole + 16])
            }
            guard matches else { return nil }
            if expect(#"","r":1}"#) { return at == bytes.endIndex ? (version, userID, time, nil) : nil }
            guard expect(#"","s":"#), bytes.last == 0x7D, bytes.endIndex - 1 > at else { return nil }
            return (version, userID, time, at - line.startIndex..<bytes.endIndex - 1 - line.startIndex)
        }
        // The earlier format: a removal without a checksum, or a checksum of the snapshot alone.
        if expect(#","r":1}"#) { return at == bytes.endIndex ? (version, userID, nil, nil) : nil }
        guard expect(#","c":""#), bytes.endIndex - at >= 16 else { return nil }
        let stored = bytes[at..<at + 16]
        at += 16
        guard expect(#"","s":"#), bytes.last == 0x7D, bytes.endIndex - 1 > at else { return nil }
        let snapshot = at..<(bytes.endIndex - 1)
        guard stored.elementsEqual(hex(checksum(bytes[snapshot]))) else { return nil }
        return (version, userID, nil, snapshot.lowerBound - line.startIndex..<snapshot.upperBound - line.startIndex)
    }

    /// FNV-1a, 64 bits.
    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.withUnsafeBufferPointer { checksum($0) }
    }

    /// FNV-1a, 64 bits (`continuing` the hash of bytes before these).
    static func checksum(_ bytes: UnsafeBufferPointer<UInt8>, continuing hash: UInt64 = 0xcbf2_9ce4_8422_2325)
        -> UInt64
    {
        var hash = hash
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    private static func hex(_ value: UInt64) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        return (0..<16).map { digits[Int((value >> UInt64((15 - $0) * 4)) & 0xF)] }
    }
}
