#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The session files of an earlier ContainerKit's `FileSessionPersistence`, read once so that a service can
/// move them into the durable queue's segment log (a durable `DeliveryPipeline`'s `importSessions(_:)`), where sessions live
/// now (its `sessions`).
///
/// ```swift
/// let old = try LegacySessionFiles.read(directory: "/var/lib/app/sessions")
/// try queue.importSessions(old.storedSessions)   // before queue.run()
/// print("imported \(old.sessions.count) sessions, skipped \(old.skippedLines) lines", old.firstProblem ?? "")
/// ```
///
/// ## What is read
/// The regular files named `<number>.sessions` (twelve digits, 1 to 999,999,999,999), in number order, line by
/// line, with bounded memory. Each line is a session or the end of one:
///
/// ```
/// {"v":3,"u":"ada","t":1795000000,"k":"<checksum>","s":{…the SessionSnapshot…}}
/// {"v":3,"u":"bob","t":1795000060,"k":"<checksum>","r":1}     ← bob's session ended
/// {"v":2,"u":"cy","c":"<checksum of the snapshot>","s":{…}}     ← the earlier format
/// {"v":4,"u":"cy","r":1}                                        ← an earlier removal
/// ```
///
/// `v` is the session's version, `u` the user ID (compared as bytes: `"caf\u{E9}"` and `"cafe\u{301}"` are two
/// users), `t` when the line was written (seconds since 1970), `k` the FNV-1a 64 checksum (hex) of every other
/// byte of the line; the earlier format's `c` is the checksum of the snapshot alone, and its snapshot must name
/// the line's user.
///
/// The newest version of each user wins (of two lines with one version, the later one); a user whose newest
/// line is a removal has no session. A torn line (a crash during an append), one longer than 16 MiB, one whose
/// checksum does not match or that has neither format is skipped and counted (``Contents/skippedLines``), and
/// the user's newest good line is used; so is a newest line whose snapshot does not read as its user's session
/// (that user then has none). A FIFO, a device, a directory or a number out of range under a segment's name is
/// left alone and counted (``Contents/ignoredFiles``); so are the leftovers of a compaction (`.tmp`), silently.
/// Nothing is written: reading twice gives the same contents.
///
/// The read is synchronous: call it once at startup, before the service runs.
public enum LegacySessionFiles {
    /// One user's newest stored session.
    public struct Session: Sendable, Hashable {
        /// The session and its version.
        public var stored: StoredSession
        /// When its line was written, in seconds since 1970; `nil` for a line of the earlier format.
        public var savedAt: Int64?

        public init(stored: StoredSession, savedAt: Int64?) {
            self.stored = stored
            self.savedAt = savedAt
        }
    }

    /// What a directory of session files holds.
    public struct Contents: Sendable, Hashable {
        /// The newest stored session of each user whose newest line is not a removal, in the order of those
        /// lines in the files.
        public var sessions: [Session] = []
        /// Users whose newest line ended their session (they have none in ``sessions``).
        public var endedSessions = 0
        /// Lines that were not used: torn, longer than 16 MiB, failing their checksum, of neither format, or
        /// whose snapshot does not read as its user's session.
        public var skippedLines = 0
        /// Entries named like a segment that were not read: not a regular file, or a number out of range.
        public var ignoredFiles = 0
        /// The first skipped line or ignored file, naming its path (and line number); `nil` when there was none.
        public var firstProblem: String?
        /// The segment files read, in order.
        public var files: [String] = []

        public init() {}

        /// The sessions as a ``SessionPersistence`` stores them.
        public var storedSessions: [StoredSession] { sessions.map(\.stored) }

        /// The sessions written at `time` (seconds since 1970) or later, and those of the earlier format (which
        /// have no time): what an earlier persistence with a lifetime still handed out at `time`.
        public func storedSessions(savedSince time: Int64) -> [StoredSession] {
            sessions.filter { ($0.savedAt ?? time) >= time }.map(\.stored)
        }

        mutating func skip(_ problem: @autoclosure () -> String) {
            skippedLines += 1
            if firstProblem == nil { firstProblem = problem() }
        }
    }

    /// The highest segment number read (the file names have 12 digits).
    static let maximumSegmentNumber = 999_999_999_999

    /// The name of segment `number`: `000000000001.sessions`.
    package static func segmentName(_ number: Int) -> String {
        let digits = String(number)
        return String(repeating: "0", count: max(0, 12 - digits.count)) + digits + ".sessions"
    }

