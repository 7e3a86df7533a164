import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Prints `delivered <id>` for each record (one `write` per batch) before accepting the batch.
private struct PrintingDestination: AnalyticsDestination {
    let preferredBatchSize: Int

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        FileHandle.standardOutput.write(Data(records.map { "delivered \($0.id)\n" }.joined().utf8))
        return .accepted(records)
    }
}

/// A real crash: the test binary starts itself as a child that appends records, prints each ID once its
/// record is durable and delivers to a destination that prints each ID it accepts; the parent `kill -9`s
/// it mid-stream, checks that every acknowledged ID survived, and counts the records delivered both
/// before the kill and again after the restart.
@Suite struct DurableQueueCrashTests {
    static let childDirectoryVariable = "CONTAINERKIT_BRAZE_CRASH_CHILD_DIRECTORY"
    static let batchSize = 50

    /// The child's side. In a normal test run (no directory in the environment) it does nothing.
    @Test func crashChildAppendsUntilKilled() async throws {
        guard let directory = ProcessInfo.processInfo.environment[Self.childDirectoryVariable] else { return }
        var storage = SegmentRecordStore.Options()
        storage.maximumSegmentBytes = 16 * 1024
        var configuration = DeliverySettings()
        configuration.batchSize = Self.batchSize
        configuration.logger = InMemoryLogger()
        let queue = try DeliveryPipeline.durable(
            directory: directory,
            destination: PrintingDestination(preferredBatchSize: Self.batchSize),
            settings: configuration,
            storage: storage
        )
        try await whileRunning(queue) {
            var i = 0
            while true {
                let records = (0..<3).map { event("e\(i)-\($0)", ["i": .int(Int64(i))]) }
                try await queue.append(records)
                FileHandle.standardOutput.write(Data(records.map { "acked \($0.id)\n" }.joined().utf8))
                i += 1
            }
        }
    }

    @Test func recordsAcknowledgedBeforeAKillAreDeliveredAfterTheRestart() async throws {
        let directory = TemporaryDirectory("crash")
        defer { directory.remove() }
        // Read until 600 acknowledgements, kill, then read what the child wrote before it died.
        let (lines, termination) = try await runChildUntilKilled(
            filter: "crashChildAppendsUntilKilled",
            environment: [Self.childDirectoryVariable: directory.path],
            killAfter: 600,
            linesStartingWith: "acked "
        )
        #expect(termination == .uncaughtSignal)
        let acknowledged = lines.compactMap { line in line.hasPrefix("acked ") ? String(line.dropFirst(6)) : nil }
        let deliveredBefore = lines.compactMap { line in
            line.hasPrefix("delivered ") ? String(line.dropFirst(10)) : nil
        }
        #expect(acknowledged.count >= 600, "the child acknowledged only \(acknowledged.count) records")

        let pending = Set(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id))
        let before = Set(deliveredBefore)
        let lost = acknowledged.filter { !pending.contains($0) && !before.contains($0) }
        #expect(lost.isEmpty, "acknowledged before the kill but missing after it: \(lost.prefix(5))")

        let downstream = ScriptedDownstream()
        var configuration = DeliverySettings()
        configuration.logger = InMemoryLogger()
        let reopened = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: downstream,
            settings: configuration
        )
        try await whileRunning(reopened) { try await reopened.flush() }
        let after = Set(downstream.delivered.map(\.id))
        #expect(acknowledged.allSatisfy { after.contains($0) || before.contains($0) })
        #expect(after.count == pending.count)
        let twice = after.intersection(before).count
        print(
            "durable_queue_crash acknowledged=\(acknowledged.count) delivered_before_kill=\(before.count) delivered_twice=\(twice)"
        )
        // The pipeline's bound: the batches out to the destination (one at a time here) and one settled batch whose
        // acknowledgement was being written when the process died (reading waits for that write, no further).
        let bound = Self.batchSize * (DeliverySettings().maximumConcurrentDeliveries + 1)
        #expect(twice <= bound, "\(twice) records were delivered twice; at most \(bound) may be")
    }
}
