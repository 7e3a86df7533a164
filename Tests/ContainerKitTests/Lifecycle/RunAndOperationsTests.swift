import ContainerKit
import Foundation
import TestSupport
import Testing

extension LifecycleTests {
    @Suite struct RunAndOperationsTests {
        typealias Fixtures = ContainerTestServer.Fixtures
        let id = Fixtures.containerID
        let clock = ManualRefreshClock()
        let runner = Runner()

        func manager(_ network: any ContainerSource, delayed: DelayedInitialization = .init()) -> TagManager {
            TagManager(
                logger: InMemoryLogger(),
                lifecycle: LifecycleConfiguration(network: network, clock: clock, delayedInitialization: delayed)
            )
        }

        @Test func openWithoutRunLoadsInTheCallAndDoesNotRefresh() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let manager = manager(network)
            let opened = try await manager.open(id: id, timeout: 3600)
            #expect(opened.container?.version == "1")
            #expect(!manager.isRunning)
            #expect(manager.refresh(id: id, force: true))
            clock.advance(by: 48 * 3600)
            #expect(network.requests.count == 1)
        }

        @Test func runPicksUpAHolderOpenedBeforeItAndRefreshesOnRequest() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let manager = manager(network)
            _ = try await manager.open(id: id, timeout: 3600)
            await runner.run(manager)
            #expect(manager.refresh(id: id, force: true))
            #expect(await eventually { manager.liveVersion() == "2" })
        }

        @Test func forceBypassesTheFifteenMinuteLimit() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let manager = await runner.run(manager(network))
            _ = try await manager.open(id: id, timeout: 3600)
            #expect(!manager.refresh(id: id, force: false))
            #expect(manager.refresh(id: id, force: true))
            #expect(await eventually { manager.liveVersion() == "2" })
            #expect(network.requests.count == 2)
            #expect(!manager.refresh(id: "GTM-NOTOPEN", force: true))
        }

        @Test func runReturnsWhenCancelledAndCanRunAgain() async throws {
            let network = ScriptedSource([ScriptedSource.container("1")])
            let manager = manager(network)
            let task = Task { try await manager.run() }
            #expect(await eventually { manager.isRunning })
            await #expect(throws: ContainerFetchError.self) { try await manager.run() }
            _ = try await manager.open(id: id, timeout: 3600)
            task.cancel()
            try await task.value
            #expect(!manager.isRunning)
            #expect(manager.liveVersion() == "1")
        }

        @Test func waitUntilLiveReturnsOnceTheContainerGoesLive() async throws {
            let gate = Gate()
            let manager = await runner.run(manager(ScriptedSource([ScriptedSource.container("4")], gate: gate)))
            let id = self.id
            let wait = Task { try await manager.waitUntilLive(id: id, timeout: 3600) }
            _ = try await manager.open(id: id, timeout: 0)
            gate.open()
            #expect(try await wait.value.version == "4")
            #expect(try await manager.waitUntilLive(id: id, timeout: 0).version == "4")
        }

        @Test func waitUntilLiveThrowsAtTheTimeout() async throws {
            let manager = manager(ScriptedSource([ScriptedSource.failure(.noNetwork)]))
            let id = self.id
            let wait = Task { try await manager.waitUntilLive(id: id, timeout: 5) }
            #expect(await eventually { !clock.pendingDeadlines.isEmpty })
            clock.advance(by: 5)
            await #expect(throws: ContainerFetchError.self) { try await wait.value }
        }

        @Test func theGlobalCapDropsPushesBeyondItAcrossSessions() async throws {
            let logger = InMemoryLogger()
            let manager = TagManager(
                logger: logger,
                lifecycle: LifecycleConfiguration(
                    delayedInitialization: DelayedInitialization(isEnabled: true, maximumTotalQueuedPushes: 3)
                )
            )
            let first = manager.makeDataLayer()
            let second = manager.makeDataLayer()
            let results: [PushResult] = [
                await first.push(event: "a"), await second.push(event: "b"), await first.push(event: "c"),
                await second.push(event: "d"),
            ]
            #expect(results.allSatisfy { $0.deferred })
            #expect(results.map(\.dropped) == [false, false, false, true])
            #expect(logger.messages(at: .warning).contains { $0.contains("at most 3 pushes wait across all sessions") })
            manager.add(try ContainerLoader().load(bytes: Fixtures.live(), file: "\(id).json"))
            #expect(logger.messages(at: .warning).contains { $0.contains("1 pushes were dropped") })
            #expect(await first.push(event: "e").deferred == false)
        }
    }
}
