import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// The one delivery engine: its pure machine driven step by step, and the shell over the memory store.
@Suite struct DeliveryPipelineTests {
    typealias Machine = DeliveryPipelineMachine<Int, String>

    static func batch(_ ids: [String], end: Int?) -> StoredBatch<Int> {
        StoredBatch(records: ids.map { event($0) }, end: end)
    }

    static func deliveries(_ actions: [Machine.Action]) -> [Int] {
        actions.compactMap { if case .deliver(let id, _, _) = $0 { return id } else { return nil } }
    }

    static func acknowledgements(_ actions: [Machine.Action]) -> [Int] {
        actions.compactMap { if case .acknowledge(let position) = $0 { return position } else { return nil } }
    }

    static func flushes(_ actions: [Machine.Action]) -> [String] {
        actions.compactMap { if case .resumeFlush(let waiter, _) = $0 { return waiter } else { return nil } }
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

    // Records being committed fill a partial batch: the loop waits for their commit (it wakes the loop) before
    // it reads, unless a flush waits; a full batch is read at once.
    @Test func aPartialBatchWaitsForTheCommitInFlight() throws {
        var machine = Machine(batchSize: 10, maximumInFlight: 1)
        try machine.start()
        machine.appended(ticket: 1)
        machine.appended(ticket: 2)
        _ = machine.committed(through: 1, records: 3)
        #expect(machine.nextStep(now: .zero) == .wait(until: nil))
        _ = machine.committed(through: 2, records: 4)
        #expect(machine.nextStep(now: .zero) == .read(after: nil, limit: 10))
        _ = machine.readCompleted(Self.batch(["a", "b", "c", "d", "e", "f", "g"], end: 7))
        _ = machine.settled(id: 1, error: nil)
        machine.appended(ticket: 3)
        machine.appended(ticket: 4)
        _ = machine.committed(through: 3, records: 12)
        #expect(machine.nextStep(now: .zero) == .read(after: 7, limit: 10), "a full batch is read at once")
        _ = machine.readCompleted(Self.batch((0..<10).map { "r\($0)" }, end: 17))
        _ = machine.settled(id: 2, error: nil)
        #expect(machine.nextStep(now: .zero) == .wait(until: nil), "two left, ticket 4 is being committed")
        _ = machine.flush("flush")
        #expect(machine.nextStep(now: .zero) == .read(after: 17, limit: 10), "a flush does not wait")
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

    // A store may pass over records while a batch is out (the PostgreSQL store reads no partition that has a
    // batch in flight) and say so once that batch's acknowledgement is written: a flush waiting meanwhile is
    // answered only after those records are read, delivered and acknowledged too.
    @Test func aFlushWaitsForTheAcknowledgementsAndForWhatTheStoreFindsMeanwhile() throws {
        var machine = Machine(batchSize: 10, maximumInFlight: 2)
        try machine.start()
        _ = machine.nextStep(now: .zero)
        let first = Self.deliveries(machine.readCompleted(Self.batch(["a"], end: 1)))
        _ = machine.flush("flush")
        // The store passes over the partition in flight: nothing more, as far as it can tell now.
        #expect(machine.nextStep(now: .zero) == .read(after: 1, limit: 10))
        #expect(Self.flushes(machine.readCompleted(Self.batch([], end: nil))).isEmpty)
        let settled = machine.settled(id: try #require(first.first), error: nil)
        #expect(Self.acknowledgements(settled) == [1])
        #expect(Self.flushes(settled).isEmpty, "not before the acknowledgement is written")
        // Written; the store said meanwhile that it holds more.
        _ = machine.committed(through: 0, records: 0)
        #expect(Self.flushes(machine.acknowledgementsWritten(1)).isEmpty)
        #expect(machine.nextStep(now: .zero) == .read(after: 1, limit: 10))
        let second = Self.deliveries(machine.readCompleted(Self.batch(["b"], end: 2)))
        #expect(machine.nextStep(now: .zero) == .read(after: 2, limit: 10))
        #expect(Self.flushes(machine.readCompleted(Self.batch([], end: nil))).isEmpty)
        #expect(Self.acknowledgements(machine.settled(id: try #require(second.first), error: nil)) == [2])
        #expect(Self.flushes(machine.acknowledgementsWritten(1)) == ["flush"])
    }

    // The store looked before a commit it reports while the read is out (a shared store's notice, a partition
    // whose batch was just acknowledged): that read's empty answer is not "nothing left", or a flush would end with
    // the committed records unread (and the loop wait for the next commit).
    @Test func aCommitReportedWhileAReadIsOutIsReadThoughThatReadFindsNothing() throws {
        var machine = Machine(batchSize: 10, maximumInFlight: 2)
        try machine.start()
        #expect(machine.nextStep(now: .zero) == .read(after: nil, limit: 10))
        #expect(Self.flushes(machine.readCompleted(Self.batch([], end: nil))).isEmpty)
        #expect(machine.caughtUp)
        _ = machine.flush("flush")
        #expect(machine.nextStep(now: .zero) == .read(after: nil, limit: 10))
        _ = machine.committed(through: 0, records: 0)
        #expect(Self.flushes(machine.readCompleted(Self.batch([], end: nil))).isEmpty)
        #expect(!machine.caughtUp)
        #expect(machine.nextStep(now: .zero) == .read(after: nil, limit: 10), "read again")
        let delivered = Self.deliveries(machine.readCompleted(Self.batch(["a"], end: 1)))
        #expect(machine.nextStep(now: .zero) == .read(after: 1, limit: 10))
        #expect(Self.flushes(machine.readCompleted(Self.batch([], end: nil))).isEmpty)
        #expect(Self.acknowledgements(machine.settled(id: try #require(delivered.first), error: nil)) == [1])
        #expect(Self.flushes(machine.acknowledgementsWritten(1)) == ["flush"])
        // With nothing reported while it was out, an empty read ends the reading: the loop waits.
        #expect(machine.nextStep(now: .zero) == .wait(until: nil))
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
        var settings = DeliverySettings()
        settings.logger = InMemoryLogger()
        let pipeline = DeliveryPipeline(
            store: MemoryRecordStore(),
            destination: destination,
            settings: settings
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

    @Test(.timeLimit(.minutes(1)))
    func recordsAnotherInstanceCommittedAreReadWhenTheStoreSaysSo() async throws {
        let store = SharedListStore()
        let (delivered, deliveries) = AsyncStream<[AnalyticsRecord]>.makeStream()
        var settings = DeliverySettings()
        settings.logger = InMemoryLogger()
        let pipeline = DeliveryPipeline(
            store: store,
            destination: StreamDestination(deliveries),
            settings: settings
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pipeline.run() }
            // Nothing stored yet: the read is empty, and no commit of this pipeline will wake it again.
            let commits = await store.running()
            try await pipeline.flush()
            let elsewhere = event("elsewhere")
            store.addCommittedElsewhere([elsewhere])
            commits.recordsAvailable()
            var iterator = delivered.makeAsyncIterator()
            #expect(await iterator.next()?.map(\.id) == [elsewhere.id])
            group.cancelAll()
        }
    }

    // A transactional store's refusal (a fenced session, a database that cannot be reached) reaches the
    // waiter as a typed DurabilityError with its own code, converted once where the commit failed; the
    // tickets of other commits are not affected.
    @Test(
        .timeLimit(.minutes(1)),
        arguments: [
            (AnalyticsSinkError.Code.superseded, DurabilityError.Code.superseded),
            (.unavailable, .unavailable), (.timeout, .timeout), (.diskFull, .diskFull),
        ]
    )
    func aStoreRefusalReachesTheWaiterWithItsCode(refusal: AnalyticsSinkError.Code, expected: DurabilityError.Code)
        async throws
    {
        let store = FencingStore(refusal: refusal)
        var settings = DeliverySettings()
        settings.logger = InMemoryLogger()
        let pipeline = DeliveryPipeline(
            store: store,
            destination: InMemoryAnalyticsSink(),
            settings: settings
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pipeline.run() }
            await store.running()
            let refused = try #require(try pipeline.enqueue([event("stale-1")]))
            let kept = try #require(try pipeline.enqueue([event("fresh-1")]))
            do throws(DurabilityError) {
                try await refused.wait()
                Issue.record("a refused commit was reported durable")
            } catch {
                #expect(error.code == expected)
                #expect(error.message.contains("stale-"))
            }
            try await kept.wait()
            await #expect(throws: DurabilityError.self) {
                try await pipeline.waitUntilDurable(tickets: [kept.ticket, refused.ticket])
            }
            group.cancelAll()
        }
        #expect(pipeline.statistics.droppedRecords == 1)
    }

    // The next batch is read and delivered while the store writes the last acknowledgement (on its own
    // thread, for the segment log), not after it; a batch settled meanwhile waits for that write (nothing
    // more is read), and a flush is answered only once the acknowledgements before it are recorded.
    @Test(.timeLimit(.minutes(1)))
    func deliveryGoesOnWhileTheStoreRecordsAnAcknowledgement() async throws {
        let store = SlowAcknowledgingStore()
        let destination = CountingDestination()
        var settings = DeliverySettings()
        settings.logger = InMemoryLogger()
        settings.batchSize = 1
        let pipeline = DeliveryPipeline(store: store, destination: destination, settings: settings)
        for id in ["a", "b", "c"] { try pipeline.enqueue([event(id)]) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pipeline.run() }
            // The first acknowledgement is held: the second batch is delivered meanwhile.
            await destination.delivered.reach(2)
            #expect(store.acknowledged == [])
            store.release.open()
            try await pipeline.flush()
            #expect(store.acknowledged == [1, 2, 3])
            #expect(store.count == 0)
            pipeline.gracefulShutdown()
            try await group.waitForAll()
        }
        #expect(destination.delivered.value == 3)
    }

    @Test func acknowledgementsThatWaitedAreMadeAsOneThroughTheLast() {
        typealias Pipeline = DeliveryPipeline<MemoryRecordStore>
        let coalesced = Pipeline.Acknowledgements.coalesced([.acknowledge(2), .wakeDelivery, .acknowledge(5)])
        #expect(coalesced.count == 2)
        #expect(
            coalesced.compactMap { action -> UInt64? in if case .acknowledge(let end) = action { end } else { nil } }
                == [5]
        )
    }

