import ContainerKit
import ContainerKitTesting
import Foundation
import TestSupport
import Testing

extension LifecycleTests {
    @Suite struct DelayedInitializationTests {
        let id = Fixtures.containerID
        let clock = ManualClock()
        let tags = TagRecorder()
        let logger = InMemoryLogger()

        func manager(network: (any ContainerSource)? = nil, delayed: DelayedInitialization = .init()) -> TagManager {
            // Without run(), the open loads in its own task, and so replays the deferred pushes before it
            // returns: the tests need not wait for the replay.
            let manager = TagManager(
                logger: logger,
                lifecycle: .testing(network: network, clock: clock, delayedInitialization: delayed)
            )
            tags.register(on: manager)
            return manager
        }

        /// Starts opening with a network source held at `gate`, and waits until the open is in progress.
        func startOpen(_ manager: TagManager) async -> Task<OpenedContainer, any Error> {
            let id = self.id
            let task = Task { try await manager.open(id: id, timeout: .seconds(3600)) }
            await clock.waitForSleepers(1)
            return task
        }

        @Test func pushesBeforeTheContainerIsAvailableAreQueuedAndReplayedInOrder() async throws {
            let gate = Gate()
            let manager = manager(network: ScriptedSource([ScriptedSource.container("1")], gate: gate))
            let open = await startOpen(manager)
            let session = manager.makeDataLayer()
            var results: [PushResult] = []
            for song in ["a", "b", "c"] {
                results.append(await session.push(event: "played", parameters: ["song": .string(song)]))
            }
            let data = await session.push("user.name", .string("Ada"))
            #expect(results.allSatisfy(\.deferred) && data.deferred)
            #expect(results.allSatisfy { $0.events.isEmpty })
            #expect(tags.calls.isEmpty)
            #expect(session.get("user.name") == .undefined)

            gate.open()
            _ = try await open.value
            #expect(tags.songs == ["a", "b", "c"])
            #expect(session.get("user.name") == .string("Ada"))
            let after = await session.push(event: "played", parameters: ["song": "d"])
            #expect(!after.deferred)
            #expect(after.fired.count == 1)
            #expect(tags.songs == ["a", "b", "c", "d"])
        }

        /// A queued push happened when it arrived, or when it said: its handlers see that time at the replay, not the
        /// time of the replay (what the Braze provider stamps its records with).
        @Test func aQueuedPushIsReplayedWithTheTimeItArrivedNotTheReplays() async throws {
            let gate = Gate()
            let manager = manager(network: ScriptedSource([ScriptedSource.container("1")], gate: gate))
            let open = await startOpen(manager)
            let session = manager.makeDataLayer()
            await session.push(event: "played", parameters: ["song": "a"])
            clock.advance(by: .seconds(90))
            let happened = Date(timeIntervalSince1970: 1_700_000_000)
            await session.push(event: "played", parameters: ["song": "b"], eventTime: happened)
            clock.advance(by: .seconds(30))
            gate.open()
            _ = try await open.value
            let times = tags.calls.map { $0.eventTime?.timeIntervalSince1970 ?? 0 }
            #expect(tags.songs == ["a", "b"] && times.count == 2)
            #expect(abs(times[0] - testWallClockStart.timeIntervalSince1970) < 0.001, "\(times)")
            #expect(times[1] == happened.timeIntervalSince1970)
            await session.push(event: "played", parameters: ["song": "c"])
            #expect(tags.calls.last?.eventTime == nil)
        }

        /// A queued push keeps its event ID: a retry queued behind its original is a duplicate of it at the replay,
        /// and is not applied twice.
        @Test func aQueuedRetryWithTheSameEventIDIsReplayedAsADuplicate() async throws {
            let gate = Gate()
            let manager = manager(network: ScriptedSource([ScriptedSource.container("1")], gate: gate))
            let open = await startOpen(manager)
            let session = manager.makeDataLayer()
            for song in ["a", "a", "b"] {
                let id = song == "a" ? "m-1" : "m-2"
                let queued = await session.push(event: "played", parameters: ["song": .string(song)], eventID: id)
                #expect(queued.deferred)
            }
            gate.open()
            _ = try await open.value
            #expect(tags.songs == ["a", "b"])
            let retry = await session.push(event: "played", parameters: ["song": "a"], eventID: "m-1")
            #expect(retry.isDuplicate && tags.songs == ["a", "b"])
        }

