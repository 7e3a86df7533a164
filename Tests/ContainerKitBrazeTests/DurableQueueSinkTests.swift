import ContainerKit
import ContainerKitBraze
import Foundation
import Testing

@Suite struct DurableQueueSinkTests {
    func configuration(sleeper: RecordingSleeper = RecordingSleeper()) -> DurableQueueSink.Configuration {
        var configuration = DurableQueueSink.Configuration()
        configuration.sleep = sleeper.sleep
        configuration.logger = InMemoryLogger()
        return configuration
    }

    @Test func appendReturnsOnceRecordsAreDurableAndDelivers() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream()
        let queue = try DurableQueueSink(
            directory: directory.path,
            downstream: downstream,
            configuration: configuration()
        )
        let records = (0..<10).map { event("e\($0)") }
        try await queue.append(records)
        #expect(queue.statistics.durableRecords == 10)
        #expect(queue.statistics.commits >= 1)
        try await queue.flush()
        #expect(downstream.delivered == records)
        await queue.shutdown()
        #expect(try DurableQueueSink.pendingRecords(in: directory.path).isEmpty)
    }

    @Test func unconfirmedRecordsAreReplayedAfterReopening() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let failing = ScriptedDownstream(mode: .fail)
        let first = try DurableQueueSink(directory: directory.path, downstream: failing, configuration: configuration())
        let records = (0..<25).map { event("e\($0)", ["n": .int(Int64($0)), "f": 1.0]) }
        try await first.append(records)
        #expect(await eventually { failing.attempts > 0 })
        await first.shutdown()
        #expect(try DurableQueueSink.pendingRecords(in: directory.path) == records)

        let downstream = ScriptedDownstream()
        let second = try DurableQueueSink(
            directory: directory.path,
            downstream: downstream,
            configuration: configuration()
        )
        try await second.flush()
        #expect(downstream.delivered == records)
        #expect(second.statistics.recordsReadFromDisk == 25)
        await second.shutdown()
        #expect(try DurableQueueSink.pendingRecords(in: directory.path).isEmpty)
    }

    @Test func tornLastLineIsIgnoredAfterACrash() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let failing = ScriptedDownstream(mode: .fail)
        let first = try DurableQueueSink(directory: directory.path, downstream: failing, configuration: configuration())
        let records = (0..<3).map { event("e\($0)") }
        try await first.append(records)
        await first.shutdown()
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
        #expect(try DurableQueueSink.pendingRecords(in: directory.path) == records)

        let downstream = ScriptedDownstream()
        let logger = InMemoryLogger()
        var settings = configuration()
        settings.logger = logger
        let second = try DurableQueueSink(directory: directory.path, downstream: downstream, configuration: settings)
        try await second.flush()
        #expect(downstream.delivered == records)
        #expect(second.statistics.skippedLines == 1)
        #expect(logger.messages(at: .warning).contains { $0.contains("torn last line") })
        try await second.append([event("after")])
        try await second.flush()
        #expect(downstream.delivered.map(\.id) == records.map(\.id) + [downstream.delivered.last!.id])
        await second.shutdown()
    }

    @Test func concurrentAppendsShareFsyncs() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream()
        let queue = try DurableQueueSink(
            directory: directory.path,
            downstream: downstream,
            configuration: configuration()
        )
        let appends = 2000
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<appends {
                group.addTask { try await queue.append([event("e\(i)")]) }
            }
            try await group.waitForAll()
        }
        let statistics = queue.statistics
        #expect(statistics.durableRecords == appends)
        #expect(statistics.commits < appends / 4, "\(statistics.commits) commits for \(appends) appends")
        try await queue.flush()
        #expect(Set(downstream.delivered.map(\.id)).count == appends)
        await queue.shutdown()
    }

    @Test func recordsAreDeletedOnlyOnceTheDownstreamConfirms() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream(mode: .fail, batchSize: 7)
        var settings = configuration()
        settings.maximumSegmentBytes = 1024
        let queue = try DurableQueueSink(directory: directory.path, downstream: downstream, configuration: settings)
        let records = (0..<60).map { event("e\($0)", ["i": .int(Int64($0))]) }
        for record in records { try await queue.append([record]) }
        #expect(await eventually { downstream.attempts >= 3 })
        #expect(try DurableQueueSink.pendingRecords(in: directory.path) == records)
        #expect(queue.statistics.segmentCount > 3)
        #expect(queue.statistics.deliveredRecords == 0)

        downstream.mode = .confirm
        try await queue.flush()
        #expect(downstream.delivered == records)
        #expect(await eventually { queue.statistics.segmentCount == 1 })
        #expect(try DurableQueueSink.pendingRecords(in: directory.path).isEmpty)
        await queue.shutdown()
    }

    @Test func aBacklogBeyondTheMemoryBufferIsReadBackFromDisk() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let downstream = ScriptedDownstream(mode: .fail, batchSize: 16)
        var settings = configuration()
        settings.maximumBufferedRecords = 10
        settings.maximumSegmentBytes = 4096
        let queue = try DurableQueueSink(directory: directory.path, downstream: downstream, configuration: settings)
        let records = (0..<300).map { event("e\($0)") }
        for chunk in stride(from: 0, to: records.count, by: 5) {
            try await queue.append(Array(records[chunk..<chunk + 5]))
        }
        downstream.mode = .confirm
        try await queue.flush()
        #expect(downstream.delivered == records)
        #expect(queue.statistics.recordsReadFromDisk > 0)
        try await queue.append([event("tail")])
        try await queue.flush()
        #expect(downstream.delivered.count == 301)
        await queue.shutdown()
    }

    @Test func aSecondQueueOnTheSameDirectoryIsRefused() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try DurableQueueSink(
            directory: directory.path,
            downstream: ScriptedDownstream(),
            configuration: configuration()
        )
        do {
            _ = try DurableQueueSink(
                directory: directory.path,
                downstream: ScriptedDownstream(),
                configuration: configuration()
            )
            Issue.record("expected the directory to be locked")
        } catch {
            #expect(error.code == .locked)
            #expect(error.message.contains("'\(directory.path)'"))
        }
        await queue.shutdown()
        let reopened = try DurableQueueSink(
            directory: directory.path,
            downstream: ScriptedDownstream(),
            configuration: configuration()
        )
        await reopened.shutdown()
    }

    @Test func anUnusableDirectoryIsAnError() {
        do {
            _ = try DurableQueueSink(
                directory: "/dev/null/queue",
                downstream: ScriptedDownstream(),
                configuration: configuration()
            )
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .unwritable)
        }
    }

    @Test func aFullQueueRefusesNewRecords() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        var settings = configuration()
        settings.maximumQueueBytes = 2000
        let logger = InMemoryLogger()
        settings.logger = logger
        let queue = try DurableQueueSink(
            directory: directory.path,
            downstream: ScriptedDownstream(mode: .fail),
            configuration: settings
        )
        var accepted = 0
        var refusal: AnalyticsSinkError?
        for i in 0..<100 {
            do {
                try await queue.append([event("e\(i)")])
                accepted += 1
            } catch {
                refusal = error
                break
            }
        }
        #expect(refusal?.code == .queueFull)
        #expect(accepted > 0)
        queue.receive([event("dropped")])
        #expect(logger.messages(at: .error).contains { $0.contains("refused 1 records") })
        #expect(queue.statistics.refusedRecords == 2)
        #expect(try DurableQueueSink.pendingRecords(in: directory.path).count == accepted)
        await queue.shutdown()
    }

    @Test func aShutDownQueueRefusesRecords() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let queue = try DurableQueueSink(
            directory: directory.path,
            downstream: ScriptedDownstream(),
            configuration: configuration()
        )
        await queue.shutdown()
        await queue.shutdown()
        do {
            try queue.enqueue([event("late")])
            Issue.record("expected a refusal")
        } catch {
            #expect(error.code == .closed)
        }
    }

    @Test func failedDeliveriesBackOffExponentially() async throws {
        let directory = TemporaryDirectory()
        defer { directory.remove() }
        let sleeper = RecordingSleeper()
        var settings = configuration(sleeper: sleeper)
        settings.retryBaseDelay = .milliseconds(100)
        settings.retryMaximumDelay = .milliseconds(400)
        let downstream = ScriptedDownstream(mode: .fail)
        let queue = try DurableQueueSink(directory: directory.path, downstream: downstream, configuration: settings)
        try await queue.append([event("e")])
        #expect(await eventually { sleeper.delays.count >= 5 })
        #expect(
            Array(sleeper.delays.prefix(5)) == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(400), .milliseconds(400),
            ]
        )
        downstream.mode = .confirm
        try await queue.flush()
        #expect(downstream.delivered.count == 1)
        await queue.shutdown()
    }
}
