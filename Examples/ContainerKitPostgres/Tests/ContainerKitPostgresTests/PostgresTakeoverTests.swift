import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import PostgresNIO
import Synchronization
import Testing

/// What ends the delivering instance in the middle of its batches.
enum Takeover: String, CustomTestStringConvertible, Sendable {
    /// The instance dies (`kill -9`): its deliveries stop unanswered, its connections close.
    case killed
    /// Its lease connection is dropped (a network cut, PostgreSQL ending the backend); the process goes on.
    case connectionDropped

    var testDescription: String { rawValue }
}

@Suite(.timeLimit(.minutes(2)))
struct PostgresTakeoverTests {
    /// Instance A delivers and acknowledges a first round, then has two batches out that Braze never answers
    /// when it ends; B takes every partition over. B sends each user's records once, in the order they were
    /// committed, across partitions and users, and sends again only what A had in flight — never what A
    /// acknowledged.
    @Test(arguments: [Takeover.killed, .connectionDropped])
    func aTakeoverResendsAtMostTheBatchesInFlightAndKeepsEachUsersOrder(_ takeover: Takeover) async throws {
        let endpoint = try await SharedCluster.freshDatabase()
        let batchSize = 7
        let inFlight = 2
        let leasesA = Reports<[Int]>()
        let leasesB = Reports<[Int]>()
        let destinationA = HoldingDestination(batchSize: batchSize)
        let destinationB = RecordingDestination(batchSize: batchSize)
        let a = Instance(endpoint, name: "a", destination: destinationA, concurrentDeliveries: inFlight) {
            $0.onLeasesChanged = { leasesA.report($0) }
            // A dropped lease connection is not replaced during the test: B is the only one left to deliver.
            $0.reconnectDelay = .seconds(3600)
        }
        let b = Instance(endpoint, name: "b", destination: destinationB, concurrentDeliveries: inFlight) {
            $0.onLeasesChanged = { leasesB.report($0) }
        }
        let users = (0..<12).map { "user-\($0)" }
        let acknowledged = (0..<40).map { makeRecord(user: users[$0 % 8], event: "first-\($0)") }
        let unacknowledged = (0..<120).map { makeRecord(user: users[$0 % users.count], event: "second-\($0)") }

        let runA = Task { try await a.pipeline.run() }
        #expect(await leasesA.first { $0.count == 4 } == [0, 1, 2, 3])
        // A delivers the first round, and the cursors move past it.
        try await a.commit(acknowledged)
        try await a.pipeline.flush()
        // Braze stops answering A: its next batches stay out until A ends.
        destinationA.hold()
        try await a.commit(unacknowledged)
        var held: [AnalyticsRecord] = []
        for _ in 0..<inFlight { held += await destinationA.held.next() }

        switch takeover {
        case .killed:
            runA.cancel()
            _ = await runA.result
        case .connectionDropped:
            let ended = try await query(
                endpoint,
                """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE datname = current_database() AND application_name = 'containerkit-lease a'
                """,
                as: Int64.self
            )
            #expect(ended == [1])
            _ = await leasesA.first { $0.isEmpty }
        }
        try await withRunning([b.run]) {
            #expect(await leasesB.first { $0.count == 4 } == [0, 1, 2, 3])
            await destinationB.waitForDelivery(of: Set(unacknowledged.map(\.id)))
            try await b.pipeline.flush()
            #expect(try await b.store.undeliveredRows() == 0)
        }
        runA.cancel()
        _ = await runA.result

        let sentByB = destinationB.records
        // Nothing A acknowledged is sent again.
        #expect(Set(sentByB.map(\.id)).isDisjoint(with: acknowledged.map(\.id)))
        // Every user's unacknowledged records arrive once each, in commit order.
        for user in users {
            let sent = sentByB.filter { $0.user == .externalID(user) }.map(\.id)
            let committed = unacknowledged.filter { $0.user == .externalID(user) }.map(\.id)
            #expect(sent == committed, "\(user)")
        }
        // Sent twice: exactly what A had in flight, at most its batches in flight.
        let sentByA = Set(destinationA.accepted.map(\.id)).union(held.map(\.id))
        let twice = Set(sentByB.map(\.id)).intersection(sentByA)
        #expect(twice == Set(held.map(\.id)))
        #expect(twice.count <= inFlight * batchSize)
        // Each row acknowledged once across both instances: the cursors count every row once.
        let counted = try await query(endpoint, "SELECT sum(acknowledged)::bigint FROM ck_cursors", as: Int64.self)
        #expect(counted == [Int64(acknowledged.count + unacknowledged.count)])
    }
}

/// A destination that accepts until ``hold()``; from then on every delivery stays out unanswered (as if
/// Braze took the request and the answer never came back) until its task is cancelled.
final class HoldingDestination: AnalyticsDestination {
    private struct State {
        var holding = false
        var accepted: [AnalyticsRecord] = []
    }
    private let state = Mutex(State())
    let preferredBatchSize: Int
    /// Each batch that stays out, as it arrives.
    let held = Reports<[AnalyticsRecord]>()

    init(batchSize: Int) { preferredBatchSize = batchSize }

    /// The records accepted before ``hold()``.
    var accepted: [AnalyticsRecord] { state.withLock { $0.accepted } }

    /// Leaves every later delivery unanswered.
    func hold() { state.withLock { $0.holding = true } }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        let holding = state.withLock { state -> Bool in
            if !state.holding { state.accepted += records }
            return state.holding
        }
        guard holding else { return .accepted(records) }
        held.report(records)
        await waitUntilCancelled()
        return .retry(records, DeliveryError(.transport, "no answer before the instance ended"))
    }
}

/// Returns once the current task is cancelled.
func waitUntilCancelled() async {
    let slot = Mutex<CheckedContinuation<Void, Never>?>(nil)
    await withTaskCancellationHandler {
        await withCheckedContinuation { continuation in
            let cancelled = slot.withLock { slot -> Bool in
                if Task.isCancelled { return true }
                slot = continuation
                return false
            }
            if cancelled { continuation.resume() }
        }
    } onCancel: {
        slot.withLock { slot in
            slot?.resume()
            slot = nil
        }
    }
}
