import ContainerKit
import ContainerKitBraze
import Foundation
import Logging
import ServiceLifecycle

/// Where the Braze provider's records go: a durable queue in the queue directory, delivering to Braze's
/// `/users/track` (or, without an endpoint, to a JSON-lines file beside the queue).
///
/// As a `Service` it does nothing until graceful shutdown, then drains: the queue delivers what it can
/// (the rest stays on disk for the next start) and the downstream flushes and stops. The service group
/// stops it last, after the HTTP server and the sessions.
final class RecordPipeline: Service, Sendable {
    /// The durable queue the provider writes to.
    let queue: DurableQueueSink
    /// The queue's downstream.
    let downstream: any AnalyticsSink & AcknowledgingSink
    /// The tag handler to register for the Braze class paths.
    let provider: BrazeTagProvider
    private let logger: Logging.Logger

    init(configuration: TagServiceConfiguration, logger: Logging.Logger) throws {
        let library = SwiftLogAdapter(logger)
        if let endpoint = configuration.brazeEndpoint {
            var braze = BrazeUsersTrackSink.Configuration()
            braze.logger = library
            downstream = BrazeUsersTrackSink(
                endpoint: endpoint,
                apiKey: configuration.brazeAPIKey ?? "",
                configuration: braze
            )
            logger.info("records go to Braze", metadata: ["endpoint": "\(endpoint.absoluteString)/users/track"])
        } else {
            downstream = try JSONLinesAnalyticsSink(
                destination: .file(path: configuration.recordsFile),
                synchronizesOnFlush: true,
                logger: library
            )
            logger.info(
                "no BRAZE_REST_ENDPOINT: records go to a file",
                metadata: ["file": "\(configuration.recordsFile)"]
            )
        }
        var queueConfiguration = DurableQueueSink.Configuration()
        queueConfiguration.logger = library
        queue = try DurableQueueSink(
            directory: configuration.queueDirectory,
            downstream: downstream,
            configuration: queueConfiguration
        )
        provider = BrazeTagProvider(sink: queue)
        self.logger = logger
    }

    /// Waits for graceful shutdown, then drains the queue into the downstream and stops both.
    func run() async throws {
        try? await gracefulShutdown()
        logger.info("draining the record queue")
        await queue.shutdown()
        await downstream.shutdown()
        let statistics = queue.statistics
        logger.info(
            "record queue drained",
            metadata: [
                "durable": "\(statistics.durableRecords)", "delivered": "\(statistics.deliveredRecords)",
                "pending": "\(statistics.durableRecords - statistics.deliveredRecords)",
            ]
        )
    }

    /// Returns once the records of `result` are durable.
    ///
    /// Waits on the push's own durability tokens when its tags report them; a push whose handlers report
    /// none waits for everything the queue has taken so far, which includes this push's records (the
    /// provider hands them over synchronously, inside the push).
    func waitUntilDurable(_ result: PushResult) async throws {
        if result.durability.isEmpty {
            try await queue.waitUntilDurable()
        } else {
            try await result.waitUntilDurable()
        }
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
        metrics.deliveryFailures.record(statistics.failedDeliveries)
        metrics.queueBacklog.record(max(0, statistics.durableRecords - statistics.deliveredRecords))
        metrics.queueBytes.record(statistics.queueBytes)
    }
}
