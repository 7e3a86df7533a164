public import ContainerKit
import Synchronization

/// A ``SessionPersistence`` in memory, with the same fencing as every other: for tests of code that saves and
/// loads sessions, and as the reference the conformance checks (``SessionPersistenceConformance``) hold other
/// engines to. A removal keeps the ended session's version (see ``SessionPersistence/endedVersion(userID:)``).
public final class InMemorySessionPersistence: SessionPersistence, Sendable {
    private struct Entry {
        var stored: StoredSession?
        var version: Int64
    }

    /// User IDs compared as bytes, as ``SessionPersistence`` requires.
    private struct Key: Hashable {
        let bytes: [UInt8]
        init(_ userID: String) { bytes = Array(userID.utf8) }
    }

    private let entries = Mutex<[Key: Entry]>([:])

    /// Creates an empty persistence.
    public init() {}

    /// How many users have a stored session.
    public var count: Int { entries.withLock { $0.values.count { $0.stored != nil } } }

    public func load(userID: String) async throws(ContainerError) -> StoredSession? {
        entries.withLock { $0[Key(userID)]?.stored }
    }

    public func endedVersion(userID: String) async throws(ContainerError) -> Int64 {
        entries.withLock { entries in
            guard let entry = entries[Key(userID)], entry.stored == nil else { return 0 }
            return entry.version
        }
    }

    public func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult {
        entries.withLock { entries in
            var superseded: [String] = []
            for change in changes {
                let key = Key(change.userID)
                let current = entries[key]
                switch change {
                case .save(let stored):
                    if let current, current.version >= stored.version {
                        superseded.append(stored.userID)
                    } else {
                        entries[key] = Entry(stored: stored, version: stored.version)
                    }
                case .remove(let userID, let version):
                    guard let current, current.stored != nil else { continue }
                    if current.version > version {
                        superseded.append(userID)
                    } else {
                        entries[key] = Entry(stored: nil, version: current.version)
                    }
                }
            }
            return SessionSaveResult(superseded: superseded)
        }
    }
}
