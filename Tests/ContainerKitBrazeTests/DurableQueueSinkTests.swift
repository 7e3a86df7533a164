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
        let queue = try DurableQueueSink(directory: directory.path, downstream: downstream, configuration: configuration())
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
        let second = try DurableQueueSink(directory: directory.path, downstream: downstream, configuration: configuration())
        try await second.flush()
        #expect(downstream.delivered == records)
        #expect(second.statistics.recordsReadFromDisk == 25)
        await second.shutdown()
        #expect(try DurableQueueSink.pendingRecords(in: directory.path).isEmpty)
    }
}
