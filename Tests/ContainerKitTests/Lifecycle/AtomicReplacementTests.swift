import ContainerKit
import ContainerKitTesting
import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

extension LifecycleTests {
    @Suite struct AtomicReplacementTests {
        let id = Fixtures.containerID
        let clock = ManualClock()
        let callbacks = CallbackRecorder()
        let runner = Runner()

        /// Version `version` of the fixture whose `played` tag calls `com.example.Played<version>`.
        static func version(_ version: String) -> ScriptedSource.Answer {
            let text = String(decoding: Fixtures.live(version: version), as: UTF8.self)
                .replacingOccurrences(of: "com.example.Played", with: "com.example.Played\(version)")
            return .success(.container(bytes: Array(text.utf8), etag: nil))
        }

        func open(_ versions: [String]) async throws -> (TagManager, ContainerHolder) {
            let manager = await runner.run(
                TagManager(
                    logger: InMemoryLogger(),
                    lifecycle: .testing(network: ScriptedSource(versions.map(Self.version)), clock: clock)
                )
            )
            _ = try await manager.open(id: id, timeout: .seconds(3600), callback: callbacks)
            return (manager, try #require(manager.containerHolder(id: id)))
        }

        /// Refreshes by hand (after the 15-minute throttle) and waits until `version` is live.
        func refresh(_ holder: ContainerHolder, _ manager: TagManager, to version: String) async {
            let refreshes = callbacks.events.count { $0 == .succeeded(.network) }
            clock.advance(by: .seconds(15 * 60))
            #expect(holder.refresh())
            await callbacks.waitFor(.succeeded(.network), count: refreshes + 1)
            #expect(manager.liveVersion() == version)
        }

        @Test func aPushInFlightFinishesOnTheVersionItStartedWith() async throws {
            let (manager, holder) = try await open(["1", "2"])
            let entered = ProgressCounter()
            let finished = ProgressCounter()
            let release = DispatchSemaphore(value: 0)
            manager.register(
                tagHandler: ClosureTagHandler { _ in
                    entered.advance()
                    release.wait()  // on the pushing thread, not a task
                },
                for: "com.example.Played1"
            )
            let session = manager.makeDataLayer()
            let result = Mutex<PushResult?>(nil)
            Thread.detachNewThread {
                let pushed = session.push(event: "played", parameters: ["song": "a"])
                result.withLock { $0 = pushed }
                finished.advance()
            }
            await entered.reach(1)

            await refresh(holder, manager, to: "2")
            release.signal()
            await finished.reach(1)
            let inFlight = try #require(result.withLock { $0 })
            #expect(inFlight.fired.map(\.classPath) == ["com.example.Played1"])
            #expect(inFlight.fired.map(\.status) == [.ok])
            await #expect(session.push(event: "played").fired.map(\.classPath) == ["com.example.Played2"])
        }

        @Test func concurrentPushesAlwaysSeeExactlyOneWholeVersion() async throws {
            let versions = (1...12).map(String.init)
            let (manager, holder) = try await open(versions)
            let stop = Gate()
            let outcomes = Mutex<[(pushes: Int, bad: Int, seen: Set<String>)]>([])
            let done = ProgressCounter()
            for _ in 0..<4 {
                // Threads, not tasks: synchronous pushes in a loop would starve the cooperative pool.
                Thread.detachNewThread {
                    let session = manager.makeDataLayer()
                    var pushes = 0
                    var bad = 0
                    var seen = Set<String>()
                    var last = false
                    while !last {
                        // One more push after the stop signal: it starts after the last version went live.
                        last = stop.isOpen && pushes >= 100
                        let result = session.push(event: "played", parameters: ["song": "x"])
                        pushes += 1
                        if result.events.count != 1 || result.fired.count != 1 { bad += 1 }
                        if let path = result.fired.first?.classPath { seen.insert(path) }
                    }
                    outcomes.withLock { $0.append((pushes, bad, seen)) }
                    done.advance()
                }
            }
            for version in versions.dropFirst() { await refresh(holder, manager, to: version) }
            stop.open()
            await done.reach(4)
            var seen = Set<String>()
            for outcome in outcomes.withLock({ $0 }) {
                #expect(outcome.bad == 0)
                seen.formUnion(outcome.seen)
            }
            #expect(seen.isSubset(of: Set(versions.map { "com.example.Played\($0)" })))
            #expect(seen.contains("com.example.Played12"))
            #expect(manager.containers.count == 1)
        }
    }
}