    /// Reads every session file in `directory` (see the type's documentation); an absent directory holds none.
    /// - Throws: ``ContainerError`` (`io_error`) when the directory cannot be listed or a segment cannot be read.
    public static func read(directory: String) throws(ContainerError) -> Contents {
        var contents = Contents()
        let names: [String]
        do {
            names = try FileSystem.listDirectory(directory)
        } catch {
            if error.errorNumber == ENOENT { return contents }
            throw ContainerError(.io, "cannot list the sessions directory '\(directory)': \(error.reason)")
        }
        var numbers: [Int] = []
        for name in names where name.hasSuffix(".sessions") {
            let path = directory + "/" + name
            var info = stat()
            // Only what the persistence wrote: a regular file under a name it would give.
            guard let number = Int(name.dropLast(".sessions".count)),
                (1...maximumSegmentNumber).contains(number), name == segmentName(number),
                lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG
            else {
                contents.ignoredFiles += 1
                if contents.firstProblem == nil {
                    contents.firstProblem = "'\(path)' is not a session segment (a regular file named by its number)"
                }
                continue
            }
            numbers.append(number)
        }

        /// Where a user's newest line is.
        struct Location {
            var file: Int
            var offset: Int
            var length: Int
            var version: Int64
            var removed: Bool
            var time: Int64?
            var line: Int
        }
        var index: [SessionKey: Location] = [:]
        var files: [(path: String, fd: Int32)] = []
        defer { for file in files { close(file.fd) } }
        for number in numbers.sorted() {
            let path = directory + "/" + segmentName(number)
            guard let fd = try SessionFileReader.open(path) else { continue }
            let file = files.count
            files.append((path, fd))
            try SessionFileReader.forEachLine(of: fd, path: path) { line throws(ContainerError) in
                guard let bytes = line.bytes else {
                    contents.skip("line \(line.number) of '\(path)' is longer than 16 MiB")
                    return
                }
                if SessionFileReader.isBlank(bytes) { return }
                guard let parsed = parse(bytes) else {
                    contents.skip("line \(line.number) of '\(path)' is torn or corrupt (its frame or checksum)")
                    return
                }
                let key = SessionKey(parsed.userID)
                if let old = index[key], old.version > parsed.version { return }
                index[key] = Location(
                    file: file,
                    offset: line.offset,
                    length: bytes.count,
                    version: parsed.version,
                    removed: parsed.snapshot == nil,
                    time: parsed.time,
                    line: line.number
                )
            }
        }
        contents.files = files.map(\.path)

        // The newest lines of the live sessions, read again in file order, their snapshots parsed.
        let newest = index.filter { !$0.value.removed }.sorted {
            ($0.value.file, $0.value.offset) < ($1.value.file, $1.value.offset)
        }
        contents.endedSessions = index.count - newest.count
        for (key, location) in newest {
            let path = files[location.file].path
            let line: [UInt8]
            do {
                line = try FileSystem.readBytes(
                    files[location.file].fd,
                    count: location.length,
                    at: location.offset,
                    path: path
                )
            } catch {
                throw ContainerError(.io, "cannot read '\(path)': \(error.reason)", file: path)
            }
            let problem = "line \(location.line) of '\(path)'"
            guard let parsed = parse(line[...]), let range = parsed.snapshot else {
                contents.skip("\(problem) changed while it was read")
                continue
            }
            let snapshot: SessionSnapshot
            do throws(ContainerError) {
                snapshot = try SessionSnapshot(jsonValue: try Value(jsonBytes: Array(line[range])))
            } catch {
                contents.skip("\(problem) does not hold a session: \(error.message)")
                continue
            }
            // Only a line of the earlier format (whose checksum left the user ID out) can name another user.
            guard snapshot.sessionID.utf8.elementsEqual(key.userID.utf8) else {
                contents.skip("\(problem) holds the session of another user than its own")
                continue
            }
            contents.sessions.append(
                Session(stored: StoredSession(snapshot: snapshot, version: parsed.version), savedAt: location.time)
            )
        }
        return contents
    }

    // MARK: Lines

    /// One parsed line: version, user ID, when it was written (`nil` for the earlier format), and the
    /// snapshot's byte range in the line (`nil` for a removal).
    package typealias ParsedLine = (version: Int64, userID: String, time: Int64?, snapshot: Range<Int>?)

    /// Reads the frame of a line (with or without its newline). `nil` when the line is torn, malformed or
    /// its checksum does not match.
    package static func parse(_ line: ArraySlice<UInt8>) -> ParsedLine? {
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
            // The later format: the checksum covers the whole line but itself.
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

    /// The checksum of `bytes` with the 16 bytes at `hole` left out.
    package static func lineChecksum(_ bytes: UnsafeBufferPointer<UInt8>, hole: Int) -> UInt64 {
        let before = UnsafeBufferPointer(rebasing: bytes[..<hole])
        let after = UnsafeBufferPointer(rebasing: bytes[(hole + 16)...])
        return checksum(after, continuing: checksum(before))
    }

    /// FNV-1a, 64 bits.
    package static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.withUnsafeBufferPointer { checksum($0) }
    }

    /// FNV-1a, 64 bits (`continuing` the hash of bytes before these).
    package static func checksum(
        _ bytes: UnsafeBufferPointer<UInt8>,
        continuing hash: UInt64 = 0xcbf2_9ce4_8422_2325
    ) -> UInt64 {
        var hash = hash
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    /// `value` as 16 lower-case hex digits.
    package static func hex(_ value: UInt64) -> [UInt8] {
        let digits = Array("0123456789abcdef".utf8)
        return (0..<16).map { digits[Int((value >> UInt64((15 - $0) * 4)) & 0xF)] }
    }
}
