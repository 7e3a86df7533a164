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
        #expect(try SegmentRecordStore.pendingRecords(in: fixture.configuration.queueDirectory).isEmpty)
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
        // The first service committed ada's session with her event's records, in the queue's log; the second
        // loads it when she comes back, not at start.
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

    @Test func aTornLineInTheQueuesLogLosesOnlyThatChange() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        try await fixture.make().application.test(.router) { client in
            _ = try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada"))
        }
        let directory = fixture.configuration.queueDirectory
        let segments = try FileManager.default.contentsOfDirectory(atPath: directory).filter {
            $0.hasPrefix("segment-")
        }
        #expect(!segments.isEmpty)
        // A crash tore the last append: half of a session line of ada's.
        let handle = try #require(FileHandle(forWritingAtPath: directory + "/" + segments.sorted().last!))
        handle.seekToEndOfFile()
        handle.write(Data(#"{"session":"ada","v":9,"x":8,"k":"d","b":{"model"#.utf8))
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
        #expect(restarted.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 2)
    }

    /// `--sessions` names an earlier version's session files: they are imported into the queue once, at the
    /// first start, and a user's next event continues from the imported session. The marker written into the
    /// directory keeps later starts from reading the files again.
    @Test func anEarlierVersionsSessionFilesAreImportedOnceAtStart() async throws {
        // ada's session as an earlier version left it: one event, the once-per-load tag fired.
        let earlier = try TestService()
        defer { earlier.remove() }
        let first = try await earlier.make()
        try await first.application.test(.router) { client in
            _ = try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada"))
        }
        let snapshot = try #require(first.sessions.existingSession(for: "ada")).snapshot()
        let ada = StoredSession(snapshot: snapshot, version: 7)

        var fixture = try TestService()
        defer { fixture.remove() }
        let old = fixture.legacySessionsDirectory
        let now = Int64(Date().timeIntervalSince1970)
        let grace = StoredSession(snapshot: SessionSnapshot(sessionID: "grace", eventNumber: 5), version: 2)
        let gone = StoredSession(snapshot: SessionSnapshot(sessionID: "gone", eventNumber: 5), version: 1)
        try LegacySessionFileWriter.write(
            [
                LegacySessionFileWriter.line(for: ada, time: now - 60),
                LegacySessionFileWriter.line(for: grace, time: now - 7200),  // past --session-idle: expired
                LegacySessionFileWriter.line(for: gone, time: now - 60),
                LegacySessionFileWriter.removalLine(userID: "gone", version: 1, time: now - 30),
                Array(#"{"v":3,"u":"torn","t":1,"k":"00"#.utf8),
            ],
            segment: 1,
            in: old
        )
        fixture.configuration.sessionsDirectory = old
        fixture.configuration.sessionIdleTimeout = .seconds(3600)
        let service = try await fixture.make()
        let marker = try String(contentsOfFile: old + "/" + LegacySessionImport.markerName, encoding: .utf8)
        #expect(marker.contains(fixture.configuration.queueDirectory))
        #expect(marker.contains("1 sessions imported, 1 expired, 1 ended, 1 lines skipped"))
        try await service.application.test(.router) { client in
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada")) {
                response in
                let names = try response.json.firedNames
                #expect(names == ["Braze - played song"])
            }
            try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "grace")) {
                response in
                let names = try response.json.firedNames
                #expect(names == ["Braze - played song", "Braze - first play"])
            }
        }
        #expect(service.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 2)
        #expect(service.sessions.existingSession(for: "grace")?.snapshot().eventNumber == 1, "a new session")

        // A newer line in the old files is not read again: the marker is there, ada continues from the queue.
        let newer = StoredSession(snapshot: SessionSnapshot(sessionID: "ada", eventNumber: 40), version: 99)
        try LegacySessionFileWriter.write([LegacySessionFileWriter.line(for: newer, time: now)], segment: 2, in: old)
        let restarted = try await fixture.make()
        try await restarted.application.test(.router) { client in
            _ = try await client.execute(uri: "/v1/events", method: .post, headers: .json, body: eventBody(user: "ada"))
        }
        #expect(restarted.sessions.existingSession(for: "ada")?.snapshot().eventNumber == 3)
    }

    /// A watcher of `directory` that scans only when a test asks (its interval is an hour).
    static func watcher(of directory: String, loadingInto manager: TagManager) -> ContainerDirectoryWatcher {
        ContainerDirectoryWatcher(
            directory: directory,
            interval: .seconds(3600),
            manager: manager,
            logger: TestService.logger
        )
    }

    @Test func aChangedContainerFileIsReloaded() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let manager = TagManager(logger: InMemoryLogger())
        let watcher = Self.watcher(of: fixture.configuration.containersDirectory, loadingInto: manager)
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

    /// A Kubernetes ConfigMap mounted as the containers directory: each file is a symbolic link into `..data`, a
    /// link to a timestamped directory that an update replaces. Before, the links were skipped (not regular files),
    /// so no container loaded and the service never became ready.
    @Test func aConfigMapMountedDirectoryOfLinksLoadsAndAnUpdateSwapReloads() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let source = fixture.configuration.containersDirectory + "/\(TestService.fixtureID).json"
        let text = try String(contentsOfFile: source, encoding: .utf8)
        let mount = NSTemporaryDirectory() + "containerkit-configmap-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: mount) }
        let fileManager = FileManager.default
        try fileManager.createDirectory(atPath: mount + "/..2026_11_30_1", withIntermediateDirectories: true)
        try text.write(
            toFile: mount + "/..2026_11_30_1/\(TestService.fixtureID).json",
            atomically: true,
            encoding: .utf8
        )
        try fileManager.createSymbolicLink(atPath: mount + "/..data", withDestinationPath: "..2026_11_30_1")
        try fileManager.createSymbolicLink(
            atPath: mount + "/\(TestService.fixtureID).json",
            withDestinationPath: "..data/\(TestService.fixtureID).json"
        )
        let manager = TagManager(logger: InMemoryLogger())
        let watcher = Self.watcher(of: mount, loadingInto: manager)
        #expect(await watcher.scan() == 1)
        #expect(manager.container(id: TestService.fixtureID)?.version == "1")
        #expect(await watcher.scan() == 0)

        // The update: a new directory, then `..data` replaced by a rename (as the kubelet does). The new file has
        // the same size; its inode tells it apart.
        try fileManager.createDirectory(atPath: mount + "/..2026_11_30_2", withIntermediateDirectories: true)
        try text.replacingOccurrences(of: #""version": "1""#, with: #""version": "7""#)
            .write(toFile: mount + "/..2026_11_30_2/\(TestService.fixtureID).json", atomically: true, encoding: .utf8)
        try fileManager.createSymbolicLink(atPath: mount + "/..data_tmp", withDestinationPath: "..2026_11_30_2")
        #expect(rename(mount + "/..data_tmp", mount + "/..data") == 0)
        #expect(await watcher.scan() == 1)
        #expect(manager.container(id: TestService.fixtureID)?.version == "7")
    }

    @Test func aDirectoryThatCannotBeListedKeepsTheLiveContainers() async throws {
        let fixture = try TestService()
        defer { fixture.remove() }
        let manager = TagManager(logger: InMemoryLogger())
        let directory = fixture.configuration.containersDirectory
        let watcher = Self.watcher(of: directory, loadingInto: manager)
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
        let watcher = Self.watcher(of: fixture.configuration.containersDirectory, loadingInto: manager)
        await watcher.scan()
        let path = fixture.configuration.containersDirectory + "/\(TestService.fixtureID).json"
        try "{ not a container".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(await watcher.scan() == 0)
        #expect(manager.container(id: TestService.fixtureID)?.version == "1")
    }
}