    @Test func cancellingRunStopsAtOnceWithoutDelivering() async throws {
        let destination = AnnouncingHangingDestination()
        var settings = DeliverySettings()
        settings.logger = InMemoryLogger()
        let store = MemoryRecordStore()
        let pipeline = DeliveryPipeline(store: store, destination: destination, settings: settings)
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

/// A store whose records another instance committed: ``addCommittedElsewhere(_:)`` adds them without a commit
/// report of this store.
private final class SharedListStore: RecordStore {
    private struct State {
        var records: [AnalyticsRecord] = []
        var acknowledged = 0
        var commits: RecordStoreCommits?
        var waiters: [CheckedContinuation<RecordStoreCommits, Never>] = []
    }
    private let state = Mutex(State())

    func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 {
        throw AnalyticsSinkError(.closed, "records are committed elsewhere")
    }

    func run(reporting commits: RecordStoreCommits) async throws {
        let waiters = state.withLock { state in
            state.commits = commits
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: commits) }
        await Gate().wait()  // never opened: returns when the task is cancelled
    }

    /// The reporter, once ``run(reporting:)`` started.
    func running() async -> RecordStoreCommits {
        await withCheckedContinuation { continuation in
            let commits = state.withLock { state -> RecordStoreCommits? in
                if let commits = state.commits { return commits }
                state.waiters.append(continuation)
                return nil
            }
            if let commits { continuation.resume(returning: commits) }
        }
    }

    func addCommittedElsewhere(_ records: [AnalyticsRecord]) { state.withLock { $0.records += records } }

    func read(after position: Int?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<Int> {
        state.withLock { state in
            let start = position ?? state.acknowledged
            let end = min(state.records.count, start + limit)
            guard end > start else { return .empty }
            return StoredBatch(records: Array(state.records[start..<end]), end: end)
        }
    }

    func acknowledge(through position: Int) async throws(AnalyticsSinkError) {
        state.withLock { $0.acknowledged = position }
    }
}

/// A destination that accepts everything and yields each delivered batch.
private struct StreamDestination: AnalyticsDestination {
    let batches: AsyncStream<[AnalyticsRecord]>.Continuation
    init(_ batches: AsyncStream<[AnalyticsRecord]>.Continuation) { self.batches = batches }
    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        batches.yield(records)
        return .accepted(records)
    }
}

/// A store that commits at once and refuses every append whose first record names `stale-` with
/// `refusal` (as a transactional store refuses a fenced session), converted once to a ``DurabilityError``.
private final class FencingStore: RecordStore {
    private struct State {
        var records: [AnalyticsRecord] = []
        var tickets: UInt64 = 0
        var commits: RecordStoreCommits?
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let state = Mutex(State())
    let refusal: AnalyticsSinkError.Code

