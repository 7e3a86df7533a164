import ContainerKitTesting
import Foundation
import Glibc
import TestSupport
import Testing

@testable import ContainerKit

extension LifecycleTests {
    /// Real files in a temporary directory, checked on a manual clock: each `tick()` lets exactly one check
    /// run, so nothing sleeps or polls.
    @Suite struct ContainerFileWatcherTests {
        let id = Fixtures.containerID
        let clock = ManualClock()
        let runner = Runner()
        let logger = InMemoryLogger()
        let callbacks = CallbackRecorder()
        let directory: String
        let path: String

        init() throws {
            directory = temporaryDirectory()
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            path = directory + "/\(Fixtures.containerID).json"
        }

        func manager() -> TagManager {
            TagManager(logger: logger, lifecycle: .testing(clock: clock))
        }

        /// Writes `bytes` over the file in place (truncating it), as a plain `>` redirect does.
        func writeInPlace(_ bytes: [UInt8]) throws {
            try Data(bytes).write(to: URL(fileURLWithPath: path))
        }

        /// Writes `bytes` to a temporary file and renames it over the file, as editors and deploys do.
        func replaceByRename(_ bytes: [UInt8]) throws {
            let temporary = path + ".tmp"
            try Data(bytes).write(to: URL(fileURLWithPath: temporary))
            #expect(rename(temporary, path) == 0)
        }

        /// Lets the running watch make one check: advances past its wait and returns once it waits again.
        func tick(_ interval: Duration = .seconds(2)) async {
            await clock.waitForSleepers(1)
            clock.advance(by: interval)
            await clock.waitForSleepers(1)
        }

        /// A manager running with a watch of the file, which holds version 1.
        func watching() async throws -> (TagManager, ContainerFileWatcher) {
            try writeInPlace(Fixtures.live(version: "1"))
            let manager = await runner.run(manager())
            let watcher = try await manager.watch(path: path, callback: callbacks)
            await clock.waitForSleepers(1)
            return (manager, watcher)
        }

        @Test func watchLoadsTheFileAndMakesItLive() async throws {
            try writeInPlace(Fixtures.live(version: "1"))
            let manager = manager()
            let watcher = try await manager.watch(path: path, callback: callbacks)
            #expect(manager.liveVersion() == "1")
            #expect(watcher.container?.version == "1")
            #expect(watcher.lastError == nil)
            #expect(callbacks.events == [.began(.file), .succeeded(.file)])
            let loaded = try #require(logger.entries.first { $0.message == "loaded the container file" })
            #expect(loaded.metadata["container"] == id && loaded.metadata["path"] == path)
            #expect(loaded.metadata["version"] != nil)
        }

        @Test func aFileThatDoesNotLoadAtTheStartThrowsAndNothingGoesLive() async throws {
            try writeInPlace(Array("{\"resource\": ".utf8))
            let manager = manager()
            await #expect(throws: ContainerFetchError.self) { try await manager.watch(path: path) }
            #expect(manager.container(id: id) == nil)
            await #expect(throws: ContainerFetchError.self) { try await manager.watch(path: directory + "/none.json") }
        }

        @Test func aFileReplacedByRenameGoesLiveAtTheNextCheck() async throws {
            let (manager, watcher) = try await watching()
            try replaceByRename(Fixtures.live(version: "2"))
            #expect(manager.liveVersion() == "1")
            await tick()
            #expect(manager.liveVersion() == "2")
            #expect(watcher.container?.version == "2")
            #expect(callbacks.events.suffix(2) == [.began(.file), .succeeded(.file)])
        }

        @Test func aFileRewrittenInPlaceGoesLiveAtTheNextCheck() async throws {
            let (manager, _) = try await watching()
            try writeInPlace(Fixtures.live(version: "2"))  // same size, maybe the same modification time
            await tick()
            #expect(manager.liveVersion() == "2")
        }

