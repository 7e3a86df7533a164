import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import Metrics
import ServiceLifecycle
import UnixSignals

/// The assembled service: the tag manager and its containers, the sessions, the durable record queue, the
/// metrics and the HTTP application that serves them.
///
/// ```swift
/// let service = try await TagServiceApplication(configuration: configuration, logger: logger)
/// try await service.runService()    // until SIGTERM or SIGINT, then a graceful shutdown
/// ```
///
/// ## One service group, one shutdown order
/// The application runs one swift-service-lifecycle group; its services are ContainerKit's own components
/// (`LibraryServices.swift`) plus two small ones of the example, started in this order:
///
/// 1. the durable ``DeliveryPipeline`` (the Braze provider's sink),
/// 2. the ``SessionStore`` (evicts idle sessions, loads a returning user's session on demand, and every
///    `--session-save-interval` writes snapshots of sessions evicted for capacity and removals of ended ones;
///    each push's session change is committed with its records),
/// 3. the containers: the ``TagManager`` (`--open`: loading and refreshes) or the
///    ``ContainerDirectoryWatcher``,
/// 4. the HTTP server (Hummingbird adds it last).
///
/// On SIGTERM the group shuts them down in reverse order, each once the one after it has returned: the
/// server stops accepting and finishes the requests in flight (their records still reach the running
/// queue, and their answers wait until the records are durable) — for at most `--shutdown-timeout`, after
/// which what is still in flight is cut, unacknowledged (``BoundedHTTP1Channel``); the containers stop
/// refreshing; the store writes what is left (evicted sessions, ended ones); the queue refuses new records,
/// commits what it holds and drains it into Braze. Then ``runService()`` returns and the process exits 0.
public struct TagServiceApplication: Sendable {
    /// The configuration the service runs with.
    public let configuration: TagServiceConfiguration
    /// The HTTP application; run it with `runService()` or test it with HummingbirdTesting.
    public let application: Application<RouterResponder<BasicRequestContext>>
    let logger: Logging.Logger
    let manager: TagManager
    let sessions: SessionStore
    /// The local durable record queue (`nil` with `--postgres`, whose store keeps the records).
    let queue: DeliveryPipeline<SegmentRecordStore>?
    let metrics: ServiceMetrics
    /// `--postgres`: the PostgreSQL record store, session loading and delivery.
    let scaleOut: PostgresScaleOut?
    /// The handler of `POST /v1/events` and `POST /v1/batch` (``DebugCostProbe`` calls it without the network).
    let events: EventsController
    /// The live debug page (`--debug-token`); `nil`: off.
    let debug: DebugHub?
    /// Checks the containers now (SIGHUP): the directory at once, or with `--open` a network refresh of each
    /// opened container, forced (an operator who just published a version need not wait for the schedule).
    let reloadContainers: @Sendable () -> Void

    /// The swift-metrics factory of the service's `/metrics` page, for `MetricsSystem.bootstrap`.
    public var metricsFactory: any MetricsFactory { metrics.factory }

    /// Loads the containers, opens the queue (importing the session files of an earlier version, with
    /// `--sessions`: ``LegacySessionImport``) and builds the routes.
    ///
    /// - Parameter onServerRunning: called with the bound port once the server listens (the chosen one
    ///   when ``TagServiceConfiguration/port`` is 0).
    /// - Parameter onDebugServerRunning: the same for the debug page's listener (`--debug-token`).
    public init(
        configuration: TagServiceConfiguration,
        logger: Logging.Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in },
        onDebugServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        self.configuration = configuration
        try StartupCheck.paths(of: configuration)
        let metrics = ServiceMetrics()
        // `--debug-token`: the live debug page, on its own listener; `nil` (one branch per push) when off. When on,
        // the tag manager's observer counts every push's tags for its overview too.
        let debug = configuration.debug.isEnabled ? DebugHub(settings: configuration.debug) : nil
        let manager = TagManager(
            logger: SwiftLogAdapter(logger),
            defaultContext: .server,
            observer: Self.runtimeObserver(metrics: metrics, debug: debug),
            maximumDataLayerBytes: configuration.maximumSessionBytes,
            eventIDs: configuration.eventIDWindow
        )
        // The Braze provider keeps each push's records back; the session store commits them with the push,
        // in one append (the library's RecordCommitter): to the local durable queue, or with the session's
        // change to PostgreSQL. The two modes differ in this configuration only. A session without a Braze user
        // (`--braze-user none`) holds its Braze records pending until a changeUser tag names the user.
        BrazeTagProvider(sink: CommitSink(), configuration: configuration.brazeProviderConfiguration)
            .register(on: manager)

