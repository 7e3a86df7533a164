import ContainerKitTesting
import Foundation
import Synchronization
import Testing

@testable import ContainerKit

/// ``SessionStore`` over a ``SessionPersistence``: loads on a miss, saves of changed sessions with versions
/// that fence a stale owner. (The durable queue's sessions are tested in `DurableQueueSessionTests`, the files
/// of the earlier file persistence in ``LegacySessionFilesTests``.)
struct SessionPersistenceTests {
    static func store(
        _ persistence: any SessionPersistence,
        maximumSessions: Int = 100,
        idleTimeout: Duration = .seconds(60),
        clock: ManualClock = ManualClock(),
        onEvict: (@Sendable (String, DataLayer, SessionStore.EvictionReason) -> Void)? = nil
    ) throws -> SessionStore {
        SessionStore(
            tagManager: try SessionStoreTests.manager(),
            configuration: .init(
                idleTimeout: idleTimeout,
                maximumSessions: maximumSessions,
                onEvict: onEvict,
                persistence: persistence
            ),
            clock: clock
        )
    }

    static func tick(_ session: DataLayer) async {
        await session.push(event: "tick", parameters: ["caller": 1, "n": 1])
    }

    @Test func aSavedSessionIsLoadedWhenItsUserComesBack() async throws {
        let persistence = InMemorySessionPersistence()
        let before = try Self.store(persistence)
        let ada = try await before.loadSession(for: "ada")
        await Self.tick(ada)
        await Self.tick(ada)
        before.didChange(ada)
        #expect(try await before.saveChanges() == 1)

        // Another process: a new store over the same persistence.
        let after = try Self.store(persistence)
        #expect(after.count == 0)
        let loaded = try await after.loadSession(for: "ada")
        #expect(loaded.snapshot() == ada.snapshot())
        #expect(after.statistics.loaded == 1)
        // A user who was never saved gets a new session.
        #expect(try await after.loadSession(for: "bob").snapshot().eventNumber == 0)
    }

    @Test func aStaleOwnersSaveIsRefusedAndItsCopyDropped() async throws {
        let shared = InMemorySessionPersistence()
        let dropped = Mutex<[String]>([])
        let a = try Self.store(shared) { user, _, reason in dropped.withLock { $0.append("\(user):\(reason)") } }
        let b = try Self.store(shared)

        await Self.tick(try await a.loadSession(for: "ada"))
        try await a.saveChanges()  // version 1
        let onB = try await b.loadSession(for: "ada")  // loads version 1
        await Self.tick(onB)
        try await b.saveChanges()  // version 2: b owns ada now
        await Self.tick(try await a.loadSession(for: "ada"))  // a still thinks it owns her
        #expect(try await a.saveChanges() == 0)  // its version 2 is refused
        #expect(dropped.withLock { $0 } == ["ada:superseded"])
        #expect(a.existingSession(for: "ada") == nil)
        // a's next request for ada loads b's version.
        #expect(try await a.loadSession(for: "ada").snapshot().eventNumber == 2)
    }

    @Test func aCheckpointTakesTheChangeOutOfTheStoresOwnSaves() async throws {
        let persistence = InMemorySessionPersistence()
        var configuration = SessionStore.Configuration(persistence: persistence)
        configuration.checkpointsWithRecords = true
        let store = SessionStore(tagManager: try SessionStoreTests.manager(), configuration: configuration)
        let ada = try await store.loadSession(for: "ada")
        await Self.tick(ada)
        // The host writes the change itself (with the push's records): the next version, counted as used.
        let first = try #require(store.checkpoint(ada))
        #expect(first.version == 1)
        #expect(first.snapshot == ada.snapshot())
        _ = try await persistence.save([.save(first)])
        // Handed out again: nothing for the store's own saves, and the next checkpoint continues the versions.
        await Self.tick(try await store.loadSession(for: "ada"))
        #expect(try await store.saveChanges() == 0)
        #expect(store.checkpoint(ada)?.version == 2)
        // A change the host reports is still saved by the store, above the checkpointed version.
        store.didChange(ada)
        #expect(try await store.saveChanges() == 1)
        #expect(try await persistence.load(userID: "ada")?.version == 3)
    }