        @Test func aHalfWrittenFileKeepsTheLiveVersionIsReportedOnceAndLoadsWhenComplete() async throws {
            let (manager, watcher) = try await watching()
            let full = Fixtures.live(version: "2")
            try writeInPlace(Array(full.prefix(full.count / 2)))
            await tick()
            #expect(manager.liveVersion() == "1")
            #expect(watcher.lastError?.code == .invalidContainer)
            #expect(callbacks.events.suffix(2) == [.began(.file), .failed(.file, .serverError)])
            let warning = try #require(logger.entries.last { $0.level == .warning })
            // A constant message; what it is about is in the metadata.
            #expect(warning.message == "the container file does not load; the current version stays live")
            #expect(warning.metadata["container"] == id && warning.metadata["path"] == path)
            #expect(warning.metadata["code"] == "invalid_container")
            #expect(warning.metadata["error"]?.contains("'\(path)' does not load") == true)

            let events = callbacks.events.count
            await tick()
            #expect(callbacks.events.count == events)  // the same broken content is not reported again
            #expect(logger.messages(at: .warning).count == 1)

            try writeInPlace(full)
            await tick()
            #expect(manager.liveVersion() == "2")
            #expect(watcher.lastError == nil)
        }

        @Test func aDeletedFileKeepsTheLiveVersionAndARecreatedOneGoesLive() async throws {
            let (manager, watcher) = try await watching()
            try FileManager.default.removeItem(atPath: path)
            await tick()
            #expect(manager.liveVersion() == "1")
            #expect(watcher.lastError?.code == .notFound)
            let warnings = logger.entries.filter { $0.level == .warning }
            #expect(warnings.map(\.message) == ["the container file does not load; the current version stays live"])
            #expect(warnings.first?.metadata["error"] == "the container file '\(path)' is missing")
            await tick()
            #expect(logger.messages(at: .warning).count == 1)

            try writeInPlace(Fixtures.live(version: "3"))
            await tick()
            #expect(manager.liveVersion() == "3")
            #expect(watcher.lastError == nil)
        }

        @Test func aFileRestoredToTheLiveContentClearsTheErrorWithoutReloading() async throws {
            let (manager, watcher) = try await watching()
            try replaceByRename(Array("not a container".utf8))
            await tick()
            #expect(watcher.lastError != nil)
            try replaceByRename(Fixtures.live(version: "1"))
            await tick()
            #expect(watcher.lastError == nil)
            #expect(manager.liveVersion() == "1")
            #expect(callbacks.events.count { $0 == .began(.file) } == 2)  // the first load and the broken one
        }

        @Test func anUnchangedFileIsNotReadAgain() async throws {
            try writeInPlace(Fixtures.live(version: "1"))
            let old = Date(timeIntervalSinceNow: -3600)  // long before the read: no second write can hide
            try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: path)
            let manager = manager()
            let watcher = ContainerFileWatcher(path: path, tagManager: manager)
            #expect(watcher.reads == 0)  // the initializer reads nothing
            #expect(try await watcher.check())
            #expect(watcher.reads == 1)
            #expect(manager.liveVersion() == "1")
            for _ in 0..<3 { #expect(try await watcher.check() == false) }
            #expect(watcher.reads == 1)
        }

        @Test func aFileThatNowHoldsAnotherContainerIsRefused() async throws {
            try writeInPlace(Fixtures.live(version: "1"))
            let manager = manager()
            await #expect(throws: ContainerFetchError.self) {
                try await manager.watch(path: path, containerID: "GTM-OTHER1")
            }
            #expect(manager.containers.isEmpty)
        }

        @Test func runChecksOnTheClockAndReturnsWhenCancelled() async throws {
            try writeInPlace(Fixtures.live(version: "1"))
            let manager = manager()
            let watcher = ContainerFileWatcher(path: path, tagManager: manager, interval: .seconds(30))
            #expect(manager.container(id: id) == nil)  // nothing starts in the initializer
            let task = Task { try await watcher.run() }
            await clock.waitForSleepers(1)
            #expect(manager.liveVersion() == "1")  // the first check is at once
            #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .seconds(30))])
            try replaceByRename(Fixtures.live(version: "2"))
            await tick(.seconds(30))
            #expect(manager.liveVersion() == "2")
            task.cancel()
            try await task.value
            #expect(clock.sleeperCount == 0)
        }
    }
}
