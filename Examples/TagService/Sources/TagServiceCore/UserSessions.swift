import ContainerKit
import ContainerKitBraze
import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// One data layer per end user, found or created by user ID.
///
/// Each new session gets the user as its Braze `external_id`, so every record its tags make names the
/// user. As a `Service` it keeps the sessions until graceful shutdown.
final class UserSessions: Service, Sendable {
    private let manager: TagManager
    private let logger: Logging.Logger
    private let sessions = Mutex<[String: DataLayer]>([:])

    init(manager: TagManager, configuration: TagServiceConfiguration, logger: Logging.Logger) {
        self.manager = manager
        self.logger = logger
    }

    /// The session of `userID`, created with `context` (or a blank one) if it has none yet.
    func session(for userID: String, context: ClientContext?) -> DataLayer {
        if let session = sessions.withLock({ $0[userID] }) { return session }
        let created = manager.makeDataLayer(context: context ?? ClientContext.server, sessionID: userID)
        BrazeTagProvider.setUser(.externalID(userID), on: created)
        return sessions.withLock { table in
            if let session = table[userID] { return session }
            table[userID] = created
            return created
        }
    }

    /// Sessions in memory.
    var count: Int { sessions.withLock { $0.count } }

    /// Keeps the sessions until graceful shutdown.
    func run() async throws {
        try? await gracefulShutdown()
    }
}
