import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

/// A destination whose deliveries hang until they are cancelled (a server that never answers); it tells
/// the test when a delivery started.
final class HangingDestination: AnalyticsDestination {
    private let started = ProgressCounter()

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        started.advance()
        await Gate().wait()  // never opened: returns when the task is cancelled
        return .retry(records, DeliveryError(.shutDown, "cancelled"))
    }

    /// Returns once a delivery has started.
    func waitForDelivery() async { await started.reach(1) }
}

/// The drain after a graceful shutdown is bounded by `drainTimeout` on the injected clock, even when a delivery
/// hangs.
@Suite struct DrainTests {
    @Test func theInMemoryPipelinesDrainEndsAtItsDeadlineWhileADeliveryHangs() async throws {
        let clock = ManualClock()
        let destination = HangingDestination()
        var settings = DeliverySettings(lingerCount: 1, logger: InMemoryLogger())
        settings.drainTimeout = .seconds(5)
        let queue = DeliveryPipeline.inMemory(destination: destination, settings: settings, clock: clock)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await queue.run() }
            _ = try queue.enqueue([event("stuck"), event("waiting")])
            await destination.waitForDelivery()
            queue.gracefulShutdown()
            // The drain's deadline sleeps on the clock (beside the loop's own interval sleep).
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(5))
            try await group.waitForAll()
        }
        #expect(queue.statistics.droppedRecords == 2)
        #expect(queue.statistics.deliveredRecords == 0)
    }

    @Test func theDurableQueuesDrainEndsAtItsDeadlineAndKeepsTheRecords() async throws {
        let directory = TemporaryDirectory("drain")
        defer { directory.remove() }
        let clock = ManualClock()
        let destination = HangingDestination()
        var configuration = DeliverySettings()
        configuration.logger = InMemoryLogger()
        configuration.drainTimeout = .seconds(5)
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: configuration,
            clock: clock
        )
        let records = [event("stuck")]
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await queue.run() }
            try await queue.append(records)
            await destination.waitForDelivery()
            queue.gracefulShutdown()
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(5))
            try await group.waitForAll()
        }
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == records.map(\.id))
    }

    @Test func cancellingADurableQueueStopsAtOnceAndKeepsTheRecords() async throws {
        let directory = TemporaryDirectory("cancel")
        defer { directory.remove() }
        let destination = HangingDestination()
        var configuration = DeliverySettings()
        configuration.logger = InMemoryLogger()
        // A drain would wait an hour on this clock: cancellation must not drain.
        configuration.drainTimeout = .seconds(3600)
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: destination,
            settings: configuration,
            clock: ManualClock()
        )
        let records = [event("a"), event("b")]
        let running = Task { try await queue.run() }
        try await queue.append(records)
        await destination.waitForDelivery()
        running.cancel()
        try await running.value
        #expect(try SegmentRecordStore.pendingRecords(in: directory.path).map(\.id) == records.map(\.id))
        #expect(throws: AnalyticsSinkError.self) { try queue.enqueue([event("late")]) }
    }
}
