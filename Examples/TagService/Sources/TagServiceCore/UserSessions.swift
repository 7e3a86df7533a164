import ContainerKit
import ContainerKitBraze
import Foundation
import Logging
import ServiceLifecycle

/// One session (data layer) per end user: ContainerKit's ``SessionStore`` with the service's settings,
/// restored from the snapshot file at start and saved to it at shutdown.
///
/// Each session's Braze user is the request's `user_id` (an `external_id`), so every record its tags make
/// names the user. As a `Service` it sweeps idle sessions until graceful shutdown, then saves every
/// session (the HTTP server has stopped by then, so no push changes them afterwards).
final class UserSessions: Service, Sendable {
    let store: SessionStore
    let snapshotFile: String?
    private let logger: Logging.Logger

    init(manager: TagManager, configuration: TagServiceConfiguration, logger: Logging.Logger) {
        store = SessionStore(
            tagManager: manager,
            configuration: SessionStore.Configuration(
                idleTimeout: configuration.sessionIdleTimeout,
                maximumSessions: configuration.maximumSessions,
                onEvict: { userID, _, reason in
                    logger.debug("session evicted", metadata: ["user_id": "\(userID)", "reason": "\(reason.rawValue)"])
                }
            )
        )
        snapshotFile = configuration.sessionsFile
        self.logger = logger
    }

    /// Restores the sessions saved by the previous run. An unreadable file is moved aside
    /// (`<file>.unreadable`) and the service starts without sessions.
    func restore() {
        guard let snapshotFile else { return }
        do {
            let count = try store.restore(from: snapshotFile)
            logger.info("sessions restored", metadata: ["count": "\(count)", "file": "\(snapshotFile)"])
        } catch {
            let aside = snapshotFile + ".unreadable"
            try? FileManager.default.removeItem(atPath: aside)
            try? FileManager.default.moveItem(atPath: snapshotFile, toPath: aside)
            logger.error(
                "session snapshot does not load; starting without sessions",
                metadata: ["file": "\(snapshotFile)", "moved_to": "\(aside)", "error": "\(error)"]
            )
        }
    }

    /// The session of `userID` (created with `context` if it has none; a different `context` updates a
    /// live session's).
    func session(for userID: String, context: ClientContext?) -> DataLayer {
        let session = store.session(for: userID, context: context)
        if BrazeTagProvider.user(of: session) == nil { BrazeTagProvider.setUser(.externalID(userID), on: session) }
        return session
    }

    /// Sessions in memory.
    var count: Int { store.count }

    /// Sweeps idle sessions until graceful shutdown, then saves every session to the snapshot file.
    func run() async throws {
        try await cancelWhenGracefulShutdown { try await self.store.run() }
        guard let snapshotFile else { return }
        do {
            let count = try store.save(to: snapshotFile)
            logger.info("sessions saved", metadata: ["count": "\(count)", "file": "\(snapshotFile)"])
        } catch {
            logger.error("cannot save sessions", metadata: ["file": "\(snapshotFile)", "error": "\(error)"])
        }
    }
}
