import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird
import Logging
import Metrics
import ServiceLifecycle

/// The assembled service: the tag manager and its containers, the sessions, the record pipeline, the
/// metrics and the HTTP application that serves them.
///
/// ```swift
/// let service = try await TagServiceApplication(configuration: configuration, logger: logger)
/// try await service.application.runService()    // until SIGTERM or SIGINT, then a graceful shutdown
/// ```
///
/// The application runs the components as services of one group. On graceful shutdown they stop in
/// reverse order: the HTTP server first (it stops accepting and finishes the requests in flight), then
/// the container watcher, then the sessions (saved to the snapshot file), and the record queue last
/// (drained into Braze or the records file).
public struct TagServiceApplication: Sendable {
    /// The configuration the service runs with.
    public let configuration: TagServiceConfiguration
    /// The HTTP application; run it with `runService()` or test it with HummingbirdTesting.
    public let application: Application<RouterResponder<BasicRequestContext>>
    let manager: TagManager
    let sessions: UserSessions
    let pipeline: RecordPipeline
    let metrics: ServiceMetrics

    /// The swift-metrics factory of the service's `/metrics` page, for `MetricsSystem.bootstrap`.
    public var metricsFactory: any MetricsFactory { metrics.factory }

    /// Loads the containers, opens the queue, restores the sessions and builds the routes.
    ///
    /// - Parameter onServerRunning: called with the bound port once the server listens (the chosen one
    ///   when ``TagServiceConfiguration/port`` is 0).
    public init(
        configuration: TagServiceConfiguration,
        logger: Logging.Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        self.configuration = configuration
        let library = SwiftLogAdapter(logger)
        let metrics = ServiceMetrics()
        let manager: TagManager
        let containerService: any Service
        if configuration.openIDs.isEmpty {
            manager = TagManager(logger: library, defaultContext: ClientContext.server)
            let watcher = ContainerDirectoryWatcher(
                directory: configuration.containersDirectory,
                interval: configuration.reloadInterval,
                manager: manager,
                logger: logger
            )
            await watcher.scan()
            containerService = watcher
        } else {
            manager = TagManager(
                logger: library,
                defaultContext: ClientContext.server,
                lifecycle: try ContainerOpener.lifecycle(configuration)
            )
            let opener = ContainerOpener(ids: configuration.openIDs, manager: manager, logger: logger)
            try await opener.openAll()
            containerService = opener
        }
        if manager.containers.isEmpty {
            logger.warning("no container is live yet; /ready answers 503 until one loads")
        }
        let pipeline = try RecordPipeline(configuration: configuration, logger: logger)
        pipeline.provider.register(on: manager)
        let sessions = UserSessions(manager: manager, configuration: configuration, logger: logger)
        sessions.restore()

        let router = Router()
        EventsController(
            sessions: sessions,
            pipeline: pipeline,
            metrics: metrics,
            waitsForDurability: configuration.waitsForDurability,
            maximumBodyBytes: configuration.maximumBodyBytes,
            logger: logger
        ).register(on: router)
        OperationsController(manager: manager, sessions: sessions, pipeline: pipeline, metrics: metrics)
            .register(on: router)

        application = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "TagService"
            ),
            // Stopped in reverse order on graceful shutdown: the server (added by the application after
            // these) first, the record queue last.
            services: [pipeline, sessions, containerService],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        self.manager = manager
        self.sessions = sessions
        self.pipeline = pipeline
        self.metrics = metrics
    }
}
