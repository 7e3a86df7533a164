import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

@Suite struct DurableQueueTests {
    func configuration(clock: ManualClock? = nil) -> DeliverySettings {
        var configuration = DeliverySettings()
        configuration.logger = InMemoryLogger()
        configuration.random = { 1 }
        configuration.drainTimeout = .seconds(3600)
        return configuration
    }

    func open(
        _ directory: TemporaryDirectory,
        _ destination: any AnalyticsDestination,
        _ settings: DeliverySettings? = nil,
        storage: SegmentRecordStore.Options = SegmentRecordStore.Options(),
        clock: ManualClock = .skippingShortSleeps()
    ) throws(AnalyticsSinkError) -> DeliveryPipeline<SegmentRecordStore> {
        try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: settings ?? configuration(),
            storage: storage,
            clock: clock
        )
    }

    @Test func appendReturnsOnceRecordsAreDurableAndDelivers() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream()
        let queue = try open(directory, downstream)
        let records = (0..<10).map { event("e\($0)") }
        try await whileRunning(queue) {
            try await queue.append(records)
            #expect(queue.statistics.durableRecords == 10)
            #expect(queue.statistics.commits >= 1)
            try await queue.flush()
        }
        #expect(downstream.delivered == records)
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
    }

    // Records committed from memory reach the destination with the JSON their append encoded (so Braze's
    // batcher copies instead of encoding them again), across several appends and commits.
    @Test func batchesFromMemoryCarryTheRecordsJSON() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = JSONRecordingDownstream()
        var settings = configuration()
        settings.batchSize = 4
        let queue = try open(directory, downstream, settings)
        let records = (0..<10).map { event("e\($0)", ["n": .int(Int64($0)), "text": "a \"quoted\" \u{e9}"]) }
        try await whileRunning(queue) {
            for chunk in [records[0..<3], records[3..<4], records[4..<10]] { try queue.enqueue(Array(chunk)) }
            try await queue.flush()
        }
        let batches = downstream.batches
        #expect(batches.flatMap(\.records) == records)
        for batch in batches {
            let json = try #require(batch.json)
            #expect(json.count == batch.records.count)
            for (index, record) in batch.records.enumerated() {
                #expect(String(decoding: json[index], as: UTF8.self) == record.jsonLine)
            }
        }
    }

    @Test func theInitializerStartsNothingAndRunDrainsWhenCancelled() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream()
        let queue = try open(directory, downstream)
        let token = try #require(try queue.enqueue([event("early")]))
        // Nothing runs yet: the record is neither written nor delivered.
        #expect(queue.statistics.commits == 0)
        #expect(downstream.attempts == 0)
        try await whileRunning(queue) { try await token.wait() }
        // Cancelling `run()` drained: the record is delivered and acknowledged.
        #expect(downstream.delivered.map(\.payload) == [event("early").payload])
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
        #expect(throws: AnalyticsSinkError.self) { try queue.enqueue([event("late")]) }
    }

    @Test func unconfirmedRecordsAreReplayedAfterReopening() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let failing = ScriptedDownstream(mode: .fail)
        let records = (0..<25).map { event("e\($0)", ["n": .int(Int64($0)), "f": 1.0]) }
        var settings = configuration()
        settings.drainTimeout = .zero
        let first = try open(directory, failing, settings)
        try await whileRunning(first) { try await first.append(records) }
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path) == records)

        let downstream = ScriptedDownstream()
        let second = try open(directory, downstream)
        try await whileRunning(second) { try await second.flush() }
        #expect(downstream.delivered == records)
        #expect(second.statistics.recordsReadFromDisk == 25)
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
    }

    @Test func aFlushEndsWhenTheReopenedLogHoldsNothingUndelivered() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let first = try open(directory, ScriptedDownstream())
        try await whileRunning(first) {
            try await first.append((0..<5).map { event("e\($0)") })
            try await first.flush()
        }
        // The segment is still there, acknowledged to its end (as after a crash with nothing pending).
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: directory.path).contains { $0.hasPrefix("segment-") }
        )

        let downstream = ScriptedDownstream()
        let second = try open(directory, downstream)
        // The flush begins before the delivery loop has read the log: only that read shows nothing is left.
        let flush = Task.immediate { try await second.flush() }
        #expect(second.waitingFlushCount == 1)
        try await whileRunning(second) {
            // The flush ends while the queue runs (a flush that kept waiting for a record that is not there
            // would keep this test waiting).
            await #expect(throws: Never.self) { try await flush.value }
        }
        #expect(downstream.attempts == 0)
    }

    @Test func tornLastLineIsIgnoredAfterACrash() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = configuration()
        settings.drainTimeout = .zero
        let first = try open(directory, ScriptedDownstream(mode: .fail), settings)
        let records = (0..<3).map { event("e\($0)") }
        try await whileRunning(first) { try await first.append(records) }
        // A crash in the middle of a write leaves half a line at the end of the segment.
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
            $0.hasPrefix("segment-")
        }
        let written = try #require(
            segments.sorted().last {
                (try? Data(contentsOf: URL(fileURLWithPath: directory.file($0))))?.isEmpty == false
            }
        )
        let handle = try #require(FileHandle(forWritingAtPath: directory.file(written)))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"type":"custom_event","id":"torn","ti"#.utf8))
        handle.closeFile()
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path) == records)

        let downstream = ScriptedDownstream()
        let logger = InMemoryLogger()
        var reopened = configuration()
        reopened.logger = logger
        let second = try open(directory, downstream, reopened)
        try await whileRunning(second) {
            try await second.flush()
            #expect(downstream.delivered == records)
            #expect(second.statistics.skippedRecords == 1)
            #expect(
                logger.entries.contains {
                    $0.level == .warning && $0.metadata["queue"] == directory.path
                        && $0.metadata["problem"]?.contains("torn last line") == true
                }
            )
            try await second.append([event("after")])
            try await second.flush()
        }
        #expect(downstream.delivered.map(\.id) == records.map(\.id) + [downstream.delivered.last!.id])
    }

    @Test func concurrentAppendsShareFsyncs() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream()
        // The first fsync waits until every append is taken, so what comes meanwhile shares the next ones
        // whatever the machine's speed (appends that trickled in, on a slow or busy machine, could each find
        // the writer idle and get an fsync of their own).
        let gate = DispatchSemaphore(value: 0)
        let first = Mutex(true)
        let settings = configuration()
        var storage = SegmentRecordStore.Options()
        storage.faults = SegmentLogFaults { operation, _ in
            if operation == .sync,
                first.withLock({ first in
                    defer { first = false }; return first
                })
            {
                gate.wait()
            }
            return nil
        }
        let queue = try open(directory, downstream, settings, storage: storage)
        let appends = 2000
        try await whileRunning(queue) {
            let tickets = try await withThrowingTaskGroup(of: UInt64?.self) { group in
                for i in 0..<appends {
                    group.addTask { try queue.enqueue([event("e\(i)")])?.ticket }
                }
                return try await group.reduce(into: [UInt64]()) { tickets, ticket in
                    if let ticket { tickets.append(ticket) }
                }
            }
            gate.signal()
            try await queue.waitUntilDurable(tickets: tickets)
            let statistics = queue.statistics
            #expect(tickets.count == appends)
            #expect(statistics.durableRecords == appends)
            #expect(statistics.commits < appends / 4, "\(statistics.commits) commits for \(appends) appends")
            try await queue.flush()
        }
        #expect(Set(downstream.delivered.map(\.id)).count == appends)
    }

    @Test func aCommitDelayGathersConcurrentAppendsAndLosesNothing() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream()
        let settings = configuration()
        var storage = SegmentRecordStore.Options()
        storage.commitDelay = .milliseconds(2)
        let queue = try open(directory, downstream, settings, storage: storage)
        let records = (0..<200).map { event("e\($0)") }
        try await whileRunning(queue) {
            try await withThrowingTaskGroup(of: Void.self) { group in
                for chunk in stride(from: 0, to: records.count, by: 4) {
                    group.addTask { try await queue.append(Array(records[chunk..<chunk + 4])) }
                }
                try await group.waitForAll()
            }
            #expect(queue.statistics.durableRecords == 200)
            #expect(queue.statistics.commits < 50, "50 appends, fewer commits")
            try await queue.flush()
        }
        #expect(Set(downstream.delivered) == Set(records))
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
    }

    @Test func recordsAreDeletedOnlyOnceTheDownstreamConfirms() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream(mode: .fail, batchSize: 7)
        let settings = configuration()
        var storage = SegmentRecordStore.Options()
        storage.maximumSegmentBytes = 1024
        let queue = try open(directory, downstream, settings, storage: storage)
        let records = (0..<60).map { event("e\($0)", ["i": .int(Int64($0))]) }
        try await whileRunning(queue) {
            for record in records { try await queue.append([record]) }
            await downstream.waitForAttempts(3)
            #expect(try SegmentRecordStore.pendingRecords(in: directory.path) == records)
            #expect(queue.statistics.segmentCount > 3)
            #expect(queue.statistics.deliveredRecords == 0)

            downstream.mode = .confirm
            // A delivery that began before the switch may still fail, and fail the flush waiting beside it.
            try await queue.flushIgnoringRetries()
            #expect(downstream.delivered == records)
            #expect(queue.statistics.segmentCount == 1)
            #expect(queue.statistics.acknowledgements >= 60 / 7)
            #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
        }
    }

    /// One delivery at a time keeps the log's order; several at once deliver every record once too.
    @Test(arguments: [1, 4])
    func aBacklogBeyondTheMemoryBufferIsReadBackFromDisk(concurrentDeliveries: Int) async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream(mode: .fail, batchSize: 16)
        var settings = configuration()
        var storage = SegmentRecordStore.Options()
        storage.maximumBufferedRecords = 10
        storage.maximumSegmentBytes = 4096
        settings.maximumConcurrentDeliveries = concurrentDeliveries
        let queue = try open(directory, downstream, settings, storage: storage)
        let records = (0..<300).map { event("e\($0)") }
        try await whileRunning(queue) {
            for chunk in stride(from: 0, to: records.count, by: 5) {
                try await queue.append(Array(records[chunk..<chunk + 5]))
            }
            downstream.mode = .confirm
            // A delivery that began before the switch may still fail, and fail the flush waiting beside it.
            try await queue.flushIgnoringRetries()
            if concurrentDeliveries == 1 {
                #expect(downstream.delivered == records)
            } else {
                #expect(downstream.delivered.count == 300 && Set(downstream.delivered) == Set(records))
            }
            #expect(queue.statistics.recordsReadFromDisk > 0)
            try await queue.append([event("tail")])
            try await queue.flush()
            #expect(downstream.delivered.count == 301)
        }
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
    }

    @Test func severalBatchesGoOutAtOnceAndAreAcknowledgedInOrder() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = GatedDestination(batchSize: 5)
        var settings = configuration()
        settings.maximumConcurrentDeliveries = 3
        let queue = try open(directory, downstream, settings)
        let records = (0..<20).map { event("e\($0)") }
        try await whileRunning(queue) {
            try await queue.append(records)
            var arrivals = downstream.arrivals.makeAsyncIterator()
            var batches: [[AnalyticsRecord]] = []
            for _ in 0..<3 { batches.append(try #require(await arrivals.next())) }
            // They start concurrently, in any order: name them by their place in the log.
            batches.sort { first, second in
                records.firstIndex(of: first[0])! < records.firstIndex(of: second[0])!
            }
            #expect(
                batches.map { $0.map(\.payload) }
                    == [0, 5, 10].map { start in
                        records[start..<start + 5].map(\.payload)
                    }
            )
            // The later batches settle first: nothing is acknowledged past the first batch, and their slots
            // stay taken until it is settled.
            downstream.settle(batches[2][0])
            downstream.settle(batches[1][0])
            #expect(try SegmentRecordStore.pendingRecords(in: directory.path).count == 20, "the first batch is out")
            // The first fails once and is retried.
            downstream.settle(batches[0][0], accept: false)
            let retried = try #require(await arrivals.next())
            #expect(retried.map(\.payload) == batches[0].map(\.payload))
            downstream.settle(retried[0])
            // Now the first three are acknowledged together, and the last batch goes out. The acknowledgement is
            // written beside that delivery: on disk are either all twenty (not yet written) or the last five —
            // never a part of the first three (one acknowledgement covers them), never fewer than the last batch.
            let last = try #require(await arrivals.next())
            #expect(last.map(\.payload) == records[15...].map(\.payload))
            let pending = try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id)
            #expect(pending == last.map(\.id) || pending == records.map(\.id))
            downstream.settle(last[0])
            try await queue.flush()
            #expect(try SegmentRecordStore.pendingRecords(in: directory.path).isEmpty)
        }
        #expect(downstream.mostRunning == 3)
        #expect(Set(downstream.delivered.map(\.id)) == Set(records.map(\.id)))
        #expect(downstream.delivered.count == 20, "each record is delivered once")
    }

    @Test func aSecondQueueOnTheSameDirectoryIsRefused() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try open(directory, ScriptedDownstream())
        do {
            _ = try open(directory, ScriptedDownstream())
            Issue.record("expected the directory to be locked")
        } catch {
            #expect(error.code == .locked)
            #expect(error.message.contains("'\(directory.path)'"))
        }
        try await whileRunning(queue) {}
        _ = try open(directory, ScriptedDownstream())
    }

    @Test func anUnusableDirectoryIsAnError() {
        do {
            _ = try DeliveryPipeline.durable(directory: "/dev/null/queue", destination: ScriptedDownstream())
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .unwritable)
        }
    }

    @Test func aFullQueueRefusesNewRecords() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = configuration()
        var storage = SegmentRecordStore.Options()
        storage.maximumQueueBytes = 2000
        settings.drainTimeout = .zero
        let logger = InMemoryLogger()
        settings.logger = logger
        let queue = try open(directory, ScriptedDownstream(mode: .fail), settings, storage: storage)
        var accepted = 0
        try await whileRunning(queue) {
            var refusal: DurabilityError?
            for i in 0..<100 {
                do {
                    try await queue.append([event("e\(i)")])
                    accepted += 1
                } catch {
                    refusal = error as? DurabilityError
                    break
                }
            }
            #expect(refusal?.code == .full)
            #expect(accepted > 0)
            #expect(throws: AnalyticsSinkError.self) { try queue.enqueue([event("dropped")]) }
            #expect(
                logger.entries.contains {
                    $0.level == .error && $0.message == "refused records" && $0.metadata["records"] == "1"
                        && $0.metadata["code"] == "queue_full"
                }
            )
            #expect(queue.statistics.droppedRecords == 2)
        }
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).count == accepted)
    }

    @Test func aStoppedQueueRefusesRecordsAndRunsOnce() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try open(directory, ScriptedDownstream())
        try await whileRunning(queue) {}
        do {
            try queue.enqueue([event("late")])
            Issue.record("expected a refusal")
        } catch {
            #expect(error.code == .closed)
        }
        await #expect(throws: AnalyticsSinkError.self) { try await queue.run() }
    }

    // Issue 22: without run() nothing commits; a wait must end with `.notRunning`, not hang forever.
    @Test(.timeLimit(.minutes(1))) func waitingWithoutRunFailsFastAsNotRunning() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = configuration()
        settings.startTimeout = .zero
        let queue = try open(directory, ScriptedDownstream(), settings)
        let token = try #require(try queue.enqueue([event("a")]))
        do {
            try await token.wait()
            Issue.record("records were reported durable without run()")
        } catch {
            #expect(error.code == .notRunning)
        }
        do {
            try await queue.flush()
            Issue.record("a flush ended without run()")
        } catch let error as DurabilityError {
            #expect(error.code == .notRunning)
        }
        // The record is kept (not dropped): a run() started later stores and delivers it.
        #expect(queue.statistics.enqueuedRecords == 1)
        #expect(queue.statistics.droppedRecords == 0)
    }

    // Issue 22: SIGTERM reaches a host whose queue never ran: its graceful shutdown answers the waits at once.
    @Test(.timeLimit(.minutes(1))) func aGracefulShutdownWithoutRunEndsTheWaits() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = configuration()
        settings.startTimeout = .seconds(3600)
        let queue = try open(directory, ScriptedDownstream(), settings)
        let token = try #require(try queue.enqueue([event("a")]))
        await withTaskGroup(of: DurabilityError.Code?.self) { group in
            group.addTask {
                do {
                    try await token.wait()
                    return nil
                } catch let error as DurabilityError {
                    return error.code
                } catch {
                    return nil
                }
            }
            queue.gracefulShutdown()
            #expect(await group.next() == .notRunning)
        }
    }

    // Issue 22: a push whose queue does not run answers with a typed error the service maps by its code.
    @Test(.timeLimit(.minutes(1))) func aPushWaitingWithoutRunGetsNotRunning() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = configuration()
        settings.startTimeout = .zero
        let queue = try open(directory, ScriptedDownstream(), settings)
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(
            try await ContainerLoader().load(
                path: Fixtures.packageRoot.appendingPathComponent("Containers/GTM-MUSIC01.json").path
            )
        )
        BrazeTagProvider(sink: queue).register(on: manager)
        let session = manager.makeDataLayer()
        BrazeTagProvider.setUser(.externalID("u-1"), on: session)
        let result = await session.push(
            event: "played song",
            parameters: ["title": "So What", "genre": "jazz", "duration": 545]
        )
        #expect(!result.durability.isEmpty)
        do {
            try await result.waitUntilDurable()
            Issue.record("a push was reported durable without run()")
        } catch {
            #expect(error.code == .notRunning)
        }
    }

    @Test func aPartialBatchLingersBeforeItIsDelivered() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualClock.skippingShortSleeps()
        var settings = configuration()
        settings.batchSize = 10
        settings.linger = .milliseconds(250)
        let downstream = ScriptedDownstream()
        let queue = try open(directory, downstream, settings, clock: clock)
        try await whileRunning(queue) {
            try await queue.append([event("a")])
            await downstream.waitForDelivered(1)
            // The loop waited for more records on the queue's clock before it sent the partial batch.
            #expect(clock.autoAdvancedSleeps.first == .milliseconds(250))
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aPartialBatchBehindTheOnlyDeliveryAllowedGoesAfterItsLingerWithNothingAppendedAfterIt() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = configuration()
        settings.batchSize = 2
        settings.linger = .milliseconds(250)
        settings.maximumConcurrentDeliveries = 1
        let downstream = GatedDestination(batchSize: 2)
        let queue = try open(directory, downstream, settings)
        try await whileRunning(queue) {
            var arrivals = downstream.arrivals.makeAsyncIterator()
            let first = [event("a"), event("b")]
            try await queue.append(first)
            #expect(try #require(await arrivals.next()) == first)
            // The only delivery allowed is out: the loop waits for it with no deadline, woken by this commit.
            try await queue.append([event("c")])
            // Once the first batch settles, the lone record lingers on a deadline, then goes: the wait without a
            // deadline that was out must not keep it waiting for another append.
            downstream.settle(first[0])
            let second = try #require(await arrivals.next())
            #expect(second.map(\.payload) == [event("c").payload])
            downstream.settle(second[0])
            try await queue.flush()
            #expect(downstream.delivered.count == 3)
        }
    }

    @Test func flushDoesNotWaitForTheLinger() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = configuration()
        settings.batchSize = 10
        settings.linger = .seconds(3600)
        let downstream = ScriptedDownstream()
        let queue = try open(directory, downstream, settings)
        try await whileRunning(queue) {
            try await queue.append([event("a"), event("b")])
            try await queue.flush()
            #expect(downstream.delivered.count == 2)
        }
    }

    @Test func deliveryMessagesAreConstantAndCarryTheQueueAndTheFailureAsMetadata() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualClock.skippingShortSleeps()
        var settings = configuration()
        settings.retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(100),
            maximumDelay: .seconds(30)
        )
        let logger = InMemoryLogger()
        settings.logger = logger
        let downstream = ScriptedDownstream(mode: .fail)
        let queue = try open(directory, downstream, settings, clock: clock)
        try await whileRunning(queue) {
            try await queue.append([event("e")])
            await logger.waitForEntry { $0.level == .warning }
            downstream.mode = .confirm  // the drain delivers
        }
        let retry = try #require(logger.entries.first { $0.level == .warning })
        #expect(retry.message == "delivering records failed; retrying")
        #expect(retry.metadata["queue"] == directory.path)
        #expect(retry.metadata["records"] == "1" && retry.metadata["attempt"] == "1")
        #expect(retry.metadata["code"] == "server_error" && retry.metadata["status"] == "503")
        #expect(retry.metadata["error"] == "scripted downstream failure")
        #expect(retry.metadata["retry_in"] != nil)
        // No message names the queue, a count or the error: a log store groups them by their text.
        for entry in logger.entries {
            #expect(!entry.message.contains(directory.path), "\(entry)")
            #expect(!entry.message.contains("scripted"), "\(entry)")
            #expect(!entry.message.contains { $0.isNumber }, "\(entry)")
        }
    }

    @Test func failedDeliveriesBackOffExponentially() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let clock = ManualClock.skippingShortSleeps()
        var settings = configuration()
        settings.retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(100),
            maximumDelay: .milliseconds(400)
        )
        let logger = InMemoryLogger()
        settings.logger = logger
        let downstream = ScriptedDownstream(mode: .fail)
        let queue = try open(directory, downstream, settings, clock: clock)
        try await whileRunning(queue) {
            try await queue.append([event("e")])
            await clock.waitForAutoAdvancedSleeps(5)
            #expect(
                Array(clock.autoAdvancedSleeps.prefix(5)) == [
                    .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(400),
                    .milliseconds(400),
                ]
            )
            // The first failure is logged at once; the repeats are held back and counted.
            let retries = logger.entries.filter {
                $0.message == "delivering records failed; retrying" && $0.metadata["records"] == "1"
            }
            #expect(retries.count == 1)
            #expect(retries.first?.metadata["attempt"] == "1")
            downstream.mode = .confirm
            // A delivery that began before the switch may still fail, and fail the flush waiting beside it.
            try await queue.flushIgnoringRetries()
        }
        #expect(downstream.delivered.count == 1)
    }
}

