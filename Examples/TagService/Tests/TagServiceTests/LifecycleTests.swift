import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Hummingbird
import HummingbirdTesting
import Testing

@testable import TagServiceCore

@Suite struct LifecycleTests {
    @Test func gracefulShutdownDrainsEveryAcknowledgedRecord() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let service = try await fixture.make()
        let acknowledged = try await service.application.test(.live) { client in
            var count = 0
            for index in 0..<20 {
                try await client.execute(
                    uri: "/v1/events",
                    method: .post,
                    headers: .json,
                    body: eventBody(user: "user-\(index % 5)")
                ) {
                    response in
                    #expect(response.status == .ok)
                    count += try response.json.firedNames.count
                }
            }
            return count
        }
        // The test framework shut the service down gracefully: the queue is drained into the records file.
        #expect(acknowledged == 25)
        let delivered = try fixture.deliveredRecords()
        #expect(delivered.count == acknowledged)
        #expect(try DurableQueue.pendingRecords(in: fixture.configuration.queueDirectory).isEmpty)
    }

    @Test func aRestartRestoresSessionsSoAOncePerLoadTagDoesNotFireAgain() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                let answer = try response.json
                #expect(answer.firedNames == ["Braze - played song", "Braze - first play"])
            }
        }
        // The first service saved its sessions (at the latest at shutdown); the second loads ada's when she
        // comes back, not at start.
        let restarted = try await fixture.make()
        #expect(restarted.sessions.count == 0)
        try await restarted.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                let answer = try response.json
                #expect(answer.firedNames == ["Braze - played song"])
            }
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "grace")) {
                response in
                let answer = try response.json
                #expect(answer.firedNames == ["Braze - played song", "Braze - first play"])
            }
        }
        let delivered = try fixture.deliveredRecords()
        #expect(
            delivered.map(\.user) == [
                .externalID("ada"), .externalID("ada"), .externalID("ada"), .externalID("grace"), .externalID("grace"),
            ]
        )
    }

    @Test func aTornLineInTheSessionsLogLosesOnlyThatChange() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            _ = try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada"))
        }
        let directory = try #require(fixture.configuration.sessionsDirectory)
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory).filter {
            $0.hasSuffix(".sessions")
        }
        #expect(!segments.isEmpty)
        // A crash tore the last append: half a line.
        let handle = try #require(FileHandle(forWritingAtPath: directory + "/" + segments.sorted().last!))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"v":9,"u":"ada","c":"0000000000000000","s":{"form"#.utf8))
        try handle.close()
        let restarted = try await fixture.make()
        try await restarted.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                let names = try response.json.firedNames
                #expect(names == ["Braze - played song"])
            }
        }
        #expect(restarted.sessions.statistics.loaded == 1)
    }

    @Test func aChangedContainerFileIsReloaded() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let manager = TagManager(logger: InMemoryLogger())
        let watcher = ContainerDirectoryWatcher(
            directory: fixture.configuration.containersDirectory,
            interval: .seconds(3600),
            manager: manager,
            logger: TestService.logger
        )
        #expect(await watcher.scan() == 1)
        #expect(manager.container(id: TestService.fixtureID)?.version == "1")
        #expect(await watcher.scan() == 0)

        let path = fixture.configuration.containersDirectory + "/\(TestService.fixtureID).json"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try text.replacingOccurrences(of: #""version": "1""#, with: #""version": "12""#)
            .write(toFile: path, atomically: true, encoding: .utf8)
        #expect(await watcher.scan() == 1)
        #expect(manager.container(id: TestService.fixtureID)?.version == "12")
    }

    @Test func aDirectoryThatCannotBeListedKeepsTheLiveContainers() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let manager = TagManager(logger: InMemoryLogger())
        let directory = fixture.configuration.containersDirectory
        let watcher = ContainerDirectoryWatcher(
            directory: directory,
            interval: .seconds(3600),
            manager: manager,
            logger: TestService.logger
        )
        #expect(await watcher.scan() == 1)
        // The directory is gone for a moment (a redeploy's rename, a mount that drops): the listing fails.
        try FileManager.default.moveItem(atPath: directory, toPath: directory + ".away")
        #expect(await watcher.scan() == 0)
        #expect(manager.container(id: TestService.fixtureID) != nil)
        try FileManager.default.moveItem(atPath: directory + ".away", toPath: directory)
        #expect(await watcher.scan() == 0)
        #expect(manager.container(id: TestService.fixtureID)?.version == "1")
    }

    @Test func aBrokenContainerFileKeepsTheLiveVersion() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let manager = TagManager(logger: InMemoryLogger())
        let watcher = ContainerDirectoryWatcher(
            directory: fixture.configuration.containersDirectory,
            interval: .seconds(3600),
            manager: manager,
            logger: TestService.logger
        )
        await watcher.scan()
        let path = fixture.configuration.containersDirectory + "/\(TestService.fixtureID).json"
        try "{ not a container".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(await watcher.scan() == 0)
        #expect(manager.container(id: TestService.fixtureID)?.version == "1")
    }
}