        let postgres = try PostgresScaleOut.store(configuration, logger: logger)
        let queue: DeliveryPipeline<SegmentRecordStore>?
        let scaleOut: PostgresScaleOut?
        let committer: RecordCommitter
        let persistence: any SessionPersistence
        if let postgres {
            queue = nil
            let out = try PostgresScaleOut(
                store: postgres,
                configuration: configuration,
                diagnostics: SwiftLogAdapter(logger),
                observer: metrics,
                debug: debug
            )
            scaleOut = out
            committer = RecordCommitter(out.pipeline, keepsSessions: true)
            persistence = postgres.sessions
            if let directory = configuration.sessionsDirectory {
                logger.warning(
                    "--sessions is not imported with --postgres",
                    metadata: ["sessions_directory": "\(directory)"]
                )
            }
        } else {
            // What a previous run left undelivered: the queue's own counts start at zero with each run.
            metrics.backlogAtStart =
                (try? SegmentRecordStore.pendingRecords(in: configuration.queueDirectory).count) ?? 0
            let local = try RecordQueue.open(configuration, observer: metrics, logger: logger, debug: debug)
            // Sessions live in the queue's log: each push's change in the append of its records.
            if let directory = configuration.sessionsDirectory {
                try LegacySessionImport.run(
                    directory: directory,
                    into: local,
                    idleTimeout: configuration.sessionIdleTimeout,
                    logger: logger
                )
            }
            queue = local
            scaleOut = nil
            committer = RecordCommitter(local, keepsSessions: true)
            persistence = local.sessions
        }
        let sessions = SessionStore(
            tagManager: manager,
            configuration: SessionStore.Configuration(
                idleTimeout: configuration.sessionIdleTimeout,
                maximumSessions: configuration.maximumSessions,
                onEvict: { userID, _, reason in
                    logger.debug(
                        "session evicted",
                        metadata: ["user_id": "\(userID)", "reason": "\(reason.rawValue)"]
                    )
                },
                persistence: persistence,
                // Each push commits its session's change; the store's own saves are the snapshots of sessions
                // evicted for capacity and the removals of ended ones.
                saveInterval: configuration.sessionSaveInterval,
                committer: committer,
                onSave: { count in logger.debug("sessions saved", metadata: ["count": "\(count)"]) }
            )
        )

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
            reloadContainers = { watcher.requestScan() }
        } else {
            let ids = configuration.openIDs
            reloadContainers = { for id in ids { manager.refresh(id: id, force: true) } }
            manager.lifecycleConfiguration = try ContainerOpening.lifecycle(configuration)
            try await ContainerOpening.openAll(
                configuration.openIDs,
                timeout: configuration.openTimeout,
                manager: manager,
                logger: logger
            )
            containers = manager.service
        }
        if manager.containers.isEmpty {
            logger.warning("no container is live yet; /ready answers 503 until one loads")
        }

        let readiness = Readiness()
        let batchLimits = BatchLimits(
            maximumEvents: configuration.maximumBatchEvents,
            maximumBytes: configuration.maximumBatchBytes
        )
        // HEAD answers as GET does, without the body: uptime checkers and some load balancers probe with it.
        let router = Router(options: .autoGenerateHeadEndpoints)
        router.add(middleware: RequestMetricsMiddleware(counters: metrics.requestCounters))
        router.add(middleware: JSONErrorMiddleware())
        // The endpoints that push events need a write key, when the service has any.
        let ingestion = router.group()
        let writeKeys = WriteKeys(configuration.writeKeys)
        if writeKeys.isEmpty {
            logger.warning(
                "no write key: anyone who can reach the port can push events; keep it private, or start with --write-key"
            )
        } else {
            ingestion.add(middleware: WriteKeyMiddleware(keys: writeKeys))
        }
        let events = EventsController(
            sessions: sessions,
            metrics: metrics,
            readiness: readiness,
            // A PostgreSQL commit carries the session: its answer always waits for it.
            waitsForDurability: configuration.waitsForDurability || scaleOut != nil,
            maximumBodyBytes: configuration.maximumBodyBytes,
            batchLimits: batchLimits,
            logger: logger,
            debug: debug
        )
        events.register(on: ingestion)
        OperationsController(
            manager: manager,
            sessions: sessions,
            queue: queue,
            metrics: metrics,
            readiness: readiness,
            requiredIDs: configuration.openIDs,
            scaleOut: scaleOut,
            metricsToken: configuration.metricsToken
        ).register(on: router)

        var debugServices: [any Service] = []
        if let debug {
            debugServices.append(
                DebugService(
                    hub: debug,
                    manager: manager,
                    sessions: sessions,
                    delivery: { [queue, scaleOut] in
                        Self.deliveryReading(queue: queue, scaleOut: scaleOut, metrics: metrics)
                    },
                    logger: logger,
                    onServerRunning: onDebugServerRunning
                )
            )
        }
        let limits = BoundedHTTP1Channel.Limits(
            idleTimeout: configuration.idleTimeout,
            requestTimeout: configuration.requestTimeout,
            shutdownTimeout: configuration.shutdownTimeout
        )
        application = Application(
            router: router,
            server: HTTPServerBuilder { responder in
                BoundedHTTP1Channel(responder: responder, limits: limits, onCut: { metrics.cutConnection($0) })
            },
            configuration: ApplicationConfiguration(
                address: .hostname(configuration.host, port: configuration.port),
                serverName: "TagService",
                availableConnectionsDelegate: MaximumAvailableConnections(configuration.maximumConnections)
            ),
            // Shut down in reverse order, each after the next has returned (see the type's documentation).
            services: (queue.map { [RecordQueueService(queue: $0, readiness: readiness)] } ?? [])
                + (scaleOut?.services ?? []) + [
                    sessions.service,
                    containers,
                ]
                + debugServices,
            onServerRunning: { channel in await onServerRunning(channel.localAddress?.port ?? 0) },
            logger: logger
        )
        self.logger = logger
        self.manager = manager
        self.sessions = sessions
        self.queue = queue
        self.metrics = metrics
        self.scaleOut = scaleOut
        self.events = events
        self.debug = debug
    }

    /// Runs the application until SIGTERM or SIGINT, then shuts it down gracefully (see the type's
    /// documentation), as Hummingbird's `runService()` does — with a last bound: should the graceful shutdown
    /// take 15 s longer than ``TagServiceConfiguration/shutdownTimeout`` (a request that ignores its closed
    /// connection, a destination that does not answer within the drain), every service is cancelled. The record
    /// queue then commits what it holds and stops (what is durable is delivered at the next start); every
    /// acknowledged push's session change was committed with its records: nothing acknowledged is lost.
    public func runService() async throws {
        var group = ServiceGroupConfiguration(
            services: [application, ReloadOnHangup(reload: reloadContainers, logger: logger)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        group.maximumGracefulShutdownDuration = configuration.shutdownTimeout + .seconds(15)
        try await ServiceGroup(configuration: group).run()
    }
}

/// SIGHUP checks the containers now (``TagServiceApplication/reloadContainers``), as nginx and Prometheus reload
/// on it; without it the signal would end the process at once, without the graceful shutdown.
struct ReloadOnHangup: Service {
    let reload: @Sendable () -> Void
    let logger: Logging.Logger

    func run() async throws {
        for await _ in await UnixSignalsSequence(trapping: .sighup).cancelOnGracefulShutdown() {
            logger.notice("SIGHUP: checking the containers now")
            reload()
        }
    }
}
