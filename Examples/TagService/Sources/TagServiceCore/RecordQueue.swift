import ContainerKit
import ContainerKitBraze
import Foundation
import Logging

/// Where the Braze provider's records go: a durable ``DeliveryPipeline`` in the queue directory, delivering to
/// Braze's `/users/track` (or, without an endpoint, to a JSON-lines file beside the queue).
///
/// The pipeline itself is one of the application's services (see `LibraryServices.swift`): it runs until
/// graceful shutdown reaches it — after the HTTP server and the sessions — then drains what is durable
/// into the destination within its drain timeout; the rest stays on disk for the next start.
enum RecordQueue {
    /// Opens the queue of `configuration`, reporting to `observer`; with the debug page on (`debug`), the
    /// destination's answers also update the followed users' records (``DebugObservedDestination``).
    static func open(
        _ configuration: TagServiceConfiguration,
        observer: any DeliveryObserver,
        logger: Logging.Logger,
        debug: DebugHub? = nil
    ) throws -> DeliveryPipeline<SegmentRecordStore> {
        let destination: any AnalyticsDestination
        if let endpoint = configuration.brazeEndpoint {
            let braze = BrazeUsersTrackDestination(
                endpoint: endpoint,
                apiKey: configuration.brazeAPIKey ?? "",
                configuration: BrazeUsersTrackDestination.Configuration(objectLimit: configuration.brazeObjectLimit)
            )
            destination = braze
            logger.info("records go to Braze", metadata: ["endpoint": "\(braze.usersTrackURL.absoluteString)"])
        } else {
            destination = try JSONLinesDestination(
                destination: .file(path: configuration.recordsFile),
                synchronizes: true
            )
            logger.info(
                "no BRAZE_REST_ENDPOINT: records go to a file",
                metadata: ["file": "\(configuration.recordsFile)"]
            )
        }
        var settings = DeliverySettings(logger: SwiftLogAdapter(logger))
        settings.observer = observer
        settings.linger = configuration.deliveryLinger
        settings.maximumConcurrentDeliveries = configuration.concurrentDeliveries
        var storage = SegmentRecordStore.Options()
        storage.commitDelay = configuration.commitDelay
        return try DeliveryPipeline.durable(
            directory: configuration.queueDirectory,
            destination: DebugObservedDestination.wrapping(destination, debug: debug),
            settings: settings,
            storage: storage
        )
    }
}
