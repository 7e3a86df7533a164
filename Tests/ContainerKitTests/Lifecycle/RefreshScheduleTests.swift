import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

extension LifecycleTests {
    @Suite struct RefreshScheduleTests {
        let id = Fixtures.containerID
        let clock = ManualClock()
        let runner = Runner()
        let callbacks = CallbackRecorder()

        func open(_ network: any ContainerSource, saved: SavedContainerStore? = nil) async throws
            -> (TagManager, ContainerHolder)
        {
            let manager = await runner.run(
                TagManager(
                    logger: InMemoryLogger(),
                    lifecycle: .testing(savedContainers: saved, network: network, clock: clock)
                )
            )
            _ = try await manager.open(id: id, timeout: .seconds(3600), callback: callbacks)
            let holder = try #require(manager.containerHolder(id: id))
            #expect(holder.nextRefresh != nil)
            return (manager, holder)
        }

        /// Advances the clock to the holder's next refresh once its loop sleeps until then.
        func advanceToNextRefresh(_ holder: ContainerHolder) async throws {
            let due = try #require(holder.nextRefresh)
            await clock.waitForSleepers(1)
            let deadline = try #require(clock.pendingDeadlines.first)
            #expect(testWallClockStart.addingTimeInterval(deadline.offset.testSeconds) == due)
            clock.advance(to: deadline)
        }

        @Test func refreshesTwelveHoursAfterASuccess() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let start = clock.wallNow
            let (manager, holder) = try await open(network)
            #expect(holder.nextRefresh == start.addingTimeInterval(12 * 3600))
            await clock.waitForSleepers(1)
            #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(12 * 3600))])

            clock.advance(by: .seconds(12 * 3600 - 1))
            #expect(network.requests.count == 1)
            clock.advance(by: .seconds(1))
            await callbacks.waitFor(.succeeded(.network), count: 2)
            #expect(manager.liveVersion() == "2")
            #expect(holder.nextRefresh == start.addingTimeInterval(24 * 3600))
            #expect(network.requests.count == 2)
        }

        @Test func retriesOneHourAfterAFailureThenTwelveHoursAfterTheSuccess() async throws {
            let network = ScriptedSource([ScriptedSource.failure(.noNetwork), ScriptedSource.container("2")])
            let start = clock.wallNow
            let (manager, holder) = try await open(network)
            #expect(holder.nextRefresh == start.addingTimeInterval(3600))
            #expect(holder.lastFailure == .noNetwork)
            #expect(manager.container(id: id) == nil)

            try await advanceToNextRefresh(holder)
            await callbacks.waitFor(.succeeded(.network))
            #expect(manager.liveVersion() == "2")
            #expect(holder.nextRefresh == start.addingTimeInterval(13 * 3600))
            #expect(holder.lastFailure == nil)
        }

        @Test func aFailedRefreshKeepsTheCurrentContainer() async throws {
            let network = ScriptedSource([
                ScriptedSource.container("1"), ScriptedSource.failure(.httpStatus, status: 500),
            ])
            let (manager, holder) = try await open(network)
            let refreshed = clock.wallNow.addingTimeInterval(12 * 3600)
            try await advanceToNextRefresh(holder)
            await callbacks.waitFor(.failed(.network, .serverError))
            #expect(holder.lastFailure == .serverError)
            #expect(manager.liveVersion() == "1")
            #expect(holder.nextRefresh == refreshed.addingTimeInterval(3600))
            #expect(holder.opened.lastRefresh == refreshed.addingTimeInterval(-12 * 3600))
        }

        @Test func manualRefreshIsAllowedOncePerFifteenMinutes() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let (manager, holder) = try await open(network)
            #expect(!holder.refresh())
            clock.advance(by: .seconds(15 * 60 - 1))
            #expect(!manager.refresh(id: id))
            clock.advance(by: .seconds(1))
            #expect(holder.refresh())
            #expect(!holder.refresh())
            await callbacks.waitFor(.succeeded(.network), count: 2)
            #expect(manager.liveVersion() == "2")
            #expect(network.requests.count == 2)
            #expect(holder.nextRefresh == clock.wallNow.addingTimeInterval(12 * 3600))
            #expect(!holder.refresh())
        }

        @Test func aFreshSavedContainerIsRefreshedWhenItTurnsTwelveHoursOld() async throws {
            let store = SavedContainerStore(directory: temporaryDirectory())
            let savedAt = clock.wallNow.addingTimeInterval(-3600)  // an hour ago
            try await store.save(id: id, bytes: Fixtures.live(version: "1"), etag: nil, fetchedAt: savedAt)
            let network = ScriptedSource([ScriptedSource.container("2")])
            let (manager, holder) = try await open(network, saved: store)
            #expect(manager.liveVersion() == "1")
            #expect(holder.nextRefresh == clock.wallNow.addingTimeInterval(11 * 3600))
            #expect(network.requests.isEmpty)
            #expect(holder.refresh())  // no network refresh yet, so a manual one is allowed
            await callbacks.waitFor(.succeeded(.network))
            #expect(manager.liveVersion() == "2")
        }

        @Test func notModifiedKeepsTheContainerAndRecordsTheRefresh() async throws {
            let server = try LoopbackHTTPServer { request in
                request.headers["if-none-match"] == "\"e1\""
                    ? .notModified(etag: "\"e1\"") : .container(Fixtures.live(version: "1"), etag: "\"e1\"")
            }
            defer { server.stop() }
            let store = SavedContainerStore(directory: temporaryDirectory())
            let (manager, holder) = try await open(try HTTPContainerSource(base: server.baseURL), saved: store)
            let live = manager.container(id: id)
            try await advanceToNextRefresh(holder)
            let refreshedAt = clock.wallNow
            await callbacks.waitFor(6)
            #expect(callbacks.events.count == 6)
            #expect(callbacks.events.suffix(2) == [.began(.network), .succeeded(.network)])
            #expect(server.requests.map { $0.headers["if-none-match"] } == [nil, "\"e1\""])
            #expect(manager.liveVersion() == live?.version)
            #expect(holder.opened.lastRefresh == refreshedAt)
            #expect(try await store.load(id: id)?.fetchedAt == refreshedAt)
            #expect(holder.nextRefresh == refreshedAt.addingTimeInterval(12 * 3600))
        }

        @Test func closeStopsRefreshing() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let (manager, holder) = try await open(network)
            await clock.waitForSleepers(1)
            holder.close()
            clock.advance(by: .seconds(48 * 3600))
            #expect(!holder.refresh())
            #expect(holder.nextRefresh == nil)
            #expect(manager.containerHolder(id: id) == nil)
            #expect(manager.liveVersion() == "1")
            #expect(network.requests.count == 1)
        }
    }
}
