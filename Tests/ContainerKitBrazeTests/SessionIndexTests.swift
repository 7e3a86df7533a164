import ContainerKit
import Foundation
import Testing

@testable import ContainerKitDelivery

/// The index of sessions in the segment log, as a restart's scan builds it from lines in log order.
@Suite struct SessionIndexTests {
    static func line(_ version: Int64, _ kind: SessionLine.Kind, id: UInt64 = 0) -> SessionLine {
        SessionLine(
            userID: "u",
            version: version,
            expected: version - 1,
            kind: kind,
            id: id == 0 ? UInt64(version) : id
        )
    }

    static func ref(_ segment: UInt64, _ version: Int64, _ kind: SessionLine.Kind) -> SessionLineRef {
        SessionLineRef(segment: segment, offset: Int(version) * 100, length: 100, version: version, kind: kind)
    }

    static func add(_ index: inout SessionIndex, _ segment: UInt64, _ version: Int64, _ kind: SessionLine.Kind) {
        index.add(line(version, kind), at: ref(segment, version, kind))
    }

    @Test func aSnapshotReplacesTheChainAndReleasesItsSegments() {
        var index = SessionIndex()
        Self.add(&index, 1, 1, .snapshot)
        Self.add(&index, 1, 2, .delta)
        Self.add(&index, 2, 3, .delta)
        #expect(index.chain(of: SessionKey("u"))?.lines.map(\.version) == [1, 2, 3])
        let released = index.add(Self.line(4, .snapshot), at: Self.ref(3, 4, .snapshot))
        #expect(Set(released) == [1, 2])
        #expect(index.chain(of: SessionKey("u"))?.lines.map(\.version) == [4])
        #expect(!index.isPinned(1) && !index.isPinned(2) && index.isPinned(3))
    }

    /// A compaction read the chain up to version 3 while deltas 4 and 5 were committed: it replaces lines up to 3
    /// and keeps 4 and 5, and it keeps the head's identity.
    @Test func aCompactionKeepsTheDeltasCommittedAfterIt() {
        var index = SessionIndex()
        Self.add(&index, 1, 1, .snapshot)
        Self.add(&index, 1, 2, .delta)
        Self.add(&index, 2, 3, .delta)
        Self.add(&index, 3, 4, .delta)
        Self.add(&index, 3, 5, .delta)
        index.add(Self.line(3, .compaction, id: 3), at: Self.ref(4, 3, .compaction))
        let chain = index.chain(of: SessionKey("u"))
        #expect(chain?.lines.map(\.version) == [3, 4, 5])
        #expect(chain?.head == 5 && chain?.headID == 5)
        #expect(!index.isPinned(1) && !index.isPinned(2))
    }

    /// After a restart the scan may meet the compaction after the deltas it kept (they are older in the log), or as
    /// the session's first surviving line: the chain is the same as the running log's.
    @Test func aRestartsScanBuildsTheSameChainWhateverTheLogOrder() {
        var index = SessionIndex()
        Self.add(&index, 3, 4, .delta)
        Self.add(&index, 3, 5, .delta)
        index.add(Self.line(3, .compaction, id: 3), at: Self.ref(4, 3, .compaction))
        #expect(index.chain(of: SessionKey("u"))?.lines.map(\.version) == [3, 4, 5])

        var alone = SessionIndex()
        alone.add(Self.line(7, .compaction, id: 7), at: Self.ref(9, 7, .compaction))
        #expect(alone.chain(of: SessionKey("u"))?.lines.map(\.version) == [7])
        #expect(alone.headState(SessionKey("u")) == SessionIndex.HeadState(version: 7, id: 7, ended: false))
    }

    /// A compaction older than the chain's snapshot, or after the session ended, changes nothing.
    @Test func aStaleCompactionIsIgnored() {
        var index = SessionIndex()
        Self.add(&index, 1, 1, .snapshot)
        Self.add(&index, 2, 5, .snapshot)
        index.add(Self.line(3, .compaction), at: Self.ref(3, 3, .compaction))
        #expect(index.chain(of: SessionKey("u"))?.lines.map(\.version) == [5])
        #expect(!index.isPinned(3))
        index.add(Self.line(6, .removal), at: Self.ref(3, 6, .removal))
        index.add(Self.line(5, .compaction), at: Self.ref(4, 5, .compaction))
        #expect(index.chain(of: SessionKey("u"))?.lines.isEmpty == true)
        #expect(index.headState(SessionKey("u")).ended)
    }
}

/// The scan for session lines at open reads a damaged segment in bounded memory.
@Suite struct SessionLineScanTests {
    @Test func aLineLongerThanAnyTheQueueWritesIsSkippedAndTheLinesAfterItAreRead() throws {
        let directory = TemporaryDirectory("session-scan")
        defer { directory.remove() }
        func line(_ user: String, _ version: Int64) -> [UInt8] {
            var json = JSONByteWriter()
            let snapshot = SessionSnapshot(sessionID: user, model: ["v": .int(version)])
            SessionLine.append(
                SessionLine(userID: user, version: version, expected: version - 1, kind: .snapshot),
                to: &json
            ) { snapshot.writeJSON(to: &$0) }
            return json.bytes
        }
        // A good line, 5,000 bytes without a line feed then one, a good line.
        let bytes = line("ada", 1) + [UInt8](repeating: 0x41, count: 5_000) + [0x0A] + line("bea", 2)
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        try Data(bytes).write(to: URL(fileURLWithPath: directory.file(SegmentLog.segmentName(1))))
        var index = SessionIndex()
        var warnings: [String] = []
        let problems = try SegmentLog.scanSessions(
            directory.path,
            segments: [SegmentLog.SegmentExtent(index: 1, size: bytes.count)],
            into: &index,
            warnings: &warnings,
            chunkBytes: 64,
            maximumLineBytes: 1_024
        )
        #expect(problems == 1)
        #expect(warnings.first?.contains("more than 1024 bytes") == true)
        #expect(index.head(SessionKey("ada")) == 1)
        #expect(index.head(SessionKey("bea")) == 2, "the line after the long one is read")
    }
}
