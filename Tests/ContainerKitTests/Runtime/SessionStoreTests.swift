import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

struct SessionStoreTests {
    static func manager() throws -> TagManager {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try SessionConcurrencyTests.tickContainer())
        manager.register(tagHandler: ClosureTagHandler { _ in }, for: "com.example.Tick")
        return manager
    }

    static func temporaryDirectory() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sessions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    /// A store whose users u1, u2 and u3 pushed one event each.
    static func storeWithThreeUsers() async throws -> SessionStore {
        let store = SessionStore(tagManager: try manager())
        for user in ["u1", "u2", "u3"] {
            await store.session(for: user).push(event: "tick", parameters: ["caller": 1, "n": 2])
        }
        return store
    }

    @Test func findsTheSameSessionForAUserAndANewOneForAnother() throws {
        let store = SessionStore(tagManager: try Self.manager())
        let a = store.session(for: "alice")
        #expect(store.session(for: "alice") === a)
        #expect(store.session(for: "bob") !== a)
        #expect(a.sessionID == "alice")
        #expect(store.statistics == SessionStore.Statistics(live: 2, created: 2, restored: 0, evicted: 0))
    }

    @Test func idleSessionsAreEvictedWithTheHookCalled() throws {
        let clock = ManualClock()
        let evicted = Mutex<[String]>([])
        let store = SessionStore(
            tagManager: try Self.manager(),
            configuration: .init(
                idleTimeout: .seconds(60),
                onEvict: { user, _, reason in evicted.withLock { $0.append("\(user):\(reason.rawValue)") } }
            ),
            clock: clock
        )
        let alice = store.session(for: "alice")
        _ = store.session(for: "bob")
        clock.advance(by: .seconds(45))
        #expect(store.session(for: "alice") === alice)  // used again: idle time starts over
        clock.advance(by: .seconds(30))
        #expect(store.evictIdle() == 1)
        #expect(evicted.withLock { $0 } == ["bob:idle"])
        #expect(store.existingSession(for: "bob") == nil)
        #expect(store.existingSession(for: "alice") === alice)
        // A session found idle on lookup is replaced, not returned.
        clock.advance(by: .seconds(61))
        #expect(store.session(for: "alice") !== alice)
        #expect(store.statistics.evicted == 2)
    }

    @Test func aFullStoreEvictsTheLeastRecentlyUsed() throws {
        let clock = ManualClock()
        let evicted = Mutex<[String]>([])
        let store = SessionStore(
            tagManager: try Self.manager(),
            configuration: .init(
                maximumSessions: 3,
                onEvict: { user, _, reason in evicted.withLock { $0.append("\(user):\(reason.rawValue)") } }
            ),
            clock: clock
        )
        for user in ["a", "b", "c"] {
            _ = store.session(for: user)
            clock.advance(by: .seconds(1))
        }
        _ = store.session(for: "a")  // a is now the most recently used; b the least
        _ = store.session(for: "d")
        #expect(evicted.withLock { $0 } == ["b:capacity"])
        #expect(store.count == 3)
        store.remove("c")
        #expect(evicted.withLock { $0 } == ["b:capacity", "c:removed"])
        #expect(store.statistics == SessionStore.Statistics(live: 2, created: 4, restored: 0, evicted: 2))
    }

    @Test func aShardedStoreHoldsItsMaximumHoweverItsUsersFallIntoTheShards() throws {
        // 1,024 sessions: 16 shards, which 1,024 users never fill evenly.
        let store = SessionStore(tagManager: try Self.manager(), configuration: .init(maximumSessions: 1_024))
        for _ in 0..<2 {
            for user in 0..<1_024 { _ = store.session(for: "user-\(user)") }
        }
        #expect(store.statistics.evicted == 0)
        #expect(store.statistics.created == 1_024)
        // One user more: one session goes, the store stays at its maximum.
        _ = store.session(for: "user-1024")
        #expect(store.statistics.evicted == 1)
        #expect(store.count == 1_024)
    }

    @Test func aGivenContextUpdatesTheLiveSession() throws {
        let store = SessionStore(tagManager: try Self.manager())
        let session = store.session(for: "u", context: ClientContext(appVersionName: "1.0"))
        _ = store.session(for: "u", context: ClientContext(appVersionName: "2.0"))
        #expect(session.context.appVersionName == "2.0")
        _ = store.session(for: "u")
        #expect(session.context.appVersionName == "2.0")
    }

    @Test func sessionsSurviveARestartThroughTheSessionsFile() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("sessions.jsonl").path

        let before = try await Self.storeWithThreeUsers()
        #expect(try before.save(to: path) == 3)

        let after = SessionStore(tagManager: try Self.manager())
        #expect(try after.restore(from: path) == 3)
        #expect(after.statistics.restored == 3)
        #expect(after.snapshots() == before.snapshots())
        #expect(after.session(for: "u2").snapshot().eventNumber == 1)
        // A missing file restores nothing.
        #expect(try after.restore(from: directory.appendingPathComponent("none").path) == 0)
    }

    @Test func canonicallyEquivalentUserIDsAreTwoSessions() throws {
        let store = SessionStore(tagManager: try Self.manager())
        let composed = store.session(for: "caf\u{E9}")
        let decomposed = store.session(for: "cafe\u{301}")
        #expect(composed !== decomposed)
        #expect(decomposed.sessionID.utf8.elementsEqual("cafe\u{301}".utf8))
        #expect(store.count == 2)
        #expect(store.existingSession(for: "cafe\u{301}") === decomposed)
        store.remove("caf\u{E9}")
        #expect(store.existingSession(for: "cafe\u{301}") === decomposed)
    }

    @Test func aUserIDWithANULOrEmptyIsRefusedByValidation() {
        #expect(throws: ContainerError.self) { try SessionStore.validate(userID: "a\u{0}b") }
        #expect(throws: ContainerError.self) { try SessionStore.validate(userID: "") }
        do {
            try SessionStore.validate(userID: "a\u{0}b")
        } catch {
            #expect(error.code == .invalidUserID && error.message.contains("'a\\0b'"))
        }
        #expect(throws: Never.self) { try SessionStore.validate(userID: "cafe\u{301}") }
    }

    @Test func aDroppedStoreReleasesItsSessions() throws {
        let manager = try Self.manager()
        weak var first: DataLayer?
        weak var middle: DataLayer?
        do {
            // One shard (fewer than 1,024 sessions), so the three sessions are neighbours in one recency list.
            let store = SessionStore(tagManager: manager, configuration: .init(maximumSessions: 100))
            first = store.session(for: "a")
            middle = store.session(for: "b")
            _ = store.session(for: "c")
            #expect(first != nil && middle != nil)
        }
        #expect(first == nil)
        #expect(middle == nil)
    }

    @Test func aTornOrCorruptLineSkipsOnlyItsSession() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("sessions.jsonl").path
        let before = try await Self.storeWithThreeUsers()
        try before.save(to: path)
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
        lines.insert("not json", at: 1)
        lines[3] = String(lines[3].prefix(lines[3].count / 2))  // the last line torn by a crash
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: path))

        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        let after = SessionStore(tagManager: manager)
        #expect(try after.restore(from: path) == 2)
        #expect(after.statistics.skippedSnapshots == 2)
        #expect(after.existingSession(for: "u1") != nil && after.existingSession(for: "u2") != nil)
        #expect(after.existingSession(for: "u3") == nil)
        #expect(
            logger.entries.contains {
                $0.message.contains("skipped unreadable") && $0.metadata["skipped"] == "2"
                    && $0.metadata["first"]?.contains(":2:") == true
            }
        )
    }

    @Test func onlyARegularFileIsRestored() throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let fifo = directory.appendingPathComponent("fifo").path
        #expect(mkfifo(fifo, 0o600) == 0)
        let store = SessionStore(tagManager: try Self.manager())
        for path in [fifo, "/dev/zero", directory.path] {
            do {
                try store.restore(from: path)
                Issue.record("'\(path)' was read")
            } catch {
                #expect(error.code == .io && error.message.contains("is not a regular file"))
            }
        }
    }

    @Test func theSessionsFileIsPrivate() async throws {
        let directory = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("sessions.jsonl").path
        let store = SessionStore(tagManager: try Self.manager())
        _ = store.session(for: "u")
        try store.save(to: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
    }

    @Test func runSweepsOnItsClockAndReturnsWhenCancelled() async throws {
        let clock = ManualClock()
        let store = SessionStore(
            tagManager: try Self.manager(),
            configuration: .init(idleTimeout: .seconds(10), sweepInterval: .seconds(5)),
            clock: clock
        )
        _ = store.session(for: "idle")
        let task = Task { try await store.run() }
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(11))
        await clock.waitForSleepers(1)  // the sweep is done once the loop sleeps again
        #expect(store.count == 0)
        task.cancel()
        try await task.value
        #expect(store.statistics.evicted == 1)
    }

    @Test func manyThreadsFindSessionsConcurrently() async throws {
        let store = SessionStore(tagManager: try Self.manager(), configuration: .init(maximumSessions: 2_000))
        await SessionConcurrencyTests.onThreads(8) { thread in
            for i in 0..<2_000 {
                let session = store.session(for: "user-\((i * 7 + thread) % 500)")
                session.push(event: "tick", parameters: ["caller": .int(Int64(thread)), "n": .int(Int64(i))])
            }
        }
        #expect(store.count == 500)
        let events = store.snapshots().map(\.eventNumber).reduce(0, +)
        #expect(events == 8 * 2_000)
    }
}
