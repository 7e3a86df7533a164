// The session log of `FileSessionPersistence`. The first byte picks the mode:
// - bit 0 clear: one line through `FileSessionPersistence.parse`; what it returns must lie inside the line, a
//   snapshot it finds is read as `load` reads it, and what reads back is written again by `line(for:)` and must
//   parse to the same version, user and snapshot;
// - bit 0 set: a damaged log — the bytes are written as a segment file (bit 2: cut at the first NUL into two
//   segments) into a fresh directory, a `FileSessionPersistence` opens it, loads the users its lines name (and
//   two others), saves the first above every version it has (it must load back as saved), removes the second,
//   compacts, and every user must load as expected from the log and those two changes — from the same
//   persistence and from a new one opened on the directory; nothing may crash or hang.
// Bit 1 fixes the checksum of every line that has the frame's shape, so that the snapshots behind them are
// parsed (a fuzzer would hardly guess a 64-bit FNV-1a).
import Foundation

@testable import ContainerKit

/// Where each input's directory is made (on tmpfs when there is one: every input syncs); removed at exit.
let sessionsRoot: String = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
    atexit { try? FileManager.default.removeItem(atPath: sessionsRoot) }
    return base + "containerkit-fuzz-sessions-\(getpid())"
}()
nonisolated(unsafe) var sessionsRun = 0

final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// Runs `body` on the concurrency runtime and waits for it (libFuzzer's thread is no task).
func runBlocking<T>(_ body: @escaping @Sendable () async -> T) -> T {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    Task {
        box.value = await body()
        done.signal()
    }
    done.wait()
    return box.value!
}

/// FNV-1a, 64 bits, as lower-case hex (what a line's `"c"` holds).
func fnvHex(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in bytes {
        hash ^= UInt64(byte)
        hash = hash &* 0x100_0000_01b3
    }
    let digits = Array("0123456789abcdef".utf8)
    return (0..<16).map { digits[Int((hash >> UInt64((15 - $0) * 4)) & 0xF)] }
}

