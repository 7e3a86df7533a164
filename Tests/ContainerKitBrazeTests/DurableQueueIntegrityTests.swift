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

/// What the durable queue may and may not skip: a segment that cannot be read for a moment is retried and
/// never acknowledged past; flipped bits are detected by each line's checksum; a segment deleted under the
/// writer fails the commit; a full disk does not keep the queue from opening; the index range is never
/// left by the writer; a fresh queue's restart finds its ack at a segment that is there.
@Suite struct DurableQueueIntegrityTests {
    /// A durable queue in `directory` whose destination never settles and whose drain ends at once: what it
    /// stores stays on disk.
    func undeliveringQueue(_ directory: TemporaryDirectory) throws -> DeliveryPipeline<SegmentRecordStore> {
        var configuration = settings()
        configuration.drainTimeout = .zero
        return try DeliveryPipeline.durable(
            directory: directory.path,
            destination: NeverSettlingDestination(),
            settings: configuration
        )
    }

    func settings(logger: InMemoryLogger = InMemoryLogger()) -> DeliverySettings {
        var configuration = DeliverySettings()
        configuration.logger = logger
        configuration.random = { 1 }
        configuration.retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(1),
            maximumDelay: .milliseconds(4)
        )
        return configuration
    }

    /// Fails the first `count` operations of the kinds in `failing` with `errorNumber`, then lets them run.
    final class FlakyDisk: Sendable {
        let left: Mutex<Int>
        let failing: Set<SegmentLogFaults.Operation>
        let errorNumber: Int32

        init(failing: Set<SegmentLogFaults.Operation>, errorNumber: Int32, count: Int) {
            self.failing = failing
            self.errorNumber = errorNumber
            self.left = Mutex(count)
        }

        var faults: SegmentLogFaults {
            SegmentLogFaults { operation, _ in
                guard self.failing.contains(operation) else { return nil }
                return self.left.withLock { left -> Int32? in
                    guard left > 0 else { return nil }
                    left -= 1
                    return self.errorNumber
                }
            }
        }
    }

    @Test(arguments: [
        (SegmentLogFaults.Operation.open, EMFILE), (.open, ENFILE), (.open, EACCES), (.open, EIO),
        (.read, EIO), (.read, EACCES),
    ])
    func aSegmentThatCannotBeReadForAMomentIsRetriedAndNeverSkipped(
        operation: SegmentLogFaults.Operation,
        errorNumber: Int32
    ) async throws {
        let directory = TemporaryDirectory("flaky-read")
        defer { directory.remove() }
        let records = [event("a"), event("b"), event("c")]
        try writeSegment(directory, 1, records)
        let disk = FlakyDisk(failing: [operation], errorNumber: errorNumber, count: 3)
        let logger = InMemoryLogger()
        let destination = InMemoryAnalyticsSink()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings(logger: logger),
            storage: SegmentRecordStore.Options(faults: disk.faults)
        )
        try await whileRunning(queue) { try await queue.flush() }
        #expect(destination.records.map(\.id) == records.map(\.id))
        #expect(queue.statistics.skippedRecords == 0)
        #expect(queue.statistics.failedReads == 3)
        #expect(
            logger.entries.contains {
                $0.level == .warning && $0.message.contains("retrying")
                    && $0.metadata["error"]?.contains("cannot read segment") == true
            }
        )
    }

    @Test func aSegmentThatStaysUnreadableIsNeitherAcknowledgedNorDeleted() async throws {
        let directory = TemporaryDirectory("unreadable-stays")
        defer { directory.remove() }
        let records = [event("a"), event("b")]
        try writeSegment(directory, 1, records)
        let (attempts, attempted) = AsyncStream.makeStream(of: Void.self)
        let faults = SegmentLogFaults { operation, _ in
            guard operation == .open else { return nil }
            attempted.yield()
            return EMFILE
        }
        var configuration = settings()
        let storage = SegmentRecordStore.Options(faults: faults)
        configuration.drainTimeout = .zero
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: InMemoryAnalyticsSink(),
            settings: configuration,
            storage: storage
        )
        // The run tries to read three times, then stops: the segment and its records are still there.
        try await whileRunning(queue) {
            var seen = 0
            for await _ in attempts {
                seen += 1
                if seen == 3 { break }
            }
        }
        attempted.finish()
        #expect(queue.statistics.skippedRecords == 0)
        #expect(FileManager.default.fileExists(atPath: directory.file(SegmentLog.segmentName(1))))
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == records.map(\.id))
    }

    @Test func aFlippedBitIsDetectedByTheLinesChecksumAndSkippedWithACount() async throws {
        let directory = TemporaryDirectory("flipped")
        defer { directory.remove() }
        let records = [event("a"), event("bb"), event("c")]
        try writeSegment(directory, 1, records)
        // Flip one bit inside the second record's event name ("bb" → "bc"): still valid JSON.
        let path = directory.file(SegmentLog.segmentName(1))
        var bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let secondLine = bytes.firstIndex(of: 0x0A)! + 1
        let name = Array(#""bb""#.utf8)
        let at = try #require(
            (secondLine..<(bytes.count - name.count)).first { Array(bytes[$0..<($0 + name.count)]) == name }
        )
        bytes[at + 2] ^= 0x01
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let logger = InMemoryLogger()
        let destination = InMemoryAnalyticsSink()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings(logger: logger)
        )
        try await whileRunning(queue) { try await queue.flush() }
        #expect(destination.records.map(\.id) == [records[0].id, records[2].id])
        #expect(queue.statistics.corruptRecords == 1)
        #expect(queue.statistics.skippedRecords == 1)
        #expect(
            logger.entries.contains {
                $0.level == .warning && $0.metadata["problem"]?.contains("checksum mismatch") == true
            }
        )
    }

    @Test func linesWithoutAChecksumFromEarlierVersionsAreStillRead() throws {
        let directory = TemporaryDirectory("legacy-lines")
        defer { directory.remove() }
        let records = [event("a"), event("b")]
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        try records.map { $0.jsonLine + "\n" }.joined().write(
            toFile: directory.file(SegmentLog.segmentName(1)),
            atomically: true,
            encoding: .utf8
        )
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == records.map(\.id))
    }

    @Test func readsOfAnyBatchSizeFindEveryLineWhateverItsLengthAgainstTheFirstChunk() throws {
        // The first chunk a read asks for follows its limit (16 KiB for a few records); longer lines (here up to
        // 70 KB) are found by reading further, never cut or skipped.
        let directory = TemporaryDirectory("read-chunks")
        defer { directory.remove() }
        let lengths = [10, 20_000, 5, 70_000, 300, 16_380, 16_400, 1, 40_000, 2]
        let records = lengths.enumerated().map { index, length in
            event("e\(index)", ["text": .string(String(repeating: "x", count: length))])
        }
        var json = JSONByteWriter()
        for record in records { SegmentLog.appendLine(record, to: &json) }
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        try Data(json.bytes).write(to: URL(fileURLWithPath: directory.file(SegmentLog.segmentName(1))))
        let segments = [SegmentLog.SegmentExtent(index: 1, size: json.bytes.count)]
        for limit in [1, 2, 3, 7, .max] {
            var position = SegmentLog.Position(segment: 1, offset: 0)
            var read: [String] = []
            while position.offset < json.bytes.count {
                let result = SegmentLog.read(
                    directory.path,
                    from: position,
                    segments: segments,
                    limit: limit,
                    sealed: { _ in true }
                )
                #expect(result.skippedLines == 0 && result.failure == nil, "\(result.messages)")
                #expect(!result.records.isEmpty && result.records.count <= limit)
                guard !result.records.isEmpty else { break }
                read += result.records.map(\.id)
                position = result.end
            }
            #expect(read == records.map(\.id), "limit \(limit)")
        }
    }

    @Test func theQueueWritesAChecksumAfterEveryLine() async throws {
        let directory = TemporaryDirectory("checksummed")
        defer { directory.remove() }
        let queue = try undeliveringQueue(directory)
        try await whileRunning(queue) { try await queue.append([event("a"), event("b")]) }
        let text = try String(contentsOfFile: directory.file(SegmentLog.segmentName(1)), encoding: .utf8)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2)
        for line in lines {
            let parts = line.split(separator: "\t")
            #expect(parts.count == 2 && parts[1].utf8.count == 8, "\(line)")
        }
    }

    @Test func theLineChecksumIsCRC32CAtEveryLengthAndAlignment() {
        // The standard check value of CRC-32C.
        #expect(CRC32C.checksum(Array("123456789".utf8)[...]) == 0xE306_9283)
        // Against the bit-by-bit definition, for lengths around the eight-byte rounds and slices that do not
        // start at an array's start.
        func reference(_ bytes: ArraySlice<UInt8>) -> UInt32 {
            var crc: UInt32 = 0xFFFF_FFFF
            for byte in bytes {
                crc ^= UInt32(byte)
                for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            }
            return crc ^ 0xFFFF_FFFF
        }
        let bytes = (0..<300).map { UInt8(truncatingIfNeeded: $0 &* 151 &+ 7) }
        for start in 0..<9 {
            for end in start...min(start + 40, bytes.count) {
                #expect(CRC32C.checksum(bytes[start..<end]) == reference(bytes[start..<end]))
            }
            #expect(CRC32C.checksum(bytes[start...]) == reference(bytes[start...]))
        }
    }

    @Test func aSegmentDeletedUnderTheWriterFailsTheCommitAndTheNextCommitUsesANewSegment() async throws {
        let directory = TemporaryDirectory("unlinked")
        defer { directory.remove() }
        let deleteNext = Mutex(false)
        let faults = SegmentLogFaults { operation, path in
            // Someone deletes the segment while the writer syncs it.
            if operation == .sync,
                deleteNext.withLock({ flag in
                    defer { flag = false }; return flag
                })
            {
                _ = unlink(path)
            }
            return nil
        }
        var configuration = settings()
        let storage = SegmentRecordStore.Options(faults: faults)
        configuration.drainTimeout = .zero
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: NeverSettlingDestination(),
            settings: configuration,
            storage: storage
        )
        let (a, b, c) = (event("a"), event("b"), event("c"))
        try await whileRunning(queue) {
            try await queue.append([a])
            deleteNext.withLock { $0 = true }
            do {
                try await queue.append([b])
                Issue.record("a commit to a deleted segment was reported durable")
            } catch let error as DurabilityError {
                #expect(error.code == .io)
                #expect(error.message.contains("deleted"))
            }
            try await queue.append([c])
        }
        // The next commit went to a new segment, which a restart finds.
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == [c.id])
    }

    @Test func aQueueOpensAndDrainsOnAFullDisk() async throws {
        let directory = TemporaryDirectory("full-open")
        defer { directory.remove() }
        let records = [event("a"), event("b")]
        try writeSegment(directory, 3, records)
        try SegmentLog.ackText(SegmentLog.Position(segment: 3, offset: 0)).write(
            toFile: directory.file("ack"),
            atomically: true,
            encoding: .utf8
        )
        // No free block: creating any file and growing any file fail.
        let full = SegmentLogFaults { operation, _ in operation == .create || operation == .write ? ENOSPC : nil }
        let destination = InMemoryAnalyticsSink()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings(),
            storage: SegmentRecordStore.Options(faults: full)
        )
        try await whileRunning(queue) { try await queue.flush() }
        #expect(destination.records.map(\.id) == records.map(\.id))
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
    }

    @Test func anAckThatNeedsRewritingOnOpenIsWrittenInPlace() throws {
        let directory = TemporaryDirectory("ack-in-place")
        defer { directory.remove() }
        try writeSegment(directory, 5, [event("a")])
        // An ack from an earlier version (short numbers) that points at a deleted segment.
        try "v1 2 10\n".write(toFile: directory.file("ack"), atomically: true, encoding: .utf8)
        let full = SegmentLogFaults { operation, _ in operation == .create || operation == .write ? ENOSPC : nil }
        let log = try SegmentLog(directory: directory.path, faults: full)
        log.close()
        let ack = try String(contentsOfFile: directory.file("ack"), encoding: .utf8)
        #expect(ack == SegmentLog.ackText(SegmentLog.Position(segment: 5, offset: 0)))
    }

    @Test func aSegmentIndexAtTheTopOfItsRangeRefusesNewRecordsInsteadOfWritingAFileItCannotOpen() async throws {
        let directory = TemporaryDirectory("top-index")
        defer { directory.remove() }
        let a = event("a")
        try writeSegment(directory, SegmentLog.maximumSegmentIndex, [a])
        let queue = try undeliveringQueue(directory)
        try await whileRunning(queue) {
            do {
                try await queue.append([event("b")])
                Issue.record("a segment past the index range was written")
            } catch let error as DurabilityError {
                #expect(error.code == .full)
            }
        }
        // The directory still opens.
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == [a.id])
        _ = try DeliveryPipeline.durable(directory: directory.path, destination: NeverSettlingDestination())
    }

    /// A pipeline cancelled while it writes an acknowledgement runs that write on its own task while the store
    /// closes the log. The write must then fail as `.closed`, not go to the ack's descriptor number, which the
    /// process hands to the next file it opens (a segment of another queue took the ack's 45 bytes so, and the
    /// record line they displaced was lost).
    @Test func anAcknowledgementAfterTheLogClosedFailsAndWritesIntoNoFileThatTookItsDescriptor() throws {
        let directory = TemporaryDirectory("ack-after-close")
        defer { directory.remove() }
        let log = try SegmentLog(directory: directory.path)
        let ackBefore = try String(contentsOfFile: directory.file("ack"), encoding: .utf8)
        log.close()
        // The lowest free descriptors are those the log just closed (unless a test beside this one took them).
        let files = (0..<4).map { directory.file("other-\($0)") }
        let descriptors = files.map { open($0, O_RDWR | O_CREAT | O_APPEND, 0o600) }
        defer { for descriptor in descriptors where descriptor >= 0 { close(descriptor) } }
        #expect(descriptors.allSatisfy { $0 >= 0 })
        do {
            try log.acknowledge(SegmentLog.Position(segment: 1, offset: 10), deleting: [], sync: true)
            Issue.record("an acknowledgement after close was taken")
        } catch {
            #expect(error.code == .closed)
            #expect(error.message.contains(directory.path))
        }
        for file in files {
            #expect(try String(contentsOfFile: file, encoding: .utf8).isEmpty, "\(file) took the ack's bytes")
        }
        #expect(try String(contentsOfFile: directory.file("ack"), encoding: .utf8) == ackBefore)
        // Syncing a closed log syncs nothing and fails nothing (the store's last step); closing again is harmless.
        try log.syncAck()
        log.close()
    }

    /// The same through the store: once its run returned, an acknowledgement (a pipeline's, late) fails as
    /// `.closed` and the records stay for the next run.
    @Test func aStoresAcknowledgementAfterItsRunEndedFailsAndTheRecordsStay() async throws {
        let directory = TemporaryDirectory("store-ack-after-run")
        defer { directory.remove() }
        let records = [event("a"), event("b")]
        let queue = try undeliveringQueue(directory)
        try await whileRunning(queue) { try await queue.append(records) }
        do {
            try await queue.store.acknowledge(through: SegmentLog.Position(segment: 1, offset: 1 << 20))
            Issue.record("an acknowledgement after the run was taken")
        } catch {
            #expect(error.code == .closed)
        }
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == records.map(\.id))
    }

    @Test func aFreshQueuesRestartFindsItsAckAtASegmentThatIsThere() throws {
        let directory = TemporaryDirectory("fresh-restart")
        defer { directory.remove() }
        let first = try SegmentLog(directory: directory.path)
        var json = JSONByteWriter()
        SegmentLog.appendLine(event("a"), to: &json)
        try first.append(json.bytes, to: first.recovery.nextIndex, at: 0)
        first.close()
        let second = try SegmentLog(directory: directory.path)
        defer { second.close() }
        #expect(second.recovery.warnings.isEmpty, "\(second.recovery.warnings)")
        #expect(second.recovery.cursor == SegmentLog.Position(segment: 1, offset: 0))
    }
}

/// A destination that never settles anything: every delivery is retryable (records stay queued).
struct NeverSettlingDestination: AnalyticsDestination {
    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        .retry(records, DeliveryError(.serverError, "unavailable"))
    }
}