    init(refusal: AnalyticsSinkError.Code) { self.refusal = refusal }

    func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 {
        let stale = !records.records.isEmpty && String(decoding: records.json(at: 0), as: UTF8.self).contains("stale-")
        let (ticket, commits) = state.withLock { state in
            state.tickets += 1
            if !stale { state.records += records.records }
            return (state.tickets, state.commits)
        }
        if stale {
            let error = AnalyticsSinkError(refusal, "the session of a \"stale-\" push is refused")
            commits?.failed(ticket...ticket, records: records.records.count, error: DurabilityError(error))
        } else {
            commits?.committed(through: ticket, records: records.records.count)
        }
        return ticket
    }

    func run(reporting commits: RecordStoreCommits) async throws {
        let waiters = state.withLock { state in
            state.commits = commits
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
        await Gate().wait()  // never opened: returns when the task is cancelled
    }

    /// Returns once ``run(reporting:)`` started.
    func running() async {
        await withCheckedContinuation { continuation in
            let started = state.withLock { state in
                if state.commits != nil { return true }
                state.waiters.append(continuation)
                return false
            }
            if started { continuation.resume() }
        }
    }

    func read(after position: Int?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<Int> {
        state.withLock { state in
            let start = position ?? 0
            let end = min(state.records.count, start + limit)
            guard end > start else { return .empty }
            return StoredBatch(records: Array(state.records[start..<end]), end: end)
        }
    }

    func acknowledge(through position: Int) async throws(AnalyticsSinkError) {}
}

/// A memory store whose acknowledgements wait until ``release`` opens (a slow disk), and remembers each.
private final class SlowAcknowledgingStore: RecordStore {
    let release = Gate()
    private let inner = MemoryRecordStore()
    private let positions = Mutex<[UInt64]>([])

    /// The positions acknowledged so far, in order.
    var acknowledged: [UInt64] { positions.withLock { $0 } }
    /// Records not acknowledged.
    var count: Int { inner.count }

    func append(_ records: EncodedRecords) throws(AnalyticsSinkError) -> UInt64 { try inner.append(records) }
    func run(reporting commits: RecordStoreCommits) async throws { try await inner.run(reporting: commits) }
    func read(after position: UInt64?, limit: Int) async throws(AnalyticsSinkError) -> StoredBatch<UInt64> {
        try await inner.read(after: position, limit: limit)
    }
    func acknowledge(through position: UInt64) async throws(AnalyticsSinkError) {
        await release.wait()
        positions.withLock { $0.append(position) }
        try await inner.acknowledge(through: position)
    }
}

/// A destination that accepts everything and counts the batches delivered.
private struct CountingDestination: AnalyticsDestination {
    let delivered = ProgressCounter()
    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        delivered.advance()
        return .accepted(records)
    }
}
