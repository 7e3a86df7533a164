import ContainerKit
import Foundation
import Logging
import ServiceLifecycle

/// The sessions' snapshot file: restored when the service starts, saved when graceful shutdown reaches
/// this service — after the HTTP server has finished its last request and the session store has stopped
/// sweeping, before the record queue drains (the order of the application's service group).
struct SessionSnapshots: Service {
    let store: SessionStore
    let file: String?
    let logger: Logging.Logger

    /// Restores the sessions saved by the previous run. An unreadable file is moved aside
    /// (`<file>.unreadable`) and the service starts without sessions.
    func restore() {
        guard let file else { return }
        do {
            let count = try store.restore(from: file)
            logger.info("sessions restored", metadata: ["count": "\(count)", "file": "\(file)"])
        } catch {
            let aside = file + ".unreadable"
            try? FileManager.default.removeItem(atPath: aside)
            try? FileManager.default.moveItem(atPath: file, toPath: aside)
            logger.error(
                "session snapshot does not load; starting without sessions",
                metadata: ["file": "\(file)", "moved_to": "\(aside)", "error": "\(error)"]
            )
        }
    }

    /// Waits for graceful shutdown, then saves every session to the snapshot file.
    func run() async throws {
        try? await gracefulShutdown()
        guard let file else { return }
        do {
            let count = try store.save(to: file)
            logger.info("sessions saved", metadata: ["count": "\(count)", "file": "\(file)"])
        } catch {
            logger.error("cannot save sessions", metadata: ["file": "\(file)", "error": "\(error)"])
        }
    }
}
