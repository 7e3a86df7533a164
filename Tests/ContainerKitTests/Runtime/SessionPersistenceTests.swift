import ContainerKitTesting
import Foundation
import Synchronization
import Testing

@testable import ContainerKit

/// ``SessionStore`` over a ``SessionPersistence``: loads on a miss, saves of changed sessions with versions
/// that fence a stale owner, and ``FileSessionPersistence``'s files.
struct SessionPersistenceTests {
    static func directory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("session-log-\(UUID().uuidString)").path
    }

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
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let before = try Self.store(FileSessionPersistence(directory: directory))
        let ada = try await before.loadSession(for: "ada")
        await Self.tick(ada)
        await Self.tick(ada)
        before.didChange(ada)
        #expect(try await before.saveChanges() == 1)

        // Another process: a new persistence over the same files.
        let after = try Self.store(FileSessionPersistence(directory: directory))
        #expect(after.count == 0)
        let loaded = try await after.loadSession(for: "ada")
        #expect(loaded.snapshot() == ada.snapshot())
        #expect(after.statistics.loaded == 1)
        // A user who was never saved gets a new session.
        #expect(try await after.loadSession(for: "bob").snapshot().eventNumber == 0)
    }

    @Test func aStaleOwnersSaveIsRefusedAndItsCopyDropped() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let shared = FileSessionPersistence(directory: directory)
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
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let persistence = FileSessionPersistence(directory: directory)
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
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let persistence = FileSessionPersistence(directory: directory)
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
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try Self.store(FileSessionPersistence(directory: directory), maximumSessions: 1)
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
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock()
        let store = try Self.store(FileSessionPersistence(directory: directory), clock: clock)
        await Self.tick(try await store.loadSession(for: "ada"))
        try await store.saveChanges()
        clock.advance(by: .seconds(61))
        #expect(store.evictIdle() == 1)
        try await store.saveChanges()
        let persistence = FileSessionPersistence(directory: directory)
        #expect(try await persistence.load(userID: "ada") == nil)
        #expect(try await store.loadSession(for: "ada").snapshot().eventNumber == 0)
    }

    @Test func runSavesEveryIntervalAndWhatIsLeftWhenCancelled() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = ManualClock()
        let saves = AsyncStream<Int>.makeStream()
        let store = SessionStore(
            tagManager: try SessionStoreTests.manager(),
            configuration: .init(
                persistence: FileSessionPersistence(directory: directory, compactionCheckInterval: .seconds(3600)),
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
        task.cancel()
        try await task.value
        #expect(await saved.next() == 1)
        #expect(try await FileSessionPersistence(directory: directory).load(userID: "bob") != nil)
    }

    @Test func aTornLineFallsBackToTheUsersPreviousVersion() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let persistence = FileSessionPersistence(directory: directory)
        let one = SessionSnapshot(sessionID: "ada", eventNumber: 1)
        _ = try await persistence.save([.save(StoredSession(snapshot: one, version: 1))])
        let path = try #require(persistence.segmentPaths.last)
        let two = FileSessionPersistence.line(
            for: StoredSession(snapshot: SessionSnapshot(sessionID: "ada", eventNumber: 2), version: 2)
        )
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seekToEndOfFile()
        handle.write(Data(two.prefix(two.count - 5)))  // torn by a crash
        try handle.close()

        let reopened = FileSessionPersistence(directory: directory)
        #expect(try await reopened.load(userID: "ada") == StoredSession(snapshot: one, version: 1))
        #expect(reopened.skippedLines == 1)
        // A flipped byte inside a snapshot is caught by its checksum.
        var flipped = FileSessionPersistence.line(for: StoredSession(snapshot: one, version: 3))
        flipped[flipped.count - 10] ^= 0x01
        #expect(FileSessionPersistence.parse(flipped[...]) == nil)
    }

    /// A crash that cut an append just before its newline leaves a line that reads; compaction copied it
    /// without a newline, so it ran into the next line copied: both sessions were lost.
    @Test func aLastLineWithoutItsNewlineKeepsItsSessionAndTheNextThroughCompaction() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func stored(_ user: String) -> StoredSession {
            StoredSession(snapshot: SessionSnapshot(sessionID: user, eventNumber: 3), version: 1)
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let bob = FileSessionPersistence.line(for: stored("bob"))
        try Data(bob.dropLast()).write(to: URL(fileURLWithPath: directory + "/000000000001.sessions"))
        try Data(FileSessionPersistence.line(for: stored("cy")))
            .write(to: URL(fileURLWithPath: directory + "/000000000002.sessions"))

        let persistence = FileSessionPersistence(directory: directory)
        #expect(try await persistence.load(userID: "bob") == stored("bob"))
        try persistence.compact()
        for reader in [persistence, FileSessionPersistence(directory: directory)] {
            #expect(try await reader.load(userID: "bob") == stored("bob"))
            #expect(try await reader.load(userID: "cy") == stored("cy"))
        }
        #expect(FileSessionPersistence(directory: directory).skippedLines == 0)
    }

    @Test func aSaveWithASupersededChangeKeepsEveryOtherLineWhereTheIndexSaysItIs() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let persistence = FileSessionPersistence(directory: directory)
        func stored(_ user: String, _ events: Int, version: Int64) -> StoredSession {
            StoredSession(
                snapshot: SessionSnapshot(sessionID: user, model: ["n": .int(Int64(events))], eventNumber: events),
                version: version
            )
        }
        _ = try await persistence.save([.save(stored("bob", 1, version: 5))])
        let result = try await persistence.save([
            .save(stored("ada", 2, version: 1)),
            .save(stored("bob", 3, version: 4)),  // older than the stored 5: superseded, not written
            .save(stored("cy", 4, version: 1)),
            .remove(userID: "dee", version: 1),  // never stored: nothing to remove
            .save(stored("eve", 5, version: 2)),
        ])
        #expect(result.superseded == ["bob"])
        for reader in [persistence, FileSessionPersistence(directory: directory)] {
            #expect(try await reader.load(userID: "ada") == stored("ada", 2, version: 1))
            #expect(try await reader.load(userID: "bob") == stored("bob", 1, version: 5))
            #expect(try await reader.load(userID: "cy") == stored("cy", 4, version: 1))
            #expect(try await reader.load(userID: "dee") == nil)
            #expect(try await reader.load(userID: "eve") == stored("eve", 5, version: 2))
        }
        #expect(FileSessionPersistence(directory: directory).skippedLines == 0)
    }

    @Test func aSessionLineFramesTheSnapshotsJSONWithAChecksumOfTheWholeLine() throws {
        let snapshot = SessionSnapshot(sessionID: "a\"da\n", eventNumber: 7)
        let line = FileSessionPersistence.line(for: StoredSession(snapshot: snapshot, version: 12), time: 1_795_000_000)
        let json = String(decoding: JSONWriter.bytes(snapshot.jsonValue, keepsNumberTypes: true), as: UTF8.self)
        let head = #"{"v":12,"u":"a\"da\n","t":1795000000,"k":""#
        let tail = #"","s":"# + json + "}"
        let sum = String(FileSessionPersistence.checksum(Array((head + tail).utf8)[...]), radix: 16)
        let checksum = String(repeating: "0", count: 16 - sum.count) + sum
        #expect(String(decoding: line, as: UTF8.self) == head + checksum + tail + "\n")
        let parsed = try #require(FileSessionPersistence.parse(line[...]))
        #expect(parsed.version == 12 && parsed.userID == "a\"da\n" && parsed.time == 1_795_000_000)
    }

    /// One changed byte in the version or the user ID (not only the snapshot) makes the line unreadable:
    /// it can never hand one user another user's session.
    @Test func aChangedByteAnywhereInALineMakesItUnreadable() throws {
        let snapshot = SessionSnapshot(sessionID: "ada", model: ["plan": "pro"], eventNumber: 3)
        let line = FileSessionPersistence.line(for: StoredSession(snapshot: snapshot, version: 4), time: 99)
        #expect(FileSessionPersistence.parse(line[...]) != nil)
        for index in line.indices.dropLast() {
            var changed = line
            changed[index] ^= 0x01
            if let parsed = FileSessionPersistence.parse(changed[...]) {
                Issue.record("byte \(index) changed and the line still reads as \(parsed.userID) v\(parsed.version)")
            }
        }
        var removal = JSONByteWriter(capacity: 64)
        FileSessionPersistence.writeRemovalLine(userID: "bob", version: 5, time: 99, to: &removal)
        var changed = removal.bytes
        changed[10] ^= 0x01  // inside the user ID
        #expect(FileSessionPersistence.parse(removal.bytes[...])?.userID == "bob")
        #expect(FileSessionPersistence.parse(changed[...]) == nil)
    }

    /// Lines written before the whole-line checksum are still read (an upgrade loses nothing), but a snapshot
    /// that names another user than its line is not handed out.
    @Test func linesOfTheEarlierFormatAreStillRead() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        func oldLine(_ user: String, snapshotOf owner: String, version: Int) -> String {
            let json = JSONWriter.bytes(
                SessionSnapshot(sessionID: owner, model: ["plan": "pro"], eventNumber: version).jsonValue,
                keepsNumberTypes: true
            )
            let sum = String(FileSessionPersistence.checksum(json[...]), radix: 16)
            let checksum = String(repeating: "0", count: 16 - sum.count) + sum
            return #"{"v":\#(version),"u":"\#(user)","c":"\#(checksum)","s":"# + String(decoding: json, as: UTF8.self)
                + "}\n"
        }
        let text =
            oldLine("ada", snapshotOf: "ada", version: 2) + #"{"v":3,"u":"bob","r":1}"# + "\n"
            + oldLine("eve", snapshotOf: "mallory", version: 1)
        try text.write(toFile: directory + "/000000000001.sessions", atomically: false, encoding: .utf8)
        let persistence = FileSessionPersistence(directory: directory)
        #expect(try await persistence.load(userID: "ada")?.snapshot.model["plan"] == "pro")
        #expect(try await persistence.load(userID: "ada")?.version == 2)
        #expect(try await persistence.load(userID: "bob") == nil)
        #expect(try await persistence.endedVersion(userID: "bob") == 3)
        await #expect(throws: ContainerError.self) { try await persistence.load(userID: "eve") }
    }

    @Test func theContractHoldsForTheFileLog() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try await SessionPersistenceConformance(
            make: { FileSessionPersistence(directory: directory) },
            reopen: { FileSessionPersistence(directory: directory) }
        ).checkAll()
    }

    @Test func theContractHoldsInMemory() async throws {
        let persistence = InMemorySessionPersistence()
        try await SessionPersistenceConformance(make: { persistence }, reopen: { persistence }).checkAll()
    }

    /// A save cut short by a full disk is cut off the file: the next, acknowledged save reads after a crash.
    @Test func aSaveCutShortByAFullDiskDoesNotSwallowTheNextOne() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let full = Mutex(true)
        let persistence = FileSessionPersistence(
            directory: directory,
            lifetime: nil,
            now: { 1_000 },
            appendFault: { count in full.withLock { $0 } ? count / 2 : nil }
        )
        let one = StoredSession(snapshot: SessionSnapshot(sessionID: "ada", eventNumber: 1), version: 1)
        await #expect(throws: ContainerError.self) { try await persistence.save([.save(one)]) }
        full.withLock { $0 = false }
        let two = StoredSession(snapshot: SessionSnapshot(sessionID: "ada", eventNumber: 2), version: 2)
        #expect(try await persistence.save([.save(two)]).superseded.isEmpty)
        // kill -9: nothing is closed, a new process reads the files.
        let reopened = FileSessionPersistence(directory: directory)
        #expect(try await reopened.load(userID: "ada") == two)
        #expect(reopened.skippedLines == 0)
    }

    /// A FIFO, a directory or a number out of range under a segment's name is left alone and counted; the
    /// sessions in the real segments load.
    @Test func oddFilesNamedLikeSegmentsAreIgnored() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let persistence = FileSessionPersistence(directory: directory)
        let ada = StoredSession(snapshot: SessionSnapshot(sessionID: "ada", eventNumber: 1), version: 1)
        _ = try await persistence.save([.save(ada)])
        #expect(mkfifo(directory + "/000000000900.sessions", 0o600) == 0)
        try FileManager.default.createDirectory(
            atPath: directory + "/000000000901.sessions",
            withIntermediateDirectories: false
        )
        try Data().write(to: URL(fileURLWithPath: directory + "/9223372036854775807.sessions"))
        try Data().write(to: URL(fileURLWithPath: directory + "/7.sessions"))
        let reopened = FileSessionPersistence(directory: directory)
        #expect(try await reopened.load(userID: "ada") == ada)
        #expect(reopened.ignoredFiles == 4)
        let bob = StoredSession(snapshot: SessionSnapshot(sessionID: "bob", eventNumber: 1), version: 1)
        #expect(try await reopened.save([.save(bob)]).superseded.isEmpty)
    }

    /// Compaction replaces the oldest closed segment with the copies and deletes the others oldest first:
    /// whatever step a crash stops it at, an ended session stays ended and the live ones keep their newest
    /// version.
    @Test func aCrashAtAnyStepOfCompactionBringsNoEndedSessionBack() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func stored(_ user: String, _ version: Int64) -> StoredSession {
            StoredSession(snapshot: SessionSnapshot(sessionID: user, eventNumber: Int(version)), version: version)
        }
        // Three segments: bob's save, then (after a compaction made its copy the oldest) his removal.
        var persistence = FileSessionPersistence(directory: directory)
        _ = try await persistence.save([.save(stored("bob", 1)), .save(stored("ada", 1))])
        try persistence.compact()
        persistence = FileSessionPersistence(directory: directory)
        _ = try await persistence.save([.save(stored("ada", 2)), .remove(userID: "bob", version: 1)])
        persistence = FileSessionPersistence(directory: directory)
        _ = try await persistence.save([.save(stored("cy", 1))])
        let before = try Self.files(in: directory)
        try persistence.compact()
        let after = try Self.files(in: directory)
        let closed = before.keys.sorted().filter { after[$0] != before[$0] || after[$0] == nil }
        let target = try #require(closed.first)
        #expect(after[target] != nil, "the copies replace the oldest closed segment")
        // The states a crash can leave: the copies in place and any oldest-first prefix of the rest deleted.
        for deleted in 0..<closed.count {
            try FileManager.default.removeItem(atPath: directory)
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var files = before
            files[target] = after[target]
            for name in closed.dropFirst().prefix(deleted) { files[name] = nil }
            for (name, bytes) in files { try bytes.write(to: URL(fileURLWithPath: directory + "/" + name)) }
            let reopened = FileSessionPersistence(directory: directory)
            #expect(try await reopened.load(userID: "bob") == nil, "bob came back after \(deleted) deletions")
            #expect(try await reopened.load(userID: "ada") == stored("ada", 2))
            #expect(try await reopened.load(userID: "cy") == stored("cy", 1))
        }
    }

    static func files(in directory: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) where name.hasSuffix(".sessions") {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name))
        }
        return files
    }

    /// With a lifetime (the store's idle timeout), a stored session nobody saved for that long no longer
    /// loads, compaction forgets it, and the user's new session is saved above its version.
    @Test func storedSessionsExpireAfterTheirLifetime() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let clock = Mutex<Int64>(1_000)
        let persistence = FileSessionPersistence(
            directory: directory,
            segmentBytes: 4096,
            lifetime: .seconds(1800),
            now: { clock.withLock { $0 } }
        )
        let ada = StoredSession(snapshot: SessionSnapshot(sessionID: "ada", eventNumber: 1), version: 3)
        _ = try await persistence.save([.save(ada)])
        clock.withLock { $0 += 1799 }
        #expect(try await persistence.load(userID: "ada") == ada)
        clock.withLock { $0 += 2 }
        #expect(try await persistence.load(userID: "ada") == nil)
        #expect(persistence.count == 0)
        #expect(try await persistence.endedVersion(userID: "ada") == 3)
        let bob = StoredSession(snapshot: SessionSnapshot(sessionID: "bob", eventNumber: 1), version: 1)
        _ = try await persistence.save([.save(bob)])
        try persistence.compact()
        #expect(try await persistence.endedVersion(userID: "ada") == 0, "compaction forgot the expired session")
        #expect(try await persistence.load(userID: "bob") == bob)
        #expect(
            try Self.files(in: directory).values.allSatisfy { !String(decoding: $0, as: UTF8.self).contains("\"ada\"") }
        )
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

    @Test func filesArePrivateAndCompactionKeepsTheNewestVersions() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let persistence = FileSessionPersistence(directory: directory, segmentBytes: 4096)
        for version in 1...20 {
            let changes = (0..<10).map { user in
                SessionChange.save(
                    StoredSession(
                        snapshot: SessionSnapshot(sessionID: "u\(user)", eventNumber: version),
                        version: Int64(version)
                    )
                )
            }
            _ = try await persistence.save(changes)
        }
        _ = try await persistence.save([.remove(userID: "u9", version: 20)])
        let before = persistence.segmentPaths.count
        #expect(before > 2)
        try persistence.compact()
        #expect(persistence.segmentPaths.count < before)
        for reader in [persistence, FileSessionPersistence(directory: directory)] {
            for user in 0..<9 {
                #expect(try await reader.load(userID: "u\(user)")?.snapshot.eventNumber == 20)
            }
            #expect(try await reader.load(userID: "u9") == nil)
        }
        let mode = { (path: String) in try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        }
        #expect(try mode(directory) == 0o700)
        for path in persistence.segmentPaths { #expect(try mode(path) == 0o600) }
    }

    @Test func canonicallyEquivalentUserIDsAreTwoStoredSessions() async throws {
        let directory = Self.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let persistence = FileSessionPersistence(directory: directory)
        _ = try await persistence.save([
            .save(StoredSession(snapshot: SessionSnapshot(sessionID: "caf\u{E9}", eventNumber: 1), version: 1)),
            .save(StoredSession(snapshot: SessionSnapshot(sessionID: "cafe\u{301}", eventNumber: 2), version: 1)),
        ])
        let reopened = FileSessionPersistence(directory: directory)
        #expect(try await reopened.load(userID: "caf\u{E9}")?.snapshot.eventNumber == 1)
        #expect(try await reopened.load(userID: "cafe\u{301}")?.snapshot.eventNumber == 2)
        #expect(reopened.count == 2)
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
