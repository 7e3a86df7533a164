import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// Event IDs with sessions in the durable queue's segment log: the IDs a session has seen are committed with each
/// push's records, so a retry after a restart is answered as a duplicate and Braze receives each event once.
@Suite struct EventIDSessionTests {
    typealias RestartableQueue = DurableQueueSessionTests.RestartableQueue

    @Test func retriesAfterARestartAreDuplicatesAndEachRecordIsDeliveredOnce() async throws {
        let directory = TemporaryDirectory("event-ids-restart")
        defer { directory.remove() }
        let restartable = RestartableQueue(directory: directory.path)
        let sessions = DurableQueueSessionTests.store(
            try restartable.queue,
            manager: try await DurableQueueSessionTests.manager(),
            snapshotInterval: 4
        )
        var originals: [String: [String]] = [:]
        for n in 0..<30 {
            let request = DurableQueueSessionTests.push(n, users: 3)
            let result = try await sessions.push(
                event: request.event,
                parameters: request.parameters,
                for: request.userID,
                eventID: "message-\(n)",
                prepare: DurableQueueSessionTests.nameUser
            )
            #expect(!result.isDuplicate)
            originals["message-\(n)"] = result.outputs.flatMap(\.records).compactMap(\.recordID)
        }
        let recordCount = originals.values.reduce(0) { $0 + $1.count }
        #expect(recordCount >= 20, "the pushes made records")
        let live = (0..<3).map { sessions.existingSession(for: "user-\($0)")!.snapshot() }

        // Delivered and acknowledged before the restart: delivery is at least once across a restart, and this test
        // counts what the retries add.
        try await restartable.queue.flush()
        let restarted = try await restartable.restart()
        let again = DurableQueueSessionTests.store(restarted, manager: try await DurableQueueSessionTests.manager())
        for (index, expected) in live.enumerated() {
            let loaded = try await again.loadSession(for: "user-\(index)").snapshot()
            #expect(loaded == expected, "user-\(index) loads with the ids it had seen")
        }
        // Every request sent again, as a client that never got its answers would.
        for n in 0..<30 {
            let request = DurableQueueSessionTests.push(n, users: 3)
            let retry = try await again.push(
                event: request.event,
                parameters: request.parameters,
                for: request.userID,
                eventID: "message-\(n)",
                prepare: DurableQueueSessionTests.nameUser
            )
            #expect(retry.isDuplicate && retry.outputs.isEmpty)
            #expect(retry.duplicateOf?.fired.flatMap(\.recordIDs) == originals["message-\(n)"])
        }
        for (index, expected) in live.enumerated() {
            let state = try #require(again.existingSession(for: "user-\(index)")).snapshot()
            #expect(state.eventNumber == expected.eventNumber && state.model == expected.model)
        }
        await restartable.destination.waitForDelivered(recordCount)
        try await Task.sleep(for: .milliseconds(100))
        let delivered = restartable.destination.delivered.map(\.id)
        #expect(delivered.count == recordCount && Set(delivered) == Set(originals.values.joined()))
        await restartable.stop()
    }
}