/// `line` (without its newline) with the checksum of its snapshot written into its `"c"`, when it has the shape
/// `…,"c":"<16 bytes>","s":…}`.
func fixingChecksum(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    let marker = Array(#","c":""#.utf8)
    let separator = Array(#"","s":"#.utf8)
    guard line.count >= marker.count, line.last == 0x7D,
        let at = (line.startIndex...(line.endIndex - marker.count)).first(where: {
            line[$0..<$0 + marker.count].elementsEqual(marker)
        })
    else { return line }
    let hole = at + marker.count
    let snapshotStart = hole + 16 + separator.count
    guard snapshotStart < line.endIndex - 1, line[(hole + 16)..<snapshotStart].elementsEqual(separator) else {
        return line
    }
    var fixed = line
    fixed.replaceSubrange(hole..<hole + 16, with: fnvHex(line[snapshotStart..<(line.endIndex - 1)]))
    return fixed
}

func fixingChecksums(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.count)
    for (index, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
        if index > 0 { out.append(0x0A) }
        out.append(contentsOf: fixingChecksum(line))
    }
    return out
}

func sameBytes(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

func checkLine(_ line: [UInt8]) {
    guard let parsed = FileSessionPersistence.parse(line[...]) else { return }
    precondition(parsed.version >= 0, "negative version \(parsed.version)")
    guard let range = parsed.snapshot else { return }
    precondition(range.lowerBound >= 0 && range.upperBound <= line.count, "snapshot range \(range) outside the line")
    guard let value = try? Value(jsonBytes: Array(line[range])), let snapshot = try? SessionSnapshot(jsonValue: value)
    else { return }
    // What reads back is written again and must read back the same.
    let written = FileSessionPersistence.line(for: StoredSession(snapshot: snapshot, version: parsed.version))
    guard let again = FileSessionPersistence.parse(written[...]), let againRange = again.snapshot else {
        fatalError("a line written for a snapshot that was read does not parse")
    }
    precondition(again.version == parsed.version, "version \(parsed.version) reads back as \(again.version)")
    precondition(sameBytes(again.userID, snapshot.sessionID), "the user ID does not read back")
    let reread = try? SessionSnapshot(jsonValue: Value(jsonBytes: Array(written[againRange])))
    precondition(reread == snapshot, "a snapshot does not read back as written")
}

func checkLog(_ bytes: [UInt8], twoSegments: Bool) {
    sessionsRun += 1
    let directory = sessionsRoot + "/\(sessionsRun)"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    guard (try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)) != nil
    else { return }
    var segments = [bytes]
    if twoSegments, let nul = bytes.firstIndex(of: 0) {
        segments = [Array(bytes[..<nul]), Array(bytes[(nul + 1)...])]
    }
    for (index, segment) in segments.enumerated() {
        let path = directory + "/00000000000\(index + 1).sessions"
        guard FileManager.default.createFile(atPath: path, contents: Data(segment)) else { return }
    }
    // The users the lines name (as the index reads them), and two others.
    var users: [String] = []
    // The newest version any line gives the first user: a save above it is never superseded.
    var newest: Int64 = 0
    for segment in segments {
        for line in segment.split(separator: 0x0A) {
            guard let parsed = FileSessionPersistence.parse(line) else { continue }
            if users.count < 8, !users.contains(where: { sameBytes($0, parsed.userID) }) { users.append(parsed.userID) }
            if sameBytes(parsed.userID, users[0]) { newest = max(newest, parsed.version) }
        }
    }
    for extra in ["ada", ""] where !users.contains(where: { sameBytes($0, extra) }) { users.append(extra) }
    let persistence = FileSessionPersistence(directory: directory, segmentBytes: 4096)
    runBlocking { [users, newest] in
        // What each user loads as (nil also when its line does not read).
        var expected: [StoredSession?] = []
        for user in users { expected.append(try? await persistence.load(userID: user)) }
        _ = persistence.count
        _ = persistence.skippedLines
        // Save the first user above every version it has (a version of 19 digits is not written by anyone
        // and does not read back); it must read back as saved.
        guard newest < 999_999_999_999_999_998 else { return }
        var snapshot = expected[0]?.snapshot ?? SessionSnapshot(sessionID: users[0], model: ["screen": "home"])
        snapshot.sessionID = users[0]
        let stored = StoredSession(snapshot: snapshot, version: newest + 1)
        guard let result = try? await persistence.save([.save(stored)]) else { return }
        precondition(result.superseded.isEmpty, "a save above every version of its user was superseded")
        let back = try? await persistence.load(userID: users[0])
        precondition(back == stored, "a saved session does not load back")
        expected[0] = stored
        // Remove the second user; then compact: every session must load as before, also after reopening.
        if let removed = expected[1], removed.version < 999_999_999_999_999_998 {
            let removal = SessionChange.remove(userID: users[1], version: removed.version + 1)
            if let result = try? await persistence.save([removal]), result.superseded.isEmpty { expected[1] = nil }
        }
        try? persistence.compact()
        let reopened = FileSessionPersistence(directory: directory, segmentBytes: 4096)
        for (index, user) in users.enumerated() {
            let now = try? await persistence.load(userID: user)
            precondition(now == expected[index], "the session of user \(index) changed in compaction")
            let again = try? await reopened.load(userID: user)
            precondition(again == expected[index], "the session of user \(index) changed in reopening")
        }
        return ()
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzSessionLog(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let mode = bytes.first else { return 0 }
    var rest = Array(bytes.dropFirst())
    if mode & 2 == 2 { rest = fixingChecksums(rest) }
    if mode & 1 == 0 {
        checkLine(rest)
    } else {
        checkLog(rest, twoSegments: mode & 4 == 4)
    }
    return 0
}
