import ContainerKit
import ContainerKitBraze
import ServiceLifecycle

// ContainerKit's long-lived components already have the shape of a swift-service-lifecycle `Service`: a
// `run()` that works until its task is cancelled. One line each makes them services of the application's
// group. The durable queue keeps the two signals apart (cancellation stops at once, `gracefulShutdown()`
// drains), so it is bridged with `withGracefulShutdownHandler` in one line (`DurableQueue.service`).
extension SessionStore: @retroactive Service {}
extension TagManager: @retroactive Service {}

extension Service {
    /// This service as a member of a group that shuts down gracefully: its `run()` is cancelled when the
    /// group signals graceful shutdown to it (in the group's reverse order), and the group waits for it to
    /// return before it moves on to the service listed before it.
    ///
    /// ContainerKit does not depend on swift-service-lifecycle, so its `run()` methods stop on task
    /// cancellation — which for them *is* the graceful path (the durable queue drains, the tag manager
    /// abandons fetches and replays deferred pushes). A `Service` that ignored the group's graceful
    /// shutdown signal would hold the group until its timeout and then be cancelled together with every
    /// other service, losing the order.
    func cancelledOnGracefulShutdown() -> ClosureService {
        ClosureService { try await cancelWhenGracefulShutdown { try await self.run() } }
    }
}

extension DurableQueue {
    /// The queue as a member of the group: graceful shutdown drains it (within its drain timeout);
    /// cancellation stops it at once (what is durable stays on disk).
    var service: ClosureService {
        ClosureService {
            try await withGracefulShutdownHandler {
                try await self.run()
            } onGracefulShutdown: {
                self.gracefulShutdown()
            }
        }
    }
}

extension AnalyticsDestination {
    /// The destination's own work (Braze's HTTP client and its I/O thread) as a member of the group, for a
    /// host that delivers to it itself (the fronts run their destination already): it runs until the
    /// group's graceful shutdown reaches it; list it before the component that delivers to it.
    var service: ClosureService {
        ClosureService {
            try await cancelWhenGracefulShutdown {
                try await self.run()
                // A destination with nothing to run returns at once; the service still lasts until shutdown.
                try? await gracefulShutdown()
            }
        }
    }
}

/// The record queue as the application's first service: `/ready` reports it running while its `run()` runs.
///
/// Without it nothing commits the records: each request waiting for durability fails after the queue's
/// start timeout (1 s) with `503 queue_not_running`, and SIGTERM still stops the process (no request waits
/// for a queue that never ran).
struct RecordQueueService: Service {
    let queue: DurableQueue
    let readiness: Readiness

    func run() async throws {
        readiness.queueRunning = true
        defer { readiness.queueRunning = false }
        try await queue.service.run()
    }
}
