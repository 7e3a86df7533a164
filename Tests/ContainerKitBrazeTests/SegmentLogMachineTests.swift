import ContainerKit
import Foundation
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// The segment log's state machine, driven step by step: no files, threads, clocks or polling. A
/// simulated disk executes the machine's actions, and a "crash" after any step rebuilds a machine from
/// what the disk holds, as `SegmentLog` would. The tests acknowledge as the pipeline does: in order, through
/// the end of the longest prefix of settled batches.
@Suite struct SegmentLogMachineTests {
    typealias Machine = SegmentLogMachine
    typealias Position = SegmentLog.Position

    /// Segments and the ack, as a crash would leave them.
    struct Disk {
        var segments: [UInt64: [UInt8]] = [:]
        var ack: Position?

        mutating func apply(_ commit: Machine.Commit) {
            segments[commit.segment, default: []].append(contentsOf: commit.bytes)
        }

        mutating func apply(_ actions: [Machine.Action]) {
            for case .acknowledge(let position, let deleting) in actions {
                ack = position
                for index in deleting { segments[index] = nil }
            }
        }

        var extents: [SegmentLog.SegmentExtent] {
            segments.keys.sorted().map { SegmentLog.SegmentExtent(index: $0, size: segments[$0]!.count) }
        }

        /// The machine a restart would build, and the records it would deliver, in order.
        func restart(batchSize: Int = 2) -> (Machine, [String]) {
            var warnings: [String] = []
            let (cursor, _, kept) = SegmentLog.recover(
                ack: ack,
                segments: extents,
                directory: "/q",
                warnings: &warnings
            )
            let machine = Machine(
                segments: kept,
                cursor: cursor,
                nextSegmentIndex: (kept.last?.index ?? cursor.segment) + 1,
                maximumSegmentBytes: 1 << 20,
                maximumQueueBytes: 1 << 30,
                maximumBufferedRecords: 100,
                batchSize: batchSize
            )
            var ids: [String] = []
            for extent in kept where extent.index >= cursor.segment {
                let bytes = segments[extent.index]!
                let start = extent.index == cursor.segment ? cursor.offset : 0
                for line in bytes[start...].split(separator: 0x0A) {
                    if let record = try? AnalyticsRecord(jsonBytes: Array(line)) { ids.append(record.id) }
                }
            }
            return (machine, ids)
        }
    }

    static func machine(
        batchSize: Int = 2,
        segmentBytes: Int = 1 << 20,
        buffered: Int = 100
    ) -> Machine {
        Machine(
            segments: [],
            cursor: Position(segment: 1, offset: 0),
            nextSegmentIndex: 1,
            maximumSegmentBytes: segmentBytes,
            maximumQueueBytes: 1 << 30,
            maximumBufferedRecords: buffered,
            batchSize: batchSize
        )
    }