    @Test func anInvalidatedSessionIsLoadedAgainAndNothingIsSavedOrRemovedForIt() async throws {
        let persistence = InMemorySessionPersistence()
        let dropped = Mutex<[String]>([])
        let store = try Self.store(persistence) { user, _, reason in dropped.withLock { $0.append("\(user):\(reason)") }
        }
        let ada = try await store.loadSession(for: "ada")
        await Self.tick(ada)
        let saved = try #require(store.checkpoint(ada))
        _ = try await persistence.save([.save(saved)])
        await Self.tick(ada)  // a change whose write failed: the host invalidates the session
        #expect(store.invalidate("ada") === ada)
        #expect(store.checkpoint(ada) == nil)
        #expect(dropped.withLock { $0 } == ["ada:superseded"])
        #expect(try await store.saveChanges() == 0)
        #expect(try await store.loadSession(for: "ada").snapshot() == saved.snapshot)
    }

    @Test func aUserWaitsForTheirOwnLoadOnlyAndItHappensOnce() async throws {
        let persistence = GatedPersistence(gated: ["slow"])
        let store = try Self.store(persistence)
        async let slow1 = store.loadSession(for: "slow")
        async let slow2 = store.loadSession(for: "slow")
        await persistence.waitForLoad(of: "slow")
        // Another user is served while slow's load is in progress.
        let fast = try await store.loadSession(for: "fast")
        #expect(fast.sessionID == "fast")
        persistence.open("slow")
        let (one, two) = try await (slow1, slow2)
        #expect(one === two)
        #expect(persistence.loads("slow") == 1)
    }

    @Test func aLoadThatFailsIsAnErrorAndNothingIsCreated() async throws {
        let persistence = GatedPersistence(failing: true)
        let store = try Self.store(persistence)
        await #expect(throws: ContainerError.self) { try await store.loadSession(for: "ada") }
        #expect(store.count == 0)
        await #expect(throws: ContainerError.self) { try await store.loadSession(for: "a\u{0}b") }
    }

    @Test func aSessionEvictedForCapacityKeepsItsUnsavedChange() async throws {
        let store = try Self.store(InMemorySessionPersistence(), maximumSessions: 1)
        let ada = try await store.loadSession(for: "ada")
        await Self.tick(ada)
        _ = try await store.loadSession(for: "bob")  // evicts ada before her change was saved
        #expect(try await store.loadSession(for: "ada") === ada)
        try await store.saveChanges()
        _ = try await store.loadSession(for: "bob")  // evicts ada again; saved, so she is gone from memory
        let reloaded = try await store.loadSession(for: "ada")
        #expect(reloaded !== ada && reloaded.snapshot().eventNumber == 1)
    }

    @Test func anEndedSessionIsRemovedFromThePersistence() async throws {
        let clock = ManualClock()
        let persistence = InMemorySessionPersistence()
        let store = try Self.store(persistence, clock: clock)
        await Self.tick(try await store.loadSession(for: "ada"))
        try await store.saveChanges()
        clock.advance(by: .seconds(61))
        #expect(store.evictIdle() == 1)
        try await store.saveChanges()
        #expect(try await persistence.load(userID: "ada") == nil)
        #expect(try await store.loadSession(for: "ada").snapshot().eventNumber == 0)
    }

    @Test func runSavesEveryIntervalAndWhatIsLeftAtAGracefulShutdown() async throws {
        let clock = ManualClock()
        let persistence = InMemorySessionPersistence()
        let saves = AsyncStream<Int>.makeStream()
        let store = SessionStore(
            tagManager: try SessionStoreTests.manager(),
            configuration: .init(
                persistence: persistence,
                saveInterval: .seconds(1),
                onSave: { saves.continuation.yield($0) }
            ),
            clock: clock
        )
        let task = Task { try await store.run() }
        var saved = saves.stream.makeAsyncIterator()
        await Self.tick(try await store.loadSession(for: "ada"))
        await clock.waitForSleepers(1)
        clock.advance(by: .seconds(1))
        #expect(await saved.next() == 1)
        await Self.tick(try await store.loadSession(for: "bob"))
        store.gracefulShutdown()
        try await task.value
        #expect(await saved.next() == 1)
        #expect(try await persistence.load(userID: "bob") != nil)
    }

    /// Cancellation is "stop now": the run returns without its last save; the change stays in the store
    /// for the next save.
    @Test func aCancelledRunStopsWithoutSavingAndKeepsTheChange() async throws {
        let clock = ManualClock()
        let persistence = InMemorySessionPersistence()
        let store = SessionStore(
            tagManager: try SessionStoreTests.manager(),
            configuration: .init(persistence: persistence, saveInterval: .seconds(1)),
            clock: clock
        )
        let task = Task { try await store.run() }
        await clock.waitForSleepers(1)
        await Self.tick(try await store.loadSession(for: "ada"))
        task.cancel()
        try await task.value
        #expect(try await persistence.load(userID: "ada") == nil)
        #expect(try await store.saveChanges() == 1)
        #expect(try await persistence.load(userID: "ada") != nil)
    }