        @Test func eachSessionReplaysItsOwnQueue() async throws {
            let gate = Gate()
            let manager = manager(network: ScriptedSource([ScriptedSource.container("1")], gate: gate))
            let open = await startOpen(manager)
            let first = manager.makeDataLayer()
            let second = manager.makeDataLayer()
            await first.push(event: "played", parameters: ["song": "1a"])
            await second.push(event: "played", parameters: ["song": "2a"])
            await first.push(event: "played", parameters: ["song": "1b"])
            await second.push(event: "played", parameters: ["song": "2b"])
            gate.open()
            _ = try await open.value
            #expect(tags.songs.count == 4)
            #expect(tags.songs.filter { $0.hasPrefix("1") } == ["1a", "1b"])
            #expect(tags.songs.filter { $0.hasPrefix("2") } == ["2a", "2b"])
        }

        @Test func aFullQueueDropsTheOldestPushWithAWarning() async throws {
            let gate = Gate()
            let manager = manager(
                network: ScriptedSource([ScriptedSource.container("1")], gate: gate),
                delayed: DelayedInitialization(maximumQueuedPushes: 2)
            )
            let open = await startOpen(manager)
            let session = manager.makeDataLayer()
            for song in ["a", "b", "c", "d"] {
                await #expect(session.push(event: "played", parameters: ["song": .string(song)]).deferred)
            }
            let warnings = logger.entries.filter { $0.level == .warning }
            #expect(warnings.count == 1)
            #expect(warnings.first?.message.contains("dropped the oldest push") == true)
            #expect(warnings.first?.metadata["session"] == session.sessionID)
            #expect(warnings.first?.metadata["limit"] == "2")
            gate.open()
            _ = try await open.value
            #expect(tags.songs == ["c", "d"])
            #expect(
                logger.entries.contains { $0.message.contains("pushes were dropped") && $0.metadata["dropped"] == "2" }
            )
        }

        @Test func pushesGoStraightThroughWithoutAnOpenOrTheSetting() async {
            let manager = manager()
            let result = await manager.makeDataLayer().push(event: "played", parameters: ["song": "a"])
            #expect(!result.deferred)
            #expect(result.events.isEmpty)
        }

        @Test func theSettingQueuesPushesUntilAContainerIsAdded() async throws {
            let manager = manager(delayed: DelayedInitialization(isEnabled: true))
            let session = manager.makeDataLayer()
            await #expect(session.push(event: "played", parameters: ["song": "a"]).deferred)
            manager.add(try ContainerLoader().load(bytes: Fixtures.live(), file: "GTM-K1T5.json"))
            #expect(tags.songs == ["a"])  // replayed by add(_:) in this task
            await #expect(!session.push(event: "played", parameters: ["song": "b"]).deferred)
            #expect(tags.songs == ["a", "b"])
        }

        @Test func queuedPushesAreMergedWhenTheOpenEndsWithoutAContainer() async throws {
            let gate = Gate()
            let manager = manager(network: ScriptedSource([ScriptedSource.failure(.noNetwork)], gate: gate))
            let open = await startOpen(manager)
            let session = manager.makeDataLayer()
            #expect(await session.push("user.name", .string("Ada")).deferred)
            gate.open()
            #expect(try await open.value.container == nil)
            #expect(session.get("user.name") == .string("Ada"))
            #expect(await !session.push("user.age", .int(36)).deferred)
        }

        @Test func pushesFromTagHandlersDuringTheReplayKeepTheirPlace() async throws {
            let gate = Gate()
            let manager = manager(network: ScriptedSource([ScriptedSource.container("1")], gate: gate))
            manager.register(
                tagHandler: ClosureTagHandler { call in
                    if call.arguments["song"] == "a" {
                        call.dataLayer.push(event: "shared", parameters: ["song": "a2"])
                    }
                },
                for: "com.example.Played"
            )
            let order = TagRecorder()
            order.register(on: manager, names: ["com.example.Shared"])
            let open = await startOpen(manager)
            let session = manager.makeDataLayer()
            await session.push(event: "played", parameters: ["song": "a"])
            await session.push(event: "shared", parameters: ["song": "b"])
            gate.open()
            _ = try await open.value
            #expect(order.songs.count == 2)
            #expect(order.songs == ["a2", "b"])
        }

        @Test func pushesMadeDuringTheReplayWaitBehindTheQueue() async throws {
            let gate = Gate()
            let manager = manager(network: ScriptedSource([ScriptedSource.container("1")], gate: gate))
            let open = await startOpen(manager)
            let session = manager.makeDataLayer()
            for i in 0..<300 { await session.push(event: "played", parameters: ["song": .string(String(i))]) }
            gate.open()
            for i in 300..<600 { await session.push(event: "played", parameters: ["song": .string(String(i))]) }
            _ = try await open.value
            #expect(tags.songs.count == 600)
            #expect(tags.songs == (0..<600).map(String.init))
        }
    }
}
