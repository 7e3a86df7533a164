import ContainerKit
import ContainerKitBraze
import Foundation
import Logging
import ServiceLifecycle

/// Where the Braze provider's records go: a durable queue in the queue directory, delivering to Braze's
/// `/users/track` (or, without an endpoint, to a JSON-lines file beside the queue).
///
/// As a `Service` it runs the queue (its writer and delivery loop) until graceful shutdown, then lets it
/// drain: what is durable is delivered (within the queue's drain timeout; the rest stays on disk for the
/// next start). The service group stops it last, after the HTTP server and the sessions.
final class RecordPipeline: Service, Sendable {
    /// The durable queue the provider writes to.
    let queue: DurableQueue
    /// Where the queue delivers.
    let destination: any AnalyticsDestination
    /// The tag handler to register for the Braze class paths.
    let provider: BrazeTagProvider
    private let recordsFile: JSONLinesDestination?
    private let logger: Logging.Logger

    init(configuration: TagServiceConfiguration, logger: Logging.Logger) throws {
        if let endpoint = configuration.brazeEndpoint {
            destination = BrazeUsersTrackDestination(endpoint: endpoint, apiKey: configuration.brazeAPIKey ?? "")
            recordsFile = nil
            logger.info("records go to Braze", metadata: ["endpoint": "\(endpoint.absoluteString)/users/track"])
        } else {
            let file = try JSONLinesDestination(destination: .file(path: configuration.recordsFile), synchronizes: true)
            destination = file
            recordsFile = file
            logger.info(
                "no BRAZE_REST_ENDPOINT: records go to a file",
                metadata: ["file": "\(configuration.recordsFile)"]
            )
        }
        var queueConfiguration = DurableQueue.Configuration()
        queueConfiguration.logger = SwiftLogAdapter(logger)
        queue = try DurableQueue(
            directory: configuration.queueDirectory,
            destination: destination,
            configuration: queueConfiguration
        )
        provider = BrazeTagProvider(sink: queue)
        self.logger = logger
    }

    /// Runs the queue until graceful shutdown, then drains it.
    func run() async throws {
        try await cancelWhenGracefulShutdown { try await self.queue.run() }
        recordsFile?.close()
        let statistics = queue.statistics
        logger.info(
            "record queue drained",
            metadata: [
                "durable": "\(statistics.durableRecords)", "delivered": "\(statistics.deliveredRecords)",
                "rejected": "\(statistics.rejectedRecords)", "queue_bytes": "\(statistics.queueBytes)",
            ]
        )
    }

    /// Returns once the records of `result` are durable.
    ///
    /// Waits on the push's own durability tokens (the provider reports one per call that enqueued).
    func waitUntilDurable(_ result: PushResult) async throws {
        try await result.waitUntilDurable()
    }

    /// Whether the queue can take records: its directory exists and is writable.
    var isWritable: Bool {
        FileManager.default.isWritableFile(atPath: queue.directory)
    }

    /// Copies the queue's totals into the metrics.
    func update(_ metrics: ServiceMetrics) {
        let statistics = queue.statistics
        metrics.recordsDurable.record(statistics.durableRecords)
        metrics.recordsDelivered.record(statistics.deliveredRecords)
        metrics.recordsRefused.record(statistics.refusedRecords)
        metrics.recordsRejected.record(statistics.rejectedRecords)
        metrics.deliveryFailures.record(statistics.failedDeliveries)
        metrics.queueBacklog.record(
            max(0, statistics.durableRecords - statistics.deliveredRecords - statistics.rejectedRecords)
        )
        metrics.queueBytes.record(statistics.queueBytes)
    }
}
