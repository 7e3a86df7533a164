import ContainerKitTesting
import Foundation
import Testing

@testable import ContainerKit

/// ``LegacySessionFiles`` reads what the earlier `FileSessionPersistence` wrote (here written by
/// ``LegacySessionFileWriter``, byte for byte as it did): the newest version of each user, removals, torn and
/// corrupt lines, the earlier `"c"` format and odd files.
struct LegacySessionFilesTests {
    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("legacy-sessions-\(UUID().uuidString)").path
    }

    static func stored(_ user: String, _ events: Int, version: Int64) -> StoredSession {
        StoredSession(
            snapshot: SessionSnapshot(sessionID: user, model: ["n": .int(Int64(events))], eventNumber: events),
            version: version
        )
    }

    static func line(_ stored: StoredSession, time: Int64 = 1_795_000_000) -> [UInt8] {
        LegacySessionFileWriter.line(for: stored, time: time)
    }

    /// Several segments, versions out of order across them: each user's newest version wins (of two lines
    /// with one version, the later), in the order of those lines; what was read is read again the same.
    @Test func theNewestVersionOfEachUserWins() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try LegacySessionFileWriter.write(
            [
                Self.line(Self.stored("ada", 1, version: 1)), Self.line(Self.stored("bob", 1, version: 5)),
                Self.line(Self.stored("ada", 2, version: 2)),
            ],
            segment: 1,
            in: directory
        )
        try LegacySessionFileWriter.write(
            [
                Self.line(Self.stored("bob", 3, version: 4)),  // older than bob's 5: not used
                Self.line(Self.stored("cy", 1, version: 1)), Self.line(Self.stored("ada", 3, version: 2)),
            ],
            segment: 2,
            in: directory
        )
        let contents = try LegacySessionFiles.read(directory: directory)
        #expect(
            contents.storedSessions == [
                Self.stored("bob", 1, version: 5), Self.stored("cy", 1, version: 1), Self.stored("ada", 3, version: 2),
            ]
        )
        #expect(contents.sessions.allSatisfy { $0.savedAt == 1_795_000_000 })
        #expect(contents.skippedLines == 0 && contents.ignoredFiles == 0 && contents.endedSessions == 0)
        #expect(contents.firstProblem == nil)
        #expect(
            contents.files.map { ($0 as NSString).lastPathComponent } == [
                "000000000001.sessions", "000000000002.sessions",
            ]
        )
        #expect(try LegacySessionFiles.read(directory: directory) == contents)
    }

    @Test func aRemovalEndsTheSessionUntilANewerVersionIsSaved() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try LegacySessionFileWriter.write(
            [
                Self.line(Self.stored("ada", 1, version: 1)), Self.line(Self.stored("bob", 1, version: 1)),
                LegacySessionFileWriter.removalLine(userID: "ada", version: 1, time: 1_795_000_060),
                LegacySessionFileWriter.removalLine(userID: "bob", version: 1, time: 1_795_000_060),
                Self.line(Self.stored("bob", 1, version: 2)),  // bob came back: a new session above the ended one
                Self.line(Self.stored("cy", 4, version: 3)),
                LegacySessionFileWriter.removalLine(userID: "cy", version: 2, time: 1_795_000_060),  // stale
            ],
            segment: 1,
            in: directory
        )
        let contents = try LegacySessionFiles.read(directory: directory)
        #expect(contents.storedSessions == [Self.stored("bob", 1, version: 2), Self.stored("cy", 4, version: 3)])
        #expect(contents.endedSessions == 1)
    }

    /// A crash tore the last append: the line is skipped and counted, the user's previous version is used.
    /// A last line that lost only its newline still reads.
    @Test func aTornLastLineIsSkippedAndThePreviousVersionUsed() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let two = Self.line(Self.stored("ada", 2, version: 2))
        try LegacySessionFileWriter.write(
            [Self.line(Self.stored("ada", 1, version: 1)), Array(two.prefix(two.count - 5))],
            segment: 1,
            in: directory
        )
        try LegacySessionFileWriter.write(
            [Array(Self.line(Self.stored("bob", 3, version: 1)).dropLast())],
            segment: 2,
            in: directory
        )
        let contents = try LegacySessionFiles.read(directory: directory)
        #expect(contents.storedSessions == [Self.stored("ada", 1, version: 1), Self.stored("bob", 3, version: 1)])
        #expect(contents.skippedLines == 1)
        #expect(contents.firstProblem?.contains("line 2 of '\(directory)/000000000001.sessions'") == true)
    }

    /// A flipped byte anywhere in a line (its version and user ID too, not only the snapshot) makes it
    /// unreadable: it is skipped and counted, never read as another user's session.
    @Test func aChangedByteAnywhereInALineMakesItUnreadable() throws {
        let snapshot = SessionSnapshot(sessionID: "ada", model: ["plan": "pro"], eventNumber: 3)
        let line = Self.line(StoredSession(snapshot: snapshot, version: 4), time: 99)
        #expect(LegacySessionFiles.parse(line[...]) != nil)
        for index in line.indices.dropLast() {
            var changed = line
            changed[index] ^= 0x01
            if let parsed = LegacySessionFiles.parse(changed[...]) {
                Issue.record("byte \(index) changed and the line still reads as \(parsed.userID) v\(parsed.version)")
            }
        }
        let removal = LegacySessionFileWriter.removalLine(userID: "bob", version: 5, time: 99)
        var changed = removal
        changed[10] ^= 0x01  // inside the user ID
        #expect(LegacySessionFiles.parse(removal[...])?.userID == "bob")
        #expect(LegacySessionFiles.parse(changed[...]) == nil)

        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var corrupt = Self.line(Self.stored("ada", 2, version: 2))
        corrupt[corrupt.count - 10] ^= 0x01
        try LegacySessionFileWriter.write(
            [Self.line(Self.stored("ada", 1, version: 1)), corrupt, Array("not a session line\n".utf8), [0x0A]],
            segment: 1,
            in: directory
        )
        let contents = try LegacySessionFiles.read(directory: directory)
        #expect(contents.storedSessions == [Self.stored("ada", 1, version: 1)])
        #expect(contents.skippedLines == 2, "a blank line is not counted")
    }

    /// The line format: the snapshot's JSON framed by the version, the user ID, the time and a checksum of
    /// every other byte of the line.
    @Test func aSessionLineFramesTheSnapshotsJSONWithAChecksumOfTheWholeLine() throws {
        let snapshot = SessionSnapshot(sessionID: "a\"da\n", eventNumber: 7)
        let line = Self.line(StoredSession(snapshot: snapshot, version: 12), time: 1_795_000_000)
        let json = String(decoding: JSONWriter.bytes(snapshot.jsonValue, keepsNumberTypes: true), as: UTF8.self)
        let head = #"{"v":12,"u":"a\"da\n","t":1795000000,"k":""#
        let tail = #"","s":"# + json + "}"
        let sum = String(LegacySessionFiles.checksum(Array((head + tail).utf8)[...]), radix: 16)
        let checksum = String(repeating: "0", count: 16 - sum.count) + sum
        #expect(String(decoding: line, as: UTF8.self) == head + checksum + tail + "\n")
        let parsed = try #require(LegacySessionFiles.parse(line[...]))
        #expect(parsed.version == 12 && parsed.userID == "a\"da\n" && parsed.time == 1_795_000_000)
    }

    /// Lines written before the whole-line checksum are read too (they have no time), but a snapshot that
    /// names another user than its line is not used.
    @Test func linesOfTheEarlierFormatAreRead() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func old(_ user: String, snapshotOf owner: String, version: Int64) -> [UInt8] {
            var stored = Self.stored(owner, Int(version), version: version)
            stored.snapshot.model["plan"] = "pro"
            var line = LegacySessionFileWriter.earlierFormatLine(for: stored)
            if user != owner {
                let text = String(decoding: line, as: UTF8.self)
                line = Array(text.replacingOccurrences(of: #""u":"\#(owner)""#, with: #""u":"\#(user)""#).utf8)
            }
            return line
        }
        try LegacySessionFileWriter.write(
            [
                old("ada", snapshotOf: "ada", version: 2),
                LegacySessionFileWriter.earlierFormatRemovalLine(userID: "bob", version: 3),
                old("eve", snapshotOf: "mallory", version: 1),
                Self.line(Self.stored("cy", 1, version: 1)),
            ],
            segment: 1,
            in: directory
        )
        let contents = try LegacySessionFiles.read(directory: directory)
        #expect(contents.sessions.map(\.stored.userID) == ["ada", "cy"])
        #expect(contents.sessions.first?.stored.snapshot.model["plan"] == "pro")
        #expect(contents.sessions.first?.stored.version == 2)
        #expect(contents.sessions.map(\.savedAt) == [nil, 1_795_000_000])
        #expect(contents.endedSessions == 1)
        #expect(contents.skippedLines == 1)
        #expect(contents.firstProblem?.contains("another user") == true)
        // Lines of the earlier format have no time: they count as saved now.
        #expect(contents.storedSessions(savedSince: 1_795_000_001).map(\.userID) == ["ada"])
    }

    /// A FIFO, a directory or a number out of range under a segment's name is left alone and counted; a
    /// compaction's leftover is not read; the sessions in the real segments are.
    @Test func oddFilesNamedLikeSegmentsAreIgnored() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let ada = Self.stored("ada", 1, version: 1)
        try LegacySessionFileWriter.write([Self.line(ada)], segment: 3, in: directory)
        #expect(mkfifo(directory + "/000000000900.sessions", 0o600) == 0)
        try FileManager.default.createDirectory(
            atPath: directory + "/000000000901.sessions",
            withIntermediateDirectories: false
        )
        try Data().write(to: URL(fileURLWithPath: directory + "/9223372036854775807.sessions"))
        try Data().write(to: URL(fileURLWithPath: directory + "/7.sessions"))
        try Data(Self.line(Self.stored("ada", 9, version: 9)))
            .write(to: URL(fileURLWithPath: directory + "/000000000004.sessions.tmp"))
        let contents = try LegacySessionFiles.read(directory: directory)
        #expect(contents.storedSessions == [ada])
        #expect(contents.ignoredFiles == 4)
        #expect(contents.skippedLines == 0)
        #expect(contents.firstProblem != nil)
        #expect(FileManager.default.fileExists(atPath: directory + "/000000000004.sessions.tmp"), "nothing is removed")
    }

    @Test func canonicallyEquivalentUserIDsAreTwoUsers() throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try LegacySessionFileWriter.write(
            [Self.line(Self.stored("caf\u{E9}", 1, version: 1)), Self.line(Self.stored("cafe\u{301}", 2, version: 1))],
            segment: 1,
            in: directory
        )
        let contents = try LegacySessionFiles.read(directory: directory)
        #expect(contents.sessions.count == 2)
        #expect(contents.storedSessions.map(\.snapshot.eventNumber) == [1, 2])
        #expect(
            contents.storedSessions.map { Array($0.userID.utf8) } == [
                Array("caf\u{E9}".utf8), Array("cafe\u{301}".utf8),
            ]
        )
    }

    @Test func anAbsentDirectoryHoldsNoSessions() throws {
        let contents = try LegacySessionFiles.read(directory: Self.directory())
        #expect(contents == LegacySessionFiles.Contents())
    }
}