/// The observer hooks: what a service's metrics see.
@Suite struct RuntimeObserverTests {
    final class Recorder: RuntimeObserver, DeliveryObserver {
        let events = Mutex<[RuntimeEvent]>([])
        let deliveryEvents = Mutex<[DeliveryEvent]>([])
        func observe(_ event: RuntimeEvent) { events.withLock { $0.append(event) } }
        func observe(_ event: DeliveryEvent) { deliveryEvents.withLock { $0.append(event) } }
        var all: [RuntimeEvent] { events.withLock { $0 } }
        var delivery: [DeliveryEvent] { deliveryEvents.withLock { $0 } }
    }

    @Test func theDurableQueueReportsEnqueuedDurableDeliveredAndBacklog() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let recorder = Recorder()
        var settings = DurableQueueTests().configuration()
        settings.observer = recorder
        let queue = try DurableQueueTests().open(directory, ScriptedDownstream(), settings)
        try await whileRunning(queue) {
            try await queue.append((0..<4).map { event("e\($0)") })
            try await queue.flush()
        }
        let events = recorder.delivery
        #expect(events.contains(.recordsEnqueued(count: 4)))
        #expect(events.contains(.recordsDurable(count: 4)))
        #expect(events.contains(.recordsDelivered(count: 4)))
        let backlogs = events.compactMap { event -> Int? in
            if case .queueBacklog(let records, _) = event { return records } else { return nil }
        }
        #expect(backlogs.last == 0)
    }

    @Test func aQueueWithoutItsOwnLoggerAndObserverReportsToTheManagersOnceRegistered() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let (managerLogger, recorder) = (InMemoryLogger(), Recorder())
        let manager = TagManager(logger: managerLogger, observer: recorder)
        var settings = DurableQueueTests().configuration()
        settings.logger = nil
        let downstream = ScriptedDownstream(mode: .fail)
        let queue = try DurableQueueTests().open(directory, downstream, settings)
        BrazeTagProvider(sink: queue).register(on: manager)
        try await whileRunning(queue) {
            try await queue.append([event("e")])
            await #expect(throws: (any Error).self) { try await queue.flush() }
        }
        #expect(recorder.delivery.contains(.recordsEnqueued(count: 1)))
        #expect(recorder.delivery.contains(.recordsDurable(count: 1)))
        #expect(recorder.delivery.contains { if case .deliveryFailed = $0 { return true } else { return false } })
        #expect(
            managerLogger.entries.contains {
                $0.level == .warning && $0.metadata["error"] == "scripted downstream failure"
            }
        )
    }

    @Test func aQueuesOwnLoggerAndObserverAreKeptWhenItsProviderIsRegistered() async throws {
        let (managerLogger, managerRecorder) = (InMemoryLogger(), Recorder())
        let manager = TagManager(logger: managerLogger, observer: managerRecorder)
        let (ownLogger, ownRecorder) = (InMemoryLogger(), Recorder())
        var settings = DeliverySettings(logger: ownLogger)
        settings.observer = ownRecorder
        let queue = DeliveryPipeline.inMemory(destination: ScriptedDownstream(), settings: settings)
        BrazeTagProvider(sink: queue).register(on: manager)
        _ = try queue.enqueue([event("e")])
        #expect(ownRecorder.delivery == [.recordsEnqueued(count: 1)])
        #expect(managerRecorder.delivery.isEmpty)
    }

    @Test func theTagManagerReportsEventsAndEachTagsStatus() async throws {
        let recorder = Recorder()
        let manager = TagManager(logger: InMemoryLogger(), observer: recorder)
        manager.add(
            try await ContainerLoader().load(
                path: Fixtures.packageRoot.appendingPathComponent("Containers/GTM-MUSIC01.json").path
            )
        )
        let sink = InMemoryAnalyticsSink()
        BrazeTagProvider(sink: sink).register(on: manager)
        let session = manager.makeDataLayer()
        BrazeTagProvider.setUser(.externalID("u-1"), on: session)
        await session.push(event: "played song", parameters: ["title": "So What", "genre": "jazz", "duration": 545])
        // A Braze call that breaks a rule is dropped, and reported so.
        await session.push(
            event: "played song",
            parameters: ["title": .string(String(repeating: "x", count: 300)), "genre": "jazz", "duration": 545]
        )
        let events = recorder.all
        #expect(
            events.filter { if case .eventEvaluated(_, "played song") = $0 { return true } else { return false } }.count
                == 2
        )
        let statuses = events.compactMap { event -> String? in
            if case .tagFired(_, _, _, _, let status) = event { return status.name } else { return nil }
        }
        #expect(statuses.contains("ok"))
        #expect(statuses.contains("dropped"))
    }
}

/// A destination that accepts everything and keeps each batch with the JSON the pipeline passed.
final class JSONRecordingDownstream: AnalyticsDestination {
    private let state = Mutex<[(records: [AnalyticsRecord], json: RecordsJSON?)]>([])

    var batches: [(records: [AnalyticsRecord], json: RecordsJSON?)] { state.withLock { $0 } }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        await deliver(records, json: nil)
    }

    func deliver(_ records: [AnalyticsRecord], json: RecordsJSON?) async -> DeliveryResult {
        state.withLock { $0.append((records, json)) }
        return .accepted(records)
    }
}
