import ContainerKit
import Foundation
import Logging
import ServiceLifecycle

/// The `--open` way to get containers: the tag manager opens each ID itself — the bundled default from
/// the containers directory, then the saved copy, then the network — and refreshes it on GTM's schedule;
/// every version that loads replaces the live one.
///
/// As a `Service` it keeps the containers open until graceful shutdown, then closes them (no refresh
/// starts afterwards).
final class ContainerOpener: Service, Sendable {
    let ids: [String]
    private let manager: TagManager
    private let logger: Logging.Logger

    /// The lifecycle configuration the tag manager is created with in `--open` mode.
    static func lifecycle(_ configuration: TagServiceConfiguration) throws -> LifecycleConfiguration {
        let saved = configuration.savedContainersDirectory ?? configuration.queueDirectory + ".containers"
        try FileManager.default.createDirectory(atPath: saved, withIntermediateDirectories: true)
        return LifecycleConfiguration(
            defaultContainers: DirectoryContainerSource(directory: configuration.containersDirectory),
            savedContainers: SavedContainerStore(directory: saved),
            network: try configuration.containerURL.map { try HTTPContainerSource(base: $0) }
        )
    }

    init(ids: [String], manager: TagManager, logger: Logging.Logger) {
        self.ids = ids
        self.manager = manager
        self.logger = logger
    }

    /// Opens every ID, waiting at most the open timeout for each.
    func openAll() async throws {
        let logger = self.logger
        let callback = ClosureContainerCallback { id, event in
            switch event {
            case .began: logger.debug("container refresh", metadata: ["container": "\(id)", "event": "\(event)"])
            case .succeeded: logger.info("container refreshed", metadata: ["container": "\(id)", "event": "\(event)"])
            case .failed:
                logger.warning("container refresh failed", metadata: ["container": "\(id)", "event": "\(event)"])
            }
        }
        for id in ids {
            let opened = try await manager.open(id: id, openType: .preferNonDefault, callback: callback)
            logger.info(
                "container opened",
                metadata: [
                    "container": "\(id)", "origin": "\(opened.origin?.rawValue ?? "none yet")",
                    "default": "\(opened.isDefault)",
                ]
            )
        }
    }

    /// Keeps the containers open until graceful shutdown, then closes them.
    func run() async throws {
        try? await gracefulShutdown()
        for id in ids { manager.containerHolder(id: id)?.close() }
    }
}
