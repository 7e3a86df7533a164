import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird
import Logging
import Metrics
import ServiceLifecycle

/// The assembled service: the tag manager and its containers, the sessions, the durable record queue, the
/// metrics and the HTTP application that serves them.
///
/// ```swift
/// let service = try await TagServiceApplication(configuration: configuration, logger: logger)
/// try await service.application.runService()    // until SIGTERM or SIGINT, then a graceful shutdown
/// ```
///
/// ## One service group, one shutdown order
/// The application runs one swift-service-lifecycle group; its services are ContainerKit's own components
/// (`LibraryServices.swift`) plus two small ones of the example, started in this order:
///
/// 1. the ``DurableQueue`` (the Braze provider's sink),
/// 2. ``SessionSnapshots`` (saves the sessions at shutdown),
/// 3. the ``SessionStore`` (sweeps idle sessions),
/// 4. the containers: the ``TagManager`` (`--open`: loading and refreshes) or the
///    ``ContainerDirectoryWatcher``,
/// 5. the HTTP server (Hummingbird adds it last).
///
/// On SIGTERM the group shuts them down in reverse order, each once the one after it has returned: the
/// server stops accepting and finishes the requests in flight (their records still reach the running
/// queue, and their answers wait until the records are durable); the containers stop refreshing; the
/// store stops sweeping; the sessions are saved; the queue refuses new records, commits what it holds and
/// drains it into Braze. Then `runService()` returns and the process exits 0.
public struct TagServiceApplication: Sendable {
    /// The configuration the service runs with.
    public let configuration: TagServiceConfiguration
    /// The HTTP application; run it with `runService()` or test it with HummingbirdTesting.
    public let application: Application<RouterResponder<BasicRequestContext>>
    let manager: TagManager
    let sessions: SessionStore
    let queue: DurableQueue
    let metrics: ServiceMetrics
    /// `--postgres`: the PostgreSQL record store, session loading and delivery.
    let scaleOut: PostgresScaleOut?

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
        let metrics = ServiceMetrics()
        let manager = TagManager(logger: SwiftLogAdapter(logger), defaultContext: .server, observer: metrics)

        let queue = try RecordQueue.open(configuration, observer: metrics, logger: logger)
        // --postgres: the records travel in each push's result and are committed with its session instead.
        BrazeTagProvider(sink: configuration.postgresURL == nil ? queue : AnswersOnlySink())
            .register(on: manager)

        let sessions = SessionStore(
            tagManager: manager,
            configuration: SessionStore.Configuration(
                idleTimeout: configuration.sessionIdleTimeout,
                maximumSessions: configuration.maximumSessions,
                onEvict: { userID, _, reason in
                    logger.debug("session evicted", metadata: ["user_id": "\(userID)", "reason": "\(reason.rawValue)"])
                }
            )
        )
        let scaleOut = try PostgresScaleOut.make(configuration, sessions: sessions, logger: logger)
        let snapshots = SessionSnapshots(
            store: sessions,
            file: scaleOut == nil ? configuration.sessionsFile : nil,
            logger: logger
        )
        snapshots.restore()

        let containers: any Service
        if configuration.openIDs.isEmpty {
            let watcher = ContainerDirectoryWatcher(
                directory: configuration.containersDirectory,
                interval: configuration.reloadInterval,
                manager: manager,
                logger: logger
            )
            await watcher.scan()
            containers = watcher
        } else {
            manager.lifecycleConfiguration = try ContainerOpening.lifecycle(configuration)
            try await ContainerOpening.openAll(
                configuration.openIDs,
                timeout: configuration.openTimeout,
                manager: manager,
                logger: logger
            )
            containers = manager.cancelledOnGracefulShutdown()
        }
        if manager.containers.isEmpty {
            logger.warning("no container is live yet; /ready answers 503 until one loads")
        }

        let router = Router()
        router.add(middleware: RequestMetricsMiddleware(counters: metrics.requestCounters))
        if let scaleOut {
            PostgresEventsController(scaleOut: scaleOut, maximumBodyBytes: configuration.maximumBodyBytes)
                .register(on: router)
        } else {
            EventsController(
                sessions: sessions,
                waitsForDurability: configuration.waitsForDurability,
                maximumBodyBytes: configuration.maximumBodyBytes,
                logger: logger
            ).register(on: router)
        }
        OperationsController(
            manager: manager,
            sessions: sessions,
            queue: queue,
            metrics: metrics,
            requiredIDs: configuration.openIDs,
            scaleOut: scaleOut
        ).register(on: router)

        application = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "TagService"
            ),
            // Shut down in reverse order, each after the next has returned (see the type's documentation).
            services: [queue.cancelledOnGracefulShutdown()] + (scaleOut?.services ?? []) + [
                snapshots,
                sessions.cancelledOnGracefulShutdown(),
                containers,
            ],
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        self.manager = manager
        self.sessions = sessions
        self.queue = queue
        self.metrics = metrics
        self.scaleOut = scaleOut
    }
}
