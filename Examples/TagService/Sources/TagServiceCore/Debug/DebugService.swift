import ContainerKit
import Hummingbird
import Logging
import ServiceLifecycle

/// The debug page's listener (``DebugSettings/host``:``DebugSettings/port``, its own Hummingbird application)
/// and its housekeeping: every 5 s it stops following users whose grace period is over and samples the delivery
/// pipeline for the overview, every 15 s it sends each open stream a heartbeat (a stream whose browser went is
/// found and closed). On graceful shutdown it ends the open streams first, so that its listener can finish.
struct DebugService: Service {
    let hub: DebugHub
    let application: Application<RouterResponder<BasicRequestContext>>
    /// The delivery pipeline's backlog and delivered total now (`nil`: no reading).
    let delivery: @Sendable () async -> (backlog: Int, delivered: Int)?

    init(
        hub: DebugHub,
        manager: TagManager,
        sessions: SessionStore,
        delivery: @escaping @Sendable () async -> (backlog: Int, delivered: Int)?,
        logger: Logger,
        onServerRunning: @escaping @Sendable (Int) async -> Void = { _ in }
    ) {
        self.hub = hub
        self.delivery = delivery
        let router = Router()
        DebugController(hub: hub, manager: manager, sessions: sessions).register(on: router)
        let settings = hub.settings
        application = Application(
            router: router,
            configuration: ApplicationConfiguration(
                address: .hostname(settings.host, port: settings.port),
                serverName: "TagService debug"
            ),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                logger.info("debug page listening", metadata: ["host": "\(settings.host)", "port": "\(port)"])
                await onServerRunning(port)
            },
            logger: logger
        )
    }

    func run() async throws {
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await application.run() }
                group.addTask { await housekeeping() }
                try await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            hub.close()
        }
    }

    /// Sweeps, samples and sends heartbeats until cancelled.
    func housekeeping() async {
        var tick = 0
        while !Task.isCancelled {
            hub.sweep()
            if let reading = await delivery() {
                hub.overview.sample(backlog: reading.backlog, delivered: reading.delivered, at: hub.now())
            }
            if tick % 3 == 0 { hub.heartbeat() }
            tick += 1
            try? await Task.sleep(for: .seconds(5))
        }
    }
}
