import ContainerKit
import ContainerKitBraze
import ServiceLifecycle

/// A ContainerKit component — the tag manager's lifecycle, the session store, the record queue or a
/// delivery pipeline: every one is a `Runnable` — as a member of the application's service group, the one
/// bridge for all of them. The group's graceful shutdown reaches the component's `gracefulShutdown()` (in the
/// group's reverse order, each after the next has returned): the queue drains within its drain timeout, the
/// session store saves what changed, the tag manager replays the pushes that wait for a container.
/// Cancellation — the group's last resort, once the graceful shutdown took too long — stops it at once.
struct RunnableService: Service {
    let component: any Runnable

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await component.run()
        } onGracefulShutdown: {
            component.gracefulShutdown()
        }
    }
}

extension Runnable {
    /// This component as a member of the application's service group (see ``RunnableService``).
    var service: RunnableService { RunnableService(component: self) }
}

/// The record queue as the application's first service: `/ready` reports it running while its `run()` runs.
///
/// Without it nothing commits the records: each request waiting for durability fails after the queue's
/// start timeout (1 s) with `503 queue_not_running`, and SIGTERM still stops the process (no request waits
/// for a queue that never ran).
struct RecordQueueService: Service {
    let queue: DeliveryPipeline<SegmentRecordStore>
    let readiness: Readiness

    func run() async throws {
        readiness.queueRunning = true
        defer { readiness.queueRunning = false }
        try await queue.service.run()
    }
}
