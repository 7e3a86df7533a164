import ContainerKit
import Foundation
import Logging

/// The `--open` way to get containers: the tag manager opens each ID itself — the bundled default from
/// the containers directory, then the saved copy, then the network — and, while it runs as one of the
/// application's services, keeps loading and refreshes each container on GTM's schedule; every version
/// that loads replaces the live one.
enum ContainerOpening {
    /// The lifecycle configuration the tag manager gets in `--open` mode.
    static func lifecycle(_ configuration: TagServiceConfiguration) throws -> LifecycleConfiguration {
        let saved = configuration.savedContainersDirectory ?? configuration.queueDirectory + ".containers"
        try FileManager.default.createDirectory(atPath: saved, withIntermediateDirectories: true)
        return LifecycleConfiguration(
            defaultContainers: DirectoryContainerSource(directory: configuration.containersDirectory),
            savedContainers: SavedContainerStore(directory: saved),
            network: try configuration.containerURL.map { try HTTPContainerSource(base: $0) }
        )
    }

    /// Opens every ID (before the tag manager's `run()` starts: what has not loaded within `timeout`
    /// continues there), logging each refresh.
    static func openAll(
        _ ids: [String],
        timeout: Duration,
        manager: TagManager,
        logger: Logging.Logger
    ) async throws {
        let callback = ClosureContainerCallback { id, event in
            switch event {
            case .began: logger.debug("container refresh", metadata: ["container": "\(id)", "event": "\(event)"])
            case .succeeded: logger.info("container refreshed", metadata: ["container": "\(id)", "event": "\(event)"])
            case .failed:
                logger.warning("container refresh failed", metadata: ["container": "\(id)", "event": "\(event)"])
            }
        }
        for id in ids {
            let opened = try await manager.open(
                id: id,
                openType: .preferNonDefault,
                timeout: timeout,
                callback: callback
            )
            logger.info(
                "container opened",
                metadata: [
                    "container": "\(id)", "origin": "\(opened.origin?.rawValue ?? "none yet")",
                    "default": "\(opened.isDefault)",
                ]
            )
        }
    }
}