    /// Restarts from what `disk` holds and checks that every durable record was delivered before the crash
    /// or is delivered after it; returns the records delivered twice.
    static func restartLosesNothing(
        _ disk: Disk,
        durable: Set<String>,
        delivered: [String],
        batchSize: Int,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) -> Set<String> {
        let (_, replayed) = disk.restart(batchSize: batchSize)
        let everything = Set(delivered).union(replayed)
        #expect(
            durable.isSubset(of: everything),
            "lost \(durable.subtracting(everything))",
            sourceLocation: sourceLocation
        )
        return Set(delivered).intersection(replayed)
    }

    static func lines(_ records: [AnalyticsRecord]) -> (bytes: [UInt8], ends: [Int]) {
        var bytes: [UInt8] = []
        var ends: [Int] = []
        for record in records {
            bytes += Array(record.jsonLine.utf8) + [0x0A]
            ends.append(bytes.count)
        }
        return (bytes, ends)
    }

    static func enqueue(_ machine: inout Machine, _ records: [AnalyticsRecord]) throws -> (UInt64, [Machine.Action]) {
        let (bytes, ends) = lines(records)
        return try machine.enqueue(bytes, records: records, lineEnds: ends)
    }

    static func take(_ machine: inout Machine) throws -> Machine.Commit {
        let commit = machine.takeCommit()
        return try #require(commit)
    }

    static func record(_ n: Int) -> AnalyticsRecord {
        AnalyticsRecord(
            id: "r\(n)",
            time: Date(timeIntervalSince1970: 1_700_000_000),
            user: .externalID("u"),
            payload: .customEvent(name: "e", properties: [:])
        )
    }

    @Test func linesEnqueuedWhileTheWriterWorksShareOneCommit() throws {
        var machine = Self.machine()
        #expect(machine.takeCommit() == nil)
        #expect(machine.flags.contains(.writerAsleep))
        let (first, wake) = try Self.enqueue(&machine, [Self.record(1)])
        #expect(first == 1 && wake == [.wakeWriter])
        let (second, quiet) = try Self.enqueue(&machine, [Self.record(2), Self.record(3)])
        #expect(second == 2 && quiet.isEmpty)
        let commit = try Self.take(&machine)
        #expect(commit.tickets == 1...2)
        #expect(commit.records.map(\.id) == ["r1", "r2", "r3"])
        #expect(commit.segment == 1 && commit.offset == 0)
        #expect(machine.takeCommit() == nil, "one commit at a time")
        _ = try Self.enqueue(&machine, [Self.record(4)])
        // The store reports the tickets; the writer takes the next commit itself, awake: nothing to do.
        #expect(machine.committed(commit).isEmpty)
        #expect(try Self.take(&machine).tickets == 3...3)
    }

    @Test func deliveryGoesInBatchesAndAcknowledgesEachOne() throws {
        var machine = Self.machine(batchSize: 2)
        _ = try Self.enqueue(&machine, (1...5).map(Self.record))
        let commit = try Self.take(&machine)
        _ = machine.committed(commit)
        var delivered: [String] = []
        var acks: [Position] = []
        while case .batch(let batch) = machine.nextRead() {
            #expect(!machine.caughtUp, "a batch is out")
            delivered += batch.records.map(\.id)
            for case .acknowledge(let position, _) in machine.acknowledge(through: batch.end) { acks.append(position) }
        }
        #expect(delivered == ["r1", "r2", "r3", "r4", "r5"])
        #expect(acks.count == 3)
        #expect(acks.last == Position(segment: 1, offset: commit.bytes.count))
        #expect(machine.caughtUp)
        #expect(machine.nextRead() == .nothing)
    }

    // A batch from memory carries each record's JSON line as its append encoded it, whether the batch
    // holds the lines of one commit or of several.
    @Test func batchesCarryEachRecordsJSONFromOneCommitOrSeveral() throws {
        var machine = Self.machine(batchSize: 3)
        for commit in [[[1, 2]], [[3], [4, 5]]] {
            for chunk in commit {
                let encoded = EncodedRecords(chunk.map(Self.record))
                _ = try machine.enqueue(encoded.bytes, records: encoded.records, lineEnds: encoded.lineEnds)
            }
            _ = machine.committed(try Self.take(&machine))
        }
        var batches: [Machine.Batch] = []
        while case .batch(let batch) = machine.nextRead() {
            batches.append(batch)
            _ = machine.acknowledge(through: batch.end)
        }
        #expect(batches.map { $0.records.map(\.id) } == [["r1", "r2", "r3"], ["r4", "r5"]])
        for batch in batches {
            let json = try #require(batch.json)
            #expect(json.count == batch.records.count)
            for (index, record) in batch.records.enumerated() {
                #expect(String(decoding: json[index], as: UTF8.self) == record.jsonLine)
            }
        }
    }

    @Test func readsGoOnAfterTheBatchesOutAndOneAcknowledgementCoversEveryBatchBeforeIt() throws {
        var machine = Self.machine(batchSize: 2)
        _ = try Self.enqueue(&machine, (1...8).map(Self.record))
        _ = machine.committed(try Self.take(&machine))
        var batches: [Machine.Batch] = []
        for _ in 0..<3 {
            guard case .batch(let batch) = machine.nextRead() else { break }
            batches.append(batch)
        }
        #expect(batches.map { $0.records.map(\.id) } == [["r1", "r2"], ["r3", "r4"], ["r5", "r6"]])
        #expect(machine.readCursor == batches[2].end && machine.cursor == Position(segment: 1, offset: 0))
        // The pipeline acknowledges through the second batch's end: one write covers the first two.
        #expect(machine.acknowledge(through: batches[1].end) == [.acknowledge(batches[1].end, deleting: [])])
        #expect(machine.acknowledge(through: batches[1].end).isEmpty, "nothing more up to that position")
        guard case .batch(let last) = machine.nextRead() else {
            Issue.record("expected the last batch")
            return
        }
        #expect(last.records.map(\.id) == ["r7", "r8"])
        #expect(machine.nextRead() == .nothing, "nothing more is committed")
        #expect(!machine.caughtUp)
        #expect(machine.acknowledge(through: last.end) == [.acknowledge(last.end, deleting: [])])
        #expect(machine.caughtUp)
    }

    /// A machine that committed `count` records beyond its memory buffer (`buffered`), the commit, and where
    /// the disk read it asks for starts.
    static func backlogOnDisk(_ count: Int, buffered: Int) throws -> (Machine, Machine.Commit, Position) {
        var machine = Self.machine(batchSize: 2, buffered: buffered)
        _ = try Self.enqueue(&machine, (1...count).map(Self.record))
        let commit = try Self.take(&machine)
        _ = machine.committed(commit)
        guard case .readDisk(let from, _, _) = machine.nextRead() else { throw DiskReadExpected() }
        return (machine, commit, from)
    }

    struct DiskReadExpected: Error {}

    @Test func aDiskReadStartsAfterTheBatchesOut() throws {
        let (backlog, commit, from) = try Self.backlogOnDisk(3, buffered: 1)
        var machine = backlog
        let ends = commit.lineEnds.map { Position(segment: 1, offset: $0) }
        #expect(from == Position(segment: 1, offset: 0))
        let first = machine.diskRead(.init(records: Array(commit.records.prefix(2)), end: ends[1]), from: from)
        #expect(first.batch?.records.count == 2)
        // The second read starts where the first batch ends, although that batch is not acknowledged yet.
        guard case .readDisk(let next, _, _) = machine.nextRead() else {
            Issue.record("expected a second disk read")
            return
        }
        #expect(next == ends[1])
        #expect(machine.diskRead(.init(records: [], end: ends[1]), from: from).batch == nil, "a stale read")
        let second = machine.diskRead(.init(records: [commit.records[2]], end: ends[2]), from: next)
        #expect(second.batch?.records.map(\.id) == ["r3"])
        #expect(machine.nextRead() == .nothing)
        #expect(machine.acknowledge(through: ends[2]) == [.acknowledge(ends[2], deleting: [])])
        #expect(machine.caughtUp)
    }

    @Test func aDiskReadOfOnlyUnreadableLinesIsABatchWithNoRecordToAcknowledge() throws {
        let (backlog, commit, from) = try Self.backlogOnDisk(2, buffered: 0)
        var machine = backlog
        let end = Position(segment: 1, offset: commit.bytes.count)
        var skipped = SegmentLog.ReadResult(end: end)
        skipped.skippedLines = 2
        let read = machine.diskRead(skipped, from: from)
        #expect(read.batch == Machine.Batch(records: [], end: end) && !read.stale)
        #expect(machine.nextRead() == .nothing, "the read reached the end of the log")
        #expect(machine.acknowledge(through: end) == [.acknowledge(end, deleting: [])])
        #expect(machine.caughtUp)
    }

    /// With several batches out, settled in any order and acknowledged as the pipeline does (through the end
    /// of the longest settled prefix), a crash at any step loses nothing durable and re-delivers only records
    /// of the batches that were out.
    @Test func aCrashWithSeveralBatchesOutRedeliversOnlyThoseBatches() throws {
        let (batchSize, slots) = (2, 3)
        var mostTwice = 0
        for crashPoint in 0...12 {
            var machine = Self.machine(batchSize: batchSize)
            var disk = Disk()
            var durable: Set<String> = []
            var delivered: [String] = []
            // The batches out, oldest first, and whether each is settled.
            var out: [(batch: Machine.Batch, settled: Bool)] = []
            var step = 0
            func crashed() -> Bool {
                step += 1
                return step > crashPoint
            }
            outer: for round in 0..<3 {
                if crashed() { break }
                _ = try Self.enqueue(&machine, (1...5).map { Self.record(round * 10 + $0) })
                if crashed() { break }
                let commit = try Self.take(&machine)
                disk.apply(commit)
                _ = machine.committed(commit)
                durable.formUnion(commit.records.map(\.id))
                while out.count < slots, case .batch(let batch) = machine.nextRead() {
                    out.append((batch, false))
                    delivered += batch.records.map(\.id)
                }
                // Settle them newest first, the worst order for acknowledgements.
                for index in out.indices.reversed() {
                    if crashed() { break outer }
                    out[index].settled = true
                    let settled = out.prefix { $0.settled }
                    guard let end = settled.last?.batch.end else { continue }
                    out.removeFirst(settled.count)
                    disk.apply(machine.acknowledge(through: end))
                }
            }
            let twice = Self.restartLosesNothing(disk, durable: durable, delivered: delivered, batchSize: batchSize)
            #expect(twice.count <= batchSize * slots, "crash point \(crashPoint) re-delivers \(twice.sorted())")
            #expect(twice.isSubset(of: Set(out.flatMap { $0.batch.records.map(\.id) })))
            mostTwice = max(mostTwice, twice.count)
        }
        #expect(mostTwice > batchSize, "some crash point had more than one batch out")
    }

    @Test func aFailedCommitLeavesNothingBehind() throws {
        var machine = Self.machine()
        _ = try Self.enqueue(&machine, [Self.record(1)])
        let failed = try Self.take(&machine)
        machine.commitFailed(failed, segmentUsable: true)
        #expect(machine.queueBytes == 0)
        #expect(machine.nextRead() == .nothing)
        // Space came back: the next commit works, where the failed one would have been.
        _ = try Self.enqueue(&machine, [Self.record(2)])
        let next = try Self.take(&machine)
        #expect(next.tickets == 2...2)
        #expect(next.segment == 1 && next.offset == 0, "the failed commit left nothing behind")
        _ = machine.committed(next)
        #expect(
            machine.nextRead()
                == .batch(.init(records: [Self.record(2)], end: .init(segment: 1, offset: next.bytes.count)))
        )
    }

    @Test func anUnusableSegmentIsSealedAndTheNextCommitStartsANewOne() throws {
        var machine = Self.machine()
        _ = try Self.enqueue(&machine, [Self.record(1)])
        _ = machine.committed(try Self.take(&machine))
        _ = try Self.enqueue(&machine, [Self.record(2)])
        let failed = try Self.take(&machine)
        #expect(failed.segment == 1)
        machine.commitFailed(failed, segmentUsable: false)
        _ = try Self.enqueue(&machine, [Self.record(3)])
        let next = try Self.take(&machine)
        #expect(next.segment == 2 && next.offset == 0)
    }

    @Test func fullSegmentsRotateAndAreDeletedOnceAcknowledged() throws {
        var machine = Self.machine(batchSize: 1, segmentBytes: 300)
        var segments: [UInt64] = []
        for n in 1...4 {
            _ = try Self.enqueue(&machine, [Self.record(n)])
            let commit = try Self.take(&machine)
            segments.append(commit.segment)
            _ = machine.committed(commit)
        }
        #expect(segments == [1, 1, 2, 2] || segments == [1, 2, 3, 4])
        var deleted: [UInt64] = []
        while case .batch(let batch) = machine.nextRead() {
            for case .acknowledge(_, let deleting) in machine.acknowledge(through: batch.end) { deleted += deleting }
        }
        #expect(deleted == Array(Set(segments)).sorted().dropLast())
        #expect(machine.segments.map(\.index) == [segments.last!])
    }

    @Test func aBacklogBeyondTheMemoryBufferIsReadFromDisk() throws {
        var machine = Self.machine(batchSize: 10, buffered: 2)
        _ = try Self.enqueue(&machine, (1...3).map(Self.record))
        let commit = try Self.take(&machine)
        _ = machine.committed(commit)
        guard case .readDisk(let from, let extents, _) = machine.nextRead() else {
            Issue.record("expected a disk read")
            return
        }
        #expect(from == Position(segment: 1, offset: 0))
        #expect(extents == [.init(index: 1, size: commit.bytes.count)])
        let read = SegmentLog.ReadResult(records: commit.records, end: .init(segment: 1, offset: commit.bytes.count))
        let (batch, stale) = machine.diskRead(read, from: from)
        #expect(batch?.records.count == 3 && !stale)
        // The read reached the end of the log: the backlog is over, and later commits are read from memory.
        #expect(!machine.flags.contains(.backlogOnDisk))
        let taken = try #require(batch)
        _ = machine.acknowledge(through: taken.end)
        #expect(machine.caughtUp)
        _ = try Self.enqueue(&machine, [Self.record(4)])
        _ = machine.committed(try Self.take(&machine))
        guard case .batch(let fromMemory) = machine.nextRead() else {
            Issue.record("expected a batch from memory")
            return
        }
        #expect(fromMemory.records.map(\.id) == ["r4"])
    }

    @Test func aRestartWhoseAckIsAtTheEndOfTheLogIsCaughtUpAfterItsFirstRead() throws {
        var machine = Machine(
            segments: [.init(index: 7, size: 100)],
            cursor: Position(segment: 7, offset: 100),
            nextSegmentIndex: 8,
            maximumSegmentBytes: 1 << 20,
            maximumQueueBytes: 1 << 30,
            maximumBufferedRecords: 100,
            batchSize: 2
        )
        // Until the log is read the machine cannot know that nothing is left.
        #expect(!machine.caughtUp)
        guard case .readDisk(let from, _, _) = machine.nextRead() else {
            Issue.record("expected a disk read")
            return
        }
        let (batch, stale) = machine.diskRead(.init(end: from), from: from)
        #expect(batch == nil && !stale)
        #expect(machine.caughtUp)
        #expect(machine.nextRead() == .nothing)
    }

    // The memory buffer keeps each append's records as one chunk: batches cross chunk boundaries in order,
    // each batch ends where its last record's line ends, and a batch that is exactly one append's records
    // is that append's own array (no record is copied).
    @Test func batchesCrossTheAppendsKeptInMemoryInOrderWithTheirLineEnds() throws {
        var machine = Self.machine(batchSize: 3)
        let appends = [[1, 2, 3], [4], [5, 6, 7, 8], [9, 10]].map { $0.map(Self.record) }
        var ends: [Int] = []
        var offset = 0
        for records in appends {
            let (bytes, lineEnds) = Self.lines(records)
            _ = try machine.enqueue(bytes, records: records, lineEnds: lineEnds)
            ends += lineEnds.map { $0 + offset }
            offset += bytes.count
        }
        let commit = try Self.take(&machine)
        #expect(commit.recordCount == 10)
        _ = machine.committed(commit)
        var batches: [Machine.Batch] = []
        while case .batch(let batch) = machine.nextRead() {
            batches.append(batch)
            _ = machine.acknowledge(through: batch.end)
        }
        #expect(
            batches.map { $0.records.map(\.id) } == [
                ["r1", "r2", "r3"], ["r4", "r5", "r6"], ["r7", "r8", "r9"], ["r10"],
            ]
        )
        #expect(batches.map(\.end.offset) == [ends[2], ends[5], ends[8], ends[9]])
        #expect(batches.last?.end == Position(segment: 1, offset: commit.bytes.count))
        #expect(machine.caughtUp)

        // One append, one batch: the batch is the append's array itself.
        var whole = Self.machine(batchSize: 3)
        let records = [11, 12, 13].map(Self.record)
        _ = try Self.enqueue(&whole, records)
        _ = whole.committed(try Self.take(&whole))
        guard case .batch(let batch) = whole.nextRead() else {
            Issue.record("expected a batch")
            return
        }
        #expect(
            batch.records.withUnsafeBufferPointer { $0.baseAddress }
                == records.withUnsafeBufferPointer { $0.baseAddress }
        )
    }

    // Thousands of one-record appends (one commit each) are delivered in order while the consumed chunks at
    // the front are dropped in bulk now and then, never one by one.
    @Test func manySmallAppendsAreDeliveredInOrderAcrossTheBufferCompactions() throws {
        var machine = Self.machine(batchSize: 7, buffered: 10_000)
        var delivered: [String] = []
        var lastEnd = Position(segment: 1, offset: 0)
        for n in 1...3000 {
            _ = try Self.enqueue(&machine, [Self.record(n)])
            _ = machine.committed(try Self.take(&machine))
            if n % 500 == 0 {
                while case .batch(let batch) = machine.nextRead() {
                    #expect(batch.end > lastEnd)
                    lastEnd = batch.end
                    delivered += batch.records.map(\.id)
                    _ = machine.acknowledge(through: batch.end)
                }
            }
        }
        #expect(delivered == (1...3000).map { "r\($0)" })
        #expect(machine.caughtUp)
    }

    @Test func refusesWhenFullOrClosed() throws {
        var machine = Machine(
            segments: [],
            cursor: .init(segment: 1, offset: 0),
            nextSegmentIndex: 1,
            maximumSegmentBytes: 1 << 20,
            maximumQueueBytes: 200,
            maximumBufferedRecords: 10,
            batchSize: 10
        )
        _ = try Self.enqueue(&machine, [Self.record(1)])
        #expect(throws: AnalyticsSinkError.self) { _ = try Self.enqueue(&machine, (2...9).map(Self.record)) }
        _ = machine.close()
        do {
            _ = try Self.enqueue(&machine, [Self.record(10)])
            Issue.record("expected a refusal")
        } catch let error as AnalyticsSinkError {
            #expect(error.code == .closed)
        }
    }

    /// Runs a scenario of enqueues, commits and deliveries, "crashing" after every step: whatever the
    /// crash point, every record reported durable is delivered before the crash or after the restart,
    /// and at most one batch is delivered twice.
    @Test func aCrashAtAnyStepLosesNothingDurableAndRedeliversAtMostOneBatch() throws {
        enum Step { case enqueue(Int), commit, deliver, confirm }
        let steps: [Step] = [
            .enqueue(1), .enqueue(2), .commit, .deliver, .enqueue(3), .confirm, .commit, .deliver, .confirm,
            .enqueue(4), .enqueue(5), .commit, .deliver, .confirm, .deliver, .confirm,
        ]
        let batchSize = 2
        for crashPoint in 0...steps.count {
            var machine = Self.machine(batchSize: batchSize, segmentBytes: 300)
            var disk = Disk()
            var durable: Set<String> = []
            var delivered: [String] = []
            var inFlight: Machine.Batch?
            for step in steps.prefix(crashPoint) {
                switch step {
                case .enqueue(let n):
                    _ = try Self.enqueue(&machine, [Self.record(n)])
                case .commit:
                    guard let commit = machine.takeCommit() else { continue }
                    disk.apply(commit)
                    _ = machine.committed(commit)
                    durable.formUnion(commit.records.map(\.id))
                case .deliver:
                    if inFlight == nil, case .batch(let batch) = machine.nextRead() {
                        inFlight = batch
                        delivered += batch.records.map(\.id)
                    }
                case .confirm:
                    if let batch = inFlight { disk.apply(machine.acknowledge(through: batch.end)) }
                    inFlight = nil
                }
            }
            let twice = Self.restartLosesNothing(disk, durable: durable, delivered: delivered, batchSize: batchSize)
            #expect(twice.count <= batchSize, "crash after step \(crashPoint) re-delivers \(twice.sorted())")
            #expect(twice.isSubset(of: Set(inFlight?.records.map(\.id) ?? [])), "only the batch in flight repeats")
        }
    }

    @Test func recoveryReportsAnAckThatDoesNotFitTheSegments() {
        let segments = [SegmentLog.SegmentExtent(index: 3, size: 100), .init(index: 4, size: 50)]
        /// Recovers `segments` with an ack at `ack`; returns what recovery found and its warnings.
        func recover(_ ack: Position) -> (cursor: Position, confirmed: [Int], kept: Bool, warnings: [String]) {
            var warnings: [String] = []
            let found = SegmentLog.recover(ack: ack, segments: segments, directory: "/q", warnings: &warnings)
            return (found.cursor, found.confirmed.map { Int($0.index) }, found.kept == segments, warnings)
        }
        let past = recover(.init(segment: 3, offset: 500))
        #expect(past.cursor == .init(segment: 3, offset: 0))
        #expect(
            past.warnings.count == 1 && past.warnings[0].contains("past its end")
                && past.warnings[0].contains("'/q/ack'")
        )
        let later = recover(.init(segment: 9, offset: 0))
        #expect(later.cursor == .init(segment: 3, offset: 0) && later.confirmed.isEmpty && later.kept)
        #expect(later.warnings.count == 1 && later.warnings[0].contains("segment 9, which is not there"))
        let fine = recover(.init(segment: 4, offset: 10))
        #expect(fine.cursor == .init(segment: 4, offset: 10) && fine.confirmed == [3] && fine.warnings.isEmpty)
    }
}

extension SegmentLogMachine.Commit: Equatable {
    static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.bytes == rhs.bytes && lhs.tickets == rhs.tickets && lhs.segment == rhs.segment && lhs.offset == rhs.offset
    }
}
