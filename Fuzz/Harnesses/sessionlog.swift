// The session files of the earlier `FileSessionPersistence`, as `LegacySessionFiles` reads them for an upgrade.
// The first byte picks the mode:
// - bit 0 clear: one line through `LegacySessionFiles.parse`; what it returns must lie inside the line, a
//   snapshot it finds is read as `read(directory:)` reads it, and what reads back is written again (by
//   `LegacySessionFileWriter`, in the line's own format) and must parse to the same version, user, time and
//   snapshot;
// - bit 0 set: a damaged directory — the bytes are written as a segment file (bit 2: cut at the first NUL into
//   two segments) into a fresh directory and `LegacySessionFiles.read(directory:)` reads it: its contents must
//   be what the lines say, worked out here line by line (each user's newest version, removals, skipped lines),
//   and a second read must give the same; nothing may crash or hang.
// Bit 1 fixes the checksum of every line that has a frame's shape (the whole line's `"k"` or the snapshot's
// `"c"`), so that the snapshots behind them are parsed (a fuzzer would hardly guess a 64-bit FNV-1a).
import ContainerKitTesting
import Foundation

@testable import ContainerKit

/// Where each input's directory is made (on tmpfs when there is one); removed at exit.
let sessionsRoot: String = {
    let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm/" : NSTemporaryDirectory()
    atexit { try? FileManager.default.removeItem(atPath: sessionsRoot) }
    return base + "containerkit-fuzz-sessions-\(getpid())"
}()
nonisolated(unsafe) var sessionsRun = 0

/// The first index of `pattern` in `line`, if any.
func find(_ pattern: [UInt8], in line: ArraySlice<UInt8>) -> Int? {
    guard line.count >= pattern.count else { return nil }
    return (line.startIndex...(line.endIndex - pattern.count)).first {
        line[$0..<$0 + pattern.count].elementsEqual(pattern)
    }
}

