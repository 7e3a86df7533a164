import ContainerKit
import Foundation
import Synchronization
import Testing

@testable import ContainerKitBraze

/// The one delivery engine: its pure machine driven step by step, and the shell over the memory store.
@Suite struct DeliveryPipelineTests {
    typealias Machine = DeliveryPipelineMachine<Int, String>

    static func batch(_ ids: [String], end: Int?) -> StoredBatch<Int> {
        StoredBatch(records: ids.map { event($0) }, end: end)
    }

    static func deliveries(_ actions: [Machine.Action]) -> [Int] {
        actions.compactMap { if case .deliver(let id, _) = $0 { return id } else { return nil } }
    }

    static func acknowledgements(_ actions: [Machine.Action]) -> [Int] {
        actions.compactMap { if case .acknowledge(let position) = $0 { return position } else { return nil } }
    }

    @Test func batchesInFlightAreAcknowledgedInStoreOrder() throws {
        var machine = Machine(batchSize: 2, maximumInFlight: 2)
        try machine.start()
        #expect(machine.nextStep(now: .zero) == .read(after: nil, limit: 2))
        let first = Self.deliveries(machine.readCompleted(Self.batch(["a", "b"], end: 2)))
        #expect(machine.nextStep(now: .zero) == .read(after: 2, limit: 2))
        let second = Self.deliveries(machine.readCompleted(Self.batch(["c", "d"], end: 4)))
        // Both slots are busy.
        #expect(machine.nextStep(now: .zero) == .wait(until: nil))
        // The second batch settles first: nothing is acknowledged until the first one is settled too.
        #expect(Self.acknowledgements(machine.settled(id: try #require(second.first), error: nil)).isEmpty)
        #expect(Self.acknowledgements(machine.settled(id: try #require(first.first), error: nil)) == [4])
    }

    @Test func aFailedReadAcknowledgesNothingAndReadsTheSamePositionAgainAfterTheBackoff() throws {
        var machine = Machine(batchSize: 10, maximumInFlight: 1)
        try machine.start()
        #expect(machine.nextStep(now: .zero) == .read(after: nil, limit: 10))
        _ = machine.readCompleted(Self.batch(["a"], end: 1))
        _ = machine.settled(id: 1, error: nil)
        #expect(machine.nextStep(now: .zero) == .read(after: 1, limit: 10))
        machine.readFailed(retryAt: .seconds(1))
        #expect(machine.nextStep(now: .milliseconds(500)) == .wait(until: .seconds(1)))
        #expect(machine.nextStep(now: .seconds(1)) == .read(after: 1, limit: 10))
    }

    @Test func aBatchOfOnlySkippedRecordsIsAcknowledgedInTurn() throws {
        var machine = Machine(batchSize: 10, maximumInFlight: 2)
        try machine.start()
        _ = machine.nextStep(now: .zero)
        let first = Self.deliveries(machine.readCompleted(Self.batch(["a"], end: 1)))
        _ = machine.nextStep(now: .zero)
        let skipped = StoredBatch<Int>(records: [], end: 3, skipped: 2)
        #expect(Self.acknowledgements(machine.readCompleted(skipped)).isEmpty)
        #expect(Self.acknowledgements(machine.settled(id: try #require(first.first), error: nil)) == [3])
    }

    @Test func theDrainEndsOnceEverythingIsDeliveredOrAtItsDeadline() throws {
        var machine = Machine(batchSize: 10, maximumInFlight: 1)
        try machine.start()
        _ = machine.drain(deadline: .seconds(10))
        #expect(!machine.acceptsRecords)
        #expect(machine.nextStep(now: .zero) == .read(after: nil, limit: 10))
        _ = machine.readCompleted(Self.batch(["a"], end: 1))
        #expect(machine.nextStep(now: .seconds(1)) == .wait(until: .seconds(10)))
        #expect(machine.nextStep(now: .seconds(10)) == .finish)
    }

    @Test func durabilityWaitersAreAnsweredPerTicketAndAtTheStop() throws {
        var machine = Machine(batchSize: 10, maximumInFlight: 1)
        try machine.start()
        machine.appended(ticket: 1)
        machine.appended(ticket: 2)
        machine.appended(ticket: 3)
        #expect(machine.waitUntilDurable(ticket: 1, "w1") == nil)
        #expect(machine.waitUntilDurable(ticket: 2, "w2") == nil)
        #expect(machine.waitUntilDurable(ticket: 3, "w3") == nil)
        let resumed =
            machine.committed(through: 1, records: 1) + machine.commitFailed(2...2, error: .init(.diskFull, "full"))
        let answers = resumed.compactMap { action -> (String, Bool)? in
            if case .resumeDurability(let waiter, let error) = action { return (waiter, error == nil) }
            return nil
        }
        #expect(answers.map(\.0) == ["w1", "w2"])
        #expect(answers.map(\.1) == [true, false])
        let stopped = machine.stop().compactMap { action -> String? in
            if case .resumeDurability(let waiter, let error) = action, error?.code == .stopped { return waiter }
            return nil
        }
        #expect(stopped == ["w3"])
    }

    @Test func aPipelineOverTheMemoryStoreDeliversFlushesAndDrainsOnGracefulShutdown() async throws {
        let destination = InMemoryAnalyticsSink()
        var configuration = DeliveryPipeline<MemoryRecordStore>.Configuration()
        configuration.logger = InMemoryLogger()
        let pipeline = DeliveryPipeline(
            store: MemoryRecordStore(),
            destination: destination,
            configuration: configuration
        )
        let records = (0..<5).map { event("e\($0)") }
        try pipeline.enqueue(Array(records[0..<2]))
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pipeline.run() }
            try await pipeline.flush()
            #expect(destination.records.map(\.id) == records[0..<2].map(\.id))
            let token = try #require(try pipeline.enqueue(Array(records[2...])))
            try await token.wait()
            pipeline.gracefulShutdown()
            // run() returns by itself once the drain delivered everything.
            try await group.waitForAll()
        }
        #expect(destination.records.map(\.id) == records.map(\.id))
        #expect(throws: AnalyticsSinkError.self) { try pipeline.enqueue([event("late")]) }
        #expect(pipeline.statistics.deliveredRecords == 5)
    }

    @Test func cancellingRunStopsAtOnceWithoutDelivering() async throws {
        let destination = AnnouncingHangingDestination()
        var configuration = DeliveryPipeline<MemoryRecordStore>.Configuration()
        configuration.logger = InMemoryLogger()
        let store = MemoryRecordStore()
        let pipeline = DeliveryPipeline(store: store, destination: destination, configuration: configuration)
        try pipeline.enqueue([event("a")])
        let running = Task { try await pipeline.run() }
        var arrivals = destination.arrivals.makeAsyncIterator()
        _ = await arrivals.next()
        running.cancel()
        try await running.value
        // The delivery in flight was abandoned: nothing was acknowledged.
        #expect(store.count == 1)
        #expect(pipeline.statistics.acknowledgements == 0)
    }
}

/// A destination whose deliveries never answer until cancelled; each is announced on ``arrivals``.
final class AnnouncingHangingDestination: AnalyticsDestination {
    let arrivals: AsyncStream<[AnalyticsRecord]>
    private let arrived: AsyncStream<[AnalyticsRecord]>.Continuation

    init() { (arrivals, arrived) = AsyncStream.makeStream() }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        arrived.yield(records)
        await Latch().wait()
        return .retry(records, DeliveryError(.shutDown, "cancelled"))
    }
}
