import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// The durable queue against a full disk (injected into its segment log) and against queue files that
/// no queue writes: clear errors and warnings naming the file, the good records still delivered.
@Suite struct DurableQueueFaultTests {
    func settings(logger: InMemoryLogger = InMemoryLogger()) -> DeliverySettings {
        var configuration = DeliverySettings()
        configuration.logger = logger
        configuration.random = { 1 }
        return configuration
    }

    func open(
        _ directory: TemporaryDirectory,
        _ destination: any AnalyticsDestination,
        _ settings: DeliverySettings,
        _ storage: SegmentRecordStore.Options
    ) throws(AnalyticsSinkError) -> DeliveryPipeline<SegmentRecordStore> {
        try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings,
            storage: storage
        )
    }

    func segmentFiles(_ directory: TemporaryDirectory) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("segment-") }.sorted()
    }

    /// A disk that is full while `full` is set: every write fails with `ENOSPC` (and so does creating a
    /// segment, when `alsoCreate`).
    final class FullDisk: Sendable {
        let full = Mutex(false)
        let failing: Set<SegmentLogFaults.Operation>

        init(failing: Set<SegmentLogFaults.Operation> = [.write]) { self.failing = failing }

        var faults: SegmentLogFaults {
            SegmentLogFaults { operation, _ in
                self.full.withLock { $0 } && self.failing.contains(operation) ? ENOSPC : nil
            }
        }
    }

    /// `operation` fails with `errorNumber` the next `count` times once armed; counts how often it did.
    final class TransientFault: Sendable {
        let operation: SegmentLogFaults.Operation
        let errorNumber: Int32
        private let state = Mutex((left: 0, fired: 0))

        init(_ operation: SegmentLogFaults.Operation, _ errorNumber: Int32) {
            self.operation = operation
            self.errorNumber = errorNumber
        }

        func arm(_ count: Int) { state.withLock { $0.left = count } }
        var fired: Int { state.withLock { $0.fired } }

        var faults: SegmentLogFaults {
            SegmentLogFaults { operation, _ in
                guard operation == self.operation else { return nil }
                return self.state.withLock { state in
                    guard state.left > 0 else { return nil }
                    state.left -= 1
                    state.fired += 1
                    return self.errorNumber
                }
            }
        }
    }

    @Test(arguments: [
        Set<SegmentLogFaults.Operation>([.write]), [.sync], [.create, .write],
    ])
    func aFailedCommitFailsOnlyItsOwnRecordsAndTheQueueResumes(failing: Set<SegmentLogFaults.Operation>) async throws {
        let directory = TemporaryDirectory("enospc")
        defer { directory.remove() }
        let disk = FullDisk(failing: failing)
        let destination = InMemoryAnalyticsSink()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings(),
            storage: SegmentRecordStore.Options(faults: disk.faults)
        )
        let (a, b, c) = (event("a"), event("b"), event("c"))
        try await whileRunning(queue) {
            if failing.contains(.create) {
                // The very first commit creates the segment: its failure leaves no empty segment behind.
                disk.full.withLock { $0 = true }
                await #expect(throws: DurabilityError.self) { try await queue.append([b]) }
                #expect(try segmentFiles(directory).isEmpty)
                disk.full.withLock { $0 = false }
                try await queue.append([a])
            } else {
                try await queue.append([a])
                disk.full.withLock { $0 = true }
                do {
                    try await queue.append([b])
                    Issue.record("expected the commit to fail")
                } catch let error as DurabilityError {
                    #expect(error.code == .diskFull)
                    #expect(error.message.contains("segment-"))
                }
                disk.full.withLock { $0 = false }
            }
            // Space is back: new records are durable, and nothing earlier is reported failed.
            let token = try #require(try queue.enqueue([c]))
            try await token.wait()
            try await queue.flush()
        }
        #expect(destination.records.map(\.id) == [a.id, c.id])
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
        for name in try segmentFiles(directory) {
            let size = try FileManager.default.attributesOfItem(atPath: directory.file(name))[.size] as? Int
            #expect(size ?? 0 > 0, "'\(name)' is empty")
        }
    }

    @Test func waitingForSeveralTicketsReportsAnEarlierFailedCommitThoughALaterOneSucceeded() async throws {
        let directory = TemporaryDirectory("tickets")
        defer { directory.remove() }
        let disk = FullDisk()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: InMemoryAnalyticsSink(),
            settings: settings(),
            storage: SegmentRecordStore.Options(faults: disk.faults)
        )
        try await whileRunning(queue) {
            disk.full.withLock { $0 = true }
            let lost = try #require(try queue.enqueue([event("lost")]))
            await #expect(throws: DurabilityError.self) { try await lost.wait() }
            disk.full.withLock { $0 = false }
            let kept = try #require(try queue.enqueue([event("kept")]))
            try await kept.wait()
            #expect(lost.ticket < kept.ticket)
            // Waiting for the highest ticket alone would say "durable"; each ticket is checked on its own.
            await #expect(throws: DurabilityError.self) {
                try await queue.waitUntilDurable(tickets: [kept.ticket, lost.ticket])
            }
            await #expect(throws: DurabilityError.self) {
                try await DurabilityToken.waitUntilDurable([lost, kept])
            }
            try await DurabilityToken.waitUntilDurable([kept, kept])
        }
    }

    @Test func anAckOutOfRangeIsAClearErrorNamingTheFile() throws {
        let directory = TemporaryDirectory("ack-range")
        defer { directory.remove() }
        try writeSegment(directory, 1, [event("a")], checksummed: false)
        try "v1 18446744073709551615 0\n".write(toFile: directory.file("ack"), atomically: true, encoding: .utf8)
        for attempt in 0..<2 {
            do {
                if attempt == 0 {
                    _ = try DeliveryPipeline.durable(directory: directory.path, destination: InMemoryAnalyticsSink())
                } else {
                    _ = try SegmentRecordStore.pendingRecords(in: directory.path)
                }
                Issue.record("expected an error")
            } catch {
                #expect(error.code == .corruptFile)
                #expect(error.message.contains("'\(directory.file("ack"))'"))
            }
        }
        try "v1 1 18446744073709551615\n".write(toFile: directory.file("ack"), atomically: true, encoding: .utf8)
        #expect(throws: AnalyticsSinkError.self) { try SegmentRecordStore.pendingRecords(in: directory.path) }
    }

    @Test func aSegmentIndexOutOfRangeIsAClearErrorNamingTheFile() throws {
        let directory = TemporaryDirectory("segment-range")
        defer { directory.remove() }
        try writeSegment(directory, 1, [event("a")], checksummed: false)
        let name = "segment-18446744073709551615.jsonl"
        try "".write(toFile: directory.file(name), atomically: true, encoding: .utf8)
        do {
            _ = try DeliveryPipeline.durable(directory: directory.path, destination: InMemoryAnalyticsSink())
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .corruptFile)
            #expect(error.message.contains(name))
        }
    }

    /// While the queue runs and records arrive: a segment's creation (or an open or read of one) fails once
    /// with a transient error (too many open files, a failing device, a changed permission); the commit it
    /// carried fails alone, and every later record is delivered (DurableQueueIntegrityTests covers the same
    /// failures of a backlog read at start).
    @Test(arguments: [SegmentLogFaults.Operation.create, .open, .read], [EMFILE, EIO, EACCES])
    func aTransientFailureWhileRunningFailsOnlyItsCommitAndDeliveryResumes(
        operation: SegmentLogFaults.Operation,
        errorNumber: Int32
    ) async throws {
        let directory = TemporaryDirectory("transient")
        defer { directory.remove() }
        let fault = TransientFault(operation, errorNumber)
        let destination = InMemoryAnalyticsSink()
        var configuration = settings()
        configuration.retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(1),
            maximumDelay: .seconds(30)
        )
        var storage = SegmentRecordStore.Options(faults: fault.faults)
        storage.maximumSegmentBytes = 4096
        storage.maximumBufferedRecords = 20
        let queue = try open(directory, destination, configuration, storage)
        var durable: [AnalyticsRecord] = []
        try await whileRunning(queue) {
            for round in 0..<40 {
                if round == 10 { fault.arm(1) }
                let records = (0..<10).map {
                    event("r\(round)-\($0)", ["pad": .string(String(repeating: "x", count: 40))])
                }
                do {
                    try await queue.append(records)
                    durable += records
                } catch is DurabilityError {}
            }
            try await queue.flush()
        }
        #expect(Set(destination.records.map(\.id)).isSuperset(of: durable.map(\.id)))
        #expect(durable.count >= 390)
    }

    /// Records that overflow the memory buffer are read back from their segments; one open of a segment
    /// fails (too many open files, say) while the destination is busy: the read is retried and every record
    /// arrives.
    @Test(arguments: [EMFILE, EIO, EACCES], [1, 4])
    func aFailedOpenOfABacklogSegmentIsRetriedWhileRunning(errorNumber: Int32, deliveries: Int) async throws {
        let directory = TemporaryDirectory("backlog-open")
        defer { directory.remove() }
        let fault = TransientFault(.open, errorNumber)
        let destination = GatedDestination(batchSize: 10)
        var configuration = settings()
        var storage = SegmentRecordStore.Options(faults: fault.faults)
        // The default backoff (half a second at most, `random` is 1): the retry comes from the loop's own timer.
        configuration.maximumConcurrentDeliveries = deliveries
        storage.maximumBufferedRecords = 10
        storage.maximumSegmentBytes = 4096
        let queue = try open(directory, destination, configuration, storage)
        let records = (0..<120).map { event("b\($0)") }
        try await whileRunning(queue) {
            var arrivals = destination.arrivals.makeAsyncIterator()
            try await queue.append(Array(records[0..<10]))
            let first = try #require(await arrivals.next())
            // Past the memory buffer: these are read back from disk, and the first open of one fails.
            for start in stride(from: 10, to: 120, by: 10) {
                try await queue.append(Array(records[start..<start + 10]))
            }
            fault.arm(2)
            destination.settle(first[0])
            while destination.delivered.count < records.count, let batch = await arrivals.next() {
                destination.settle(batch[0])
            }
            try await queue.flush()
        }
        if deliveries == 1 {
            #expect(destination.delivered.map(\.id) == records.map(\.id))
        } else {
            // Batches out at once start (and are settled here) in whatever order their tasks run: each record
            // arrives once.
            #expect(destination.delivered.map(\.id).sorted() == records.map(\.id).sorted())
        }
        #expect(fault.fired == 2, "the open failed twice")
    }

    @Test func anUnreadableSegmentIsReportedAndTheGoodRecordsAreDelivered() async throws {
        let directory = TemporaryDirectory("unreadable")
        defer { directory.remove() }
        let before = [event("a"), event("b")]
        let after = [event("c")]
        try writeSegment(directory, 1, before, checksummed: false)
        try FileManager.default.createDirectory(
            atPath: directory.file(SegmentLog.segmentName(2)),
            withIntermediateDirectories: true
        )
        try writeSegment(directory, 3, after, checksummed: false)
        let logger = InMemoryLogger()
        let destination = InMemoryAnalyticsSink()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings(logger: logger)
        )
        try await whileRunning(queue) { try await queue.flush() }
        #expect(destination.records.map(\.id) == (before + after).map(\.id))
        #expect(
            logger.entries.contains {
                $0.level == .warning
                    && $0.metadata["problem"]?.contains(
                        "segment '\(directory.file(SegmentLog.segmentName(2)))' is a directory"
                    ) == true
            },
            "\(logger.entries)"
        )
    }

    @Test func anAckPastItsSegmentsEndRedeliversThatSegmentWithAWarning() async throws {
        let directory = TemporaryDirectory("ack-past")
        defer { directory.remove() }
        let records = [event("a"), event("b")]
        try writeSegment(directory, 4, records, checksummed: false)
        try "v1 4 999999\n".write(toFile: directory.file("ack"), atomically: true, encoding: .utf8)
        let logger = InMemoryLogger()
        let destination = InMemoryAnalyticsSink()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings(logger: logger)
        )
        // Recovery's warnings are logged when the pipeline starts running (to the manager's logger by then).
        #expect(logger.messages(at: .warning).isEmpty)
        try await whileRunning(queue) { try await queue.flush() }
        #expect(
            logger.entries.contains {
                $0.level == .warning && $0.message == "the record store reported a problem"
                    && $0.metadata["problem"]?.hasPrefix("recovered with a problem: ") == true
                    && $0.metadata["problem"]?.contains("past its end") == true
                    && $0.metadata["problem"]?.contains("'\(directory.file("ack"))'") == true
            }
        )
        #expect(destination.records.map(\.id) == records.map(\.id))
    }

    @Test func anAckAtALaterSegmentDeletesNothingAndWarns() async throws {
        let directory = TemporaryDirectory("ack-later")
        defer { directory.remove() }
        let records = [event("a")]
        try writeSegment(directory, 2, records, checksummed: false)
        try "v1 7 0\n".write(toFile: directory.file("ack"), atomically: true, encoding: .utf8)
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == records.map(\.id))
        let logger = InMemoryLogger()
        let destination = InMemoryAnalyticsSink()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings(logger: logger)
        )
        try await whileRunning(queue) { try await queue.flush() }
        #expect(
            logger.entries.contains {
                $0.level == .warning && $0.metadata["problem"]?.contains("segment 7, which is not there") == true
            }
        )
        #expect(destination.records.map(\.id) == records.map(\.id))
    }

    @Test func theOldAckFormatIsStillRead() throws {
        let directory = TemporaryDirectory("ack-v1")
        defer { directory.remove() }
        let records = [event("a"), event("b")]
        try writeSegment(directory, 1, records, checksummed: false)
        let firstLine = records[0].jsonLine.utf8.count + 1
        try "v1 1 \(firstLine)\n".write(toFile: directory.file("ack"), atomically: true, encoding: .utf8)
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == [records[1].id])
    }
}