/// `line` (without its newline) with its checksum written in: the whole line's, when it has the shape
/// `…,"t":<digits>,"k":"<16 bytes>…`, else the snapshot's, when it has the shape `…,"c":"<16 bytes>","s":…}`.
func fixingChecksum(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
    var fixed = line
    if let at = find(Array(#","k":""#.utf8), in: line), line.endIndex - (at + 6) >= 16 {
        let hole = at + 6
        let sum = Array(line).withUnsafeBufferPointer {
            LegacySessionFiles.lineChecksum($0, hole: hole - line.startIndex)
        }
        fixed.replaceSubrange(hole..<hole + 16, with: LegacySessionFiles.hex(sum))
        return fixed
    }
    let separator = Array(#"","s":"#.utf8)
    guard line.last == 0x7D, let at = find(Array(#","c":""#.utf8), in: line) else { return line }
    let hole = at + 6
    let snapshotStart = hole + 16 + separator.count
    guard snapshotStart < line.endIndex - 1, line[(hole + 16)..<snapshotStart].elementsEqual(separator) else {
        return line
    }
    let sum = LegacySessionFiles.checksum(line[snapshotStart..<(line.endIndex - 1)])
    fixed.replaceSubrange(hole..<hole + 16, with: LegacySessionFiles.hex(sum))
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

/// The snapshot a parsed line holds, when it reads as its user's session.
func session(in line: ArraySlice<UInt8>, _ parsed: LegacySessionFiles.ParsedLine) -> SessionSnapshot? {
    guard let range = parsed.snapshot else { return nil }
    let bytes = Array(line)
    guard let value = try? Value(jsonBytes: Array(bytes[range])), let snapshot = try? SessionSnapshot(jsonValue: value),
        sameBytes(snapshot.sessionID, parsed.userID)
    else { return nil }
    return snapshot
}

func checkLine(_ line: [UInt8]) {
    guard let parsed = LegacySessionFiles.parse(line[...]) else { return }
    precondition(parsed.version >= 0, "negative version \(parsed.version)")
    guard let range = parsed.snapshot else { return }
    precondition(range.lowerBound >= 0 && range.upperBound <= line.count, "snapshot range \(range) outside the line")
    guard let value = try? Value(jsonBytes: Array(line[range])), let snapshot = try? SessionSnapshot(jsonValue: value)
    else { return }
    // What reads back is written again, in the line's format, and must read back the same.
    let stored = StoredSession(snapshot: snapshot, version: parsed.version)
    let written =
        parsed.time.map { LegacySessionFileWriter.line(for: stored, time: $0) }
        ?? LegacySessionFileWriter.earlierFormatLine(for: stored)
    guard let again = LegacySessionFiles.parse(written[...]), let againRange = again.snapshot else {
        fatalError("a line written for a snapshot that was read does not parse")
    }
    precondition(again.version == parsed.version, "version \(parsed.version) reads back as \(again.version)")
    precondition(again.time == parsed.time, "the time does not read back")
    precondition(sameBytes(again.userID, snapshot.sessionID), "the user ID does not read back")
    let reread = try? SessionSnapshot(jsonValue: Value(jsonBytes: Array(written[againRange])))
    precondition(reread == snapshot, "a snapshot does not read back as written")
}

/// What `read(directory:)` must return for `segments`, worked out line by line.
func expectedContents(of segments: [[UInt8]]) -> (sessions: [StoredSession], ended: Int, skipped: Int) {
    var newest: [SessionKey: (position: (Int, Int), line: ArraySlice<UInt8>, parsed: LegacySessionFiles.ParsedLine)] =
        [:]
    var skipped = 0
    for (file, segment) in segments.enumerated() {
        var lines = segment.split(separator: 0x0A, omittingEmptySubsequences: false)
        if segment.last == 0x0A || segment.isEmpty { lines.removeLast() }
        for (number, line) in lines.enumerated() {
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) { continue }
            guard let parsed = LegacySessionFiles.parse(line) else {
                skipped += 1
                continue
            }
            let key = SessionKey(parsed.userID)
            if let old = newest[key], old.parsed.version > parsed.version { continue }
            newest[key] = ((file, number), line, parsed)
        }
    }
    var sessions: [StoredSession] = []
    var ended = 0
    for (_, entry) in newest.sorted(by: { $0.value.position < $1.value.position }) {
        guard entry.parsed.snapshot != nil else {
            ended += 1
            continue
        }
        guard let snapshot = session(in: entry.line, entry.parsed) else {
            skipped += 1
            continue
        }
        sessions.append(StoredSession(snapshot: snapshot, version: entry.parsed.version))
    }
    return (sessions, ended, skipped)
}

func checkLog(_ bytes: [UInt8], twoSegments: Bool) {
    sessionsRun += 1
    let directory = sessionsRoot + "/\(sessionsRun)"
    defer { try? FileManager.default.removeItem(atPath: directory) }
    var segments = [bytes]
    if twoSegments, let nul = bytes.firstIndex(of: 0) {
        segments = [Array(bytes[..<nul]), Array(bytes[(nul + 1)...])]
    }
    for (index, segment) in segments.enumerated() {
        guard (try? LegacySessionFileWriter.write([segment], segment: index + 1, in: directory)) != nil else { return }
    }
    guard let contents = try? LegacySessionFiles.read(directory: directory) else {
        fatalError("a directory of regular segment files does not read")
    }
    let expected = expectedContents(of: segments)
    precondition(contents.storedSessions == expected.sessions, "the sessions are not what the lines say")
    precondition(contents.endedSessions == expected.ended, "\(contents.endedSessions) ended, not \(expected.ended)")
    precondition(contents.skippedLines == expected.skipped, "\(contents.skippedLines) skipped, not \(expected.skipped)")
    precondition((contents.firstProblem == nil) == (expected.skipped == 0), "the first problem is not named")
    precondition(contents.ignoredFiles == 0 && contents.files.count == segments.count, "a segment was not read")
    precondition((try? LegacySessionFiles.read(directory: directory)) == contents, "a second read differs")
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
