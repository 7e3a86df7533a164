import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// The promises of a store that keeps sessions (``SessionCommitConformance``), held by the segment log and the
/// in-memory reference; PostgreSQL runs the same checks in its own package.
@Suite struct SessionCommitConformanceTests {
    @Test func theSegmentLogKeepsSessionsAsPromised() async throws {
        let directory = TemporaryDirectory("commit-conformance")
        defer { directory.remove() }
        var configuration = DeliverySettings()
        configuration.logger = InMemoryLogger()
        let queue = try DeliveryPipeline.durable(
            directory: directory.path,
            destination: ScriptedDownstream(),
            settings: configuration
        )
        try await whileRunning(queue) {
            try await SessionCommitConformance {
                .init(committer: RecordCommitter(queue, keepsSessions: true), persistence: queue.sessions)
            }.checkAll()
        }
    }

    @Test func theInMemoryReferenceKeepsSessionsAsPromised() async throws {
        let log = InMemorySessionLog()
        let pipeline = DeliveryPipeline(
            store: log,
            destination: ScriptedDownstream(),
            settings: DeliverySettings(logger: InMemoryLogger())
        )
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await pipeline.run() }
            try await SessionCommitConformance {
                .init(committer: RecordCommitter(pipeline, keepsSessions: true), persistence: log.sessions)
            }.checkAll()
            group.cancelAll()
        }
    }
}
