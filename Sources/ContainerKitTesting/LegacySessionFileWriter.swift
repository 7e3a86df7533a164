public import ContainerKit
import Foundation

/// Writes session files as an earlier ContainerKit's `FileSessionPersistence` did, so that a test can check an
/// upgrade: what ``LegacySessionFiles`` reads and a service imports. Nothing in ContainerKit writes them any
/// more.
///
/// ```swift
/// let ada = StoredSession(snapshot: SessionSnapshot(sessionID: "ada", eventNumber: 3), version: 2)
/// try LegacySessionFileWriter.write(
///     [LegacySessionFileWriter.line(for: ada, time: 1_795_000_000)],
///     segment: 1,
///     in: directory
/// )
/// #expect(try LegacySessionFiles.read(directory: directory).storedSessions == [ada])
/// ```
public enum LegacySessionFileWriter {
    /// `{"v":<version>,"u":<user ID>,"t":<time>,"k":"<checksum>","s":<snapshot>}` and a newline: the checksum
    /// covers every other byte of the line.
    public static func line(for stored: StoredSession, time: Int64) -> [UInt8] {
        var snapshot = JSONByteWriter(capacity: 640)
        stored.snapshot.writeJSON(to: &snapshot)
        return checkedLine(
            version: stored.version,
            userID: stored.userID,
            time: time,
            tail: #"","s":"#.utf8 + snapshot.bytes + [0x7D]
        )
    }

    /// `{"v":<version>,"u":<user ID>,"t":<time>,"k":"<checksum>","r":1}` and a newline: the session ended.
    public static func removalLine(userID: String, version: Int64, time: Int64) -> [UInt8] {
        checkedLine(version: version, userID: userID, time: time, tail: Array(#"","r":1}"#.utf8))
    }

    /// A line of the earlier format, `{"v":<version>,"u":<user ID>,"c":"<checksum>","s":<snapshot>}` and a
    /// newline, whose checksum covers the snapshot alone.
    public static func earlierFormatLine(for stored: StoredSession) -> [UInt8] {
        var snapshot = JSONByteWriter(capacity: 640)
        stored.snapshot.writeJSON(to: &snapshot)
        let json = snapshot.bytes
        return head(version: stored.version, userID: stored.userID) + #","c":""#.utf8
            + LegacySessionFiles.hex(LegacySessionFiles.checksum(json[...])) + #"","s":"#.utf8 + json + [0x7D, 0x0A]
    }

    /// A removal of the earlier format, `{"v":<version>,"u":<user ID>,"r":1}` and a newline (no checksum).
    public static func earlierFormatRemovalLine(userID: String, version: Int64) -> [UInt8] {
        head(version: version, userID: userID) + #","r":1}"#.utf8 + [0x0A]
    }

    /// The path of segment `number` in `directory`: `<directory>/000000000001.sessions`.
    public static func path(ofSegment number: Int, in directory: String) -> String {
        directory + "/" + LegacySessionFiles.segmentName(number)
    }

    /// Writes `lines` as segment `number` in `directory` (created with its parents when missing), replacing it.
    public static func write(_ lines: [[UInt8]], segment number: Int, in directory: String) throws {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Data(lines.joined()).write(to: URL(fileURLWithPath: path(ofSegment: number, in: directory)))
    }

    private static func head(version: Int64, userID: String) -> [UInt8] {
        var writer = JSONByteWriter(capacity: 32 + userID.utf8.count)
        writer.raw(#"{"v":"#)
        writer.integer(version)
        writer.raw(#","u":"#)
        writer.string(userID)
        return writer.bytes
    }

    /// The head, `,"t":<time>,"k":"`, the checksum of the line without it, `tail` and a newline.
    private static func checkedLine(version: Int64, userID: String, time: Int64, tail: [UInt8]) -> [UInt8] {
        var line =
            head(version: version, userID: userID) + #","t":"#.utf8 + Array(String(max(0, time)).utf8)
            + #","k":""#.utf8
        let hole = line.count
        line += [UInt8](repeating: 0x30, count: 16) + tail
        let sum = line.withUnsafeBufferPointer { LegacySessionFiles.lineChecksum($0, hole: hole) }
        line.replaceSubrange(hole..<hole + 16, with: LegacySessionFiles.hex(sum))
        return line + [0x0A]
    }
}
