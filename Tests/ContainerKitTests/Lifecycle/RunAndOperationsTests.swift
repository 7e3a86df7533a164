import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

extension LifecycleTests {
    @Suite struct RunAndOperationsTests {
        let id = Fixtures.containerID
        let clock = ManualClock()
        let runner = Runner()

        func manager(_ network: any ContainerSource, delayed: DelayedInitialization = .init()) -> TagManager {
            TagManager(
                logger: InMemoryLogger(),
                lifecycle: .testing(network: network, clock: clock, delayedInitialization: delayed)
            )
        }

        @Test func openWithoutRunLoadsInTheCallAndDoesNotRefresh() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let manager = manager(network)
            let opened = try await manager.open(id: id, timeout: .seconds(3600))
            #expect(opened.container?.version == "1")
            #expect(!manager.isRunning)
            #expect(manager.refresh(id: id, force: true))
            clock.advance(by: .seconds(48 * 3600))
            #expect(network.requests.count == 1)
        }

        @Test func runPicksUpAHolderOpenedBeforeItAndRefreshesOnRequest() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let manager = manager(network)
            let callbacks = CallbackRecorder()
            _ = try await manager.open(id: id, timeout: .seconds(3600), callback: callbacks)
            await runner.run(manager)
            #expect(manager.refresh(id: id, force: true))
            await callbacks.waitFor(.succeeded(.network), count: 2)
            #expect(manager.liveVersion() == "2")
        }

        @Test func forceBypassesTheFifteenMinuteLimit() async throws {
            let network = ScriptedSource([ScriptedSource.container("1"), ScriptedSource.container("2")])
            let manager = await runner.run(manager(network))
            let callbacks = CallbackRecorder()
            _ = try await manager.open(id: id, timeout: .seconds(3600), callback: callbacks)
            #expect(!manager.refresh(id: id, force: false))
            #expect(manager.refresh(id: id, force: true))
            await callbacks.waitFor(.succeeded(.network), count: 2)
            #expect(manager.liveVersion() == "2")
            #expect(network.requests.count == 2)
            #expect(!manager.refresh(id: "GTM-NOTOPEN", force: true))
        }

        @Test func runReturnsWhenCancelledAndCanRunAgain() async throws {
            let network = ScriptedSource([ScriptedSource.container("1")])
            let manager = manager(network)
            let task = Task.immediate { try await manager.run() }
            #expect(manager.isRunning)
            await #expect(throws: ContainerFetchError.self) { try await manager.run() }
            _ = try await manager.open(id: id, timeout: .seconds(3600))
            task.cancel()
            try await task.value
            #expect(!manager.isRunning)
            #expect(manager.liveVersion() == "1")
        }

        @Test func aGracefulShutdownEndsTheRunAndARunAfterItRunsUntilItsOwn() async throws {
            let network = ScriptedSource([ScriptedSource.container("1")])
            let manager = manager(network)
            let task = Task.immediate { try await manager.run() }
            #expect(manager.isRunning)
            _ = try await manager.open(id: id, timeout: .seconds(3600))
            manager.gracefulShutdown()
            try await task.value
            #expect(!manager.isRunning)
            #expect(manager.liveVersion() == "1")
            // The request was used up: the next run runs until it is shut down in turn.
            let again = Task.immediate { try await manager.run() }
            #expect(manager.isRunning)
            manager.gracefulShutdown()
            try await again.value
        }

        @Test func aGracefulShutdownBeforeTheRunEndsTheRunAtOnce() async throws {
            let manager = manager(ScriptedSource([]))
            manager.gracefulShutdown()
            try await manager.run()
            #expect(!manager.isRunning)
        }

        @Test func waitUntilLiveReturnsOnceTheContainerGoesLive() async throws {
            let gate = Gate()
            let manager = await runner.run(manager(ScriptedSource([ScriptedSource.container("4")], gate: gate)))
            let id = self.id
            let wait = Task { try await manager.waitUntilLive(id: id, timeout: .seconds(3600)) }
            _ = try await manager.open(id: id, timeout: .zero)
            gate.open()
            #expect(try await wait.value.version == "4")
            #expect(try await manager.waitUntilLive(id: id, timeout: .zero).version == "4")
        }

        @Test func waitUntilLiveThrowsAtTheTimeout() async throws {
            let manager = manager(ScriptedSource([ScriptedSource.failure(.noNetwork)]))
            let id = self.id
            let wait = Task { try await manager.waitUntilLive(id: id, timeout: .seconds(5)) }
            await clock.waitForSleepers(1)
            clock.advance(by: .seconds(5))
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
            #expect(
                logger.entries.contains {
                    $0.message.contains("the cap across all sessions") && $0.metadata["limit"] == "3"
                }
            )
            manager.add(try ContainerLoader().load(bytes: Fixtures.live(), file: "\(id).json"))
            #expect(
                logger.entries.contains { $0.message.contains("pushes were dropped") && $0.metadata["dropped"] == "1" }
            )
            #expect(await first.push(event: "e").deferred == false)
        }
    }
}