    /// A graceful shutdown that comes before the run: the run saves once and returns.
    @Test func aGracefulShutdownBeforeTheRunEndsItAfterOneSave() async throws {
        let persistence = InMemorySessionPersistence()
        let store = SessionStore(
            tagManager: try SessionStoreTests.manager(),
            configuration: .init(persistence: persistence, saveInterval: .seconds(3600))
        )
        await Self.tick(try await store.loadSession(for: "ada"))
        store.gracefulShutdown()
        try await store.run()
        #expect(try await persistence.load(userID: "ada") != nil)
    }

    @Test func theContractHoldsInMemory() async throws {
        let persistence = InMemorySessionPersistence()
        try await SessionPersistenceConformance(make: { persistence }, reopen: { persistence }).checkAll()
    }

    /// A failing save is logged at once (then at most once a minute) and the store reports the persistence
    /// unhealthy until a save succeeds.
    @Test func aFailingSaveIsLoggedAndReportedUntilASaveSucceeds() async throws {
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        let persistence = FailingPersistence()
        let clock = ManualClock()
        let store = SessionStore(
            tagManager: manager,
            configuration: .init(persistence: persistence, saveInterval: .seconds(1)),
            clock: clock
        )
        let session = try await store.loadSession(for: "ada")
        await session.push(["n": 1])
        store.didChange(session)
        #expect(store.persistenceIsHealthy)
        let task = Task { try await store.run() }
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        await logger.waitForMessage(at: .error, containing: "cannot save sessions")
        #expect(!store.persistenceIsHealthy)
        persistence.failing.withLock { $0 = false }
        await clock.waitForSleepers()
        clock.advance(by: .seconds(1))
        await logger.waitForMessage(at: .info, containing: "sessions are saved again")
        #expect(store.persistenceIsHealthy)
        task.cancel()
        try await task.value
    }
}

/// A persistence whose saves fail while `failing` holds `true`.
final class FailingPersistence: SessionPersistence, Sendable {
    let failing = Mutex(true)
    func load(userID: String) async throws(ContainerError) -> StoredSession? { nil }
    func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult {
        if failing.withLock({ $0 }) { throw ContainerError(.io, "the disk is full") }
        return SessionSaveResult()
    }
}

/// A persistence whose loads of the gated users wait until the test opens them (or every load fails),
/// counting them.
final class GatedPersistence: SessionPersistence, Sendable {
    private struct State {
        var gates: [String: CheckedContinuation<Void, Never>] = [:]
        var open: Set<String> = []
        var loads: [String: Int] = [:]
        var loadingWaiters: [String: [CheckedContinuation<Void, Never>]] = [:]
    }
    private let state = Mutex(State())
    let failing: Bool
    let gated: Set<String>

    init(failing: Bool = false, gated: Set<String> = []) {
        self.failing = failing
        self.gated = gated
    }

    func load(userID: String) async throws(ContainerError) -> StoredSession? {
        if failing { throw ContainerError(.io, "the store cannot be reached") }
        await withCheckedContinuation { continuation in
            let (opened, waiters) = state.withLock { state in
                state.loads[userID, default: 0] += 1
                let waiters = state.loadingWaiters.removeValue(forKey: userID) ?? []
                if state.open.contains(userID) || !gated.contains(userID) { return (true, waiters) }
                state.gates[userID] = continuation
                return (false, waiters)
            }
            for waiter in waiters { waiter.resume() }
            if opened { continuation.resume() }
        }
        return nil
    }

    func save(_ changes: [SessionChange]) async throws(ContainerError) -> SessionSaveResult { SessionSaveResult() }

    /// Waits until a load of `userID` is in progress.
    func waitForLoad(of userID: String) async {
        await withCheckedContinuation { continuation in
            let loading = state.withLock { state in
                if state.loads[userID] != nil { return true }
                state.loadingWaiters[userID, default: []].append(continuation)
                return false
            }
            if loading { continuation.resume() }
        }
    }

    /// Lets the loads of `userID` finish.
    func open(_ userID: String) {
        let gate = state.withLock { state in
            state.open.insert(userID)
            return state.gates.removeValue(forKey: userID)
        }
        gate?.resume()
    }

    func loads(_ userID: String) -> Int { state.withLock { $0.loads[userID] ?? 0 } }
}
