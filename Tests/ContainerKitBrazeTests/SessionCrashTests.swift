import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

#if canImport(Glibc)
    import Glibc
#endif

/// Real crashes of a service whose sessions live in the durable queue's log: the test binary starts itself as
/// a child that pushes a fixed stream of events for seven users (each push waits until its records and its
/// session delta are durable, then prints `acked <n>`), and `kill -9`s it mid-stream — between pushes, between
/// snapshots, during compactions of its small segments — four times. After each kill the parent loads every
/// user's session from the log and compares it with a single-process reference that pushed the same events:
/// every acknowledged push is there, at most the one push in flight is there too, and the states are equal.
/// Each restarted child continues from the state the log holds.
@Suite struct SessionCrashTests {
    static let directoryVariable = "CONTAINERKIT_SESSION_CRASH_DIRECTORY"
    static let startVariable = "CONTAINERKIT_SESSION_CRASH_START"
    static let users = 7

    static func queue(_ directory: String) throws -> DeliveryPipeline<SegmentRecordStore> {
        var storage = SegmentRecordStore.Options()
        storage.maximumSegmentBytes = 8 * 1024
        return try DeliveryPipeline.durable(
            directory: directory,
            destination: ScriptedDownstream(),
            settings: DeliverySettings(logger: InMemoryLogger()),
            storage: storage
        )
    }

    /// Push `n` of the stream.
    static func request(_ n: Int) -> SessionStore.PushRequest {
        DurableQueueSessionTests.push(n, users: users)
    }

    /// The child's side. In a normal test run (no directory in the environment) it does nothing.
    @Test func sessionCrashChildPushesUntilKilled() async throws {
        let environment = ProcessInfo.processInfo.environment
        guard let directory = environment[Self.directoryVariable] else { return }
        let start = Int(environment[Self.startVariable] ?? "0") ?? 0
        let queue = try Self.queue(directory)
        let sessions = DurableQueueSessionTests.store(
            queue,
            manager: try await DurableQueueSessionTests.manager(),
            snapshotInterval: 4
        )
        try await whileRunning(queue) {
            var n = start
            while true {
                let request = Self.request(n)
                try await sessions.push(
                    event: request.event,
                    parameters: request.parameters,
                    for: request.userID,
                    prepare: DurableQueueSessionTests.nameUser
                )
                FileHandle.standardOutput.write(Data("acked \(n)\n".utf8))
                n += 1
            }
        }
    }

    /// Runs a child from push `start`, kills it once it acknowledged `count` pushes; returns the acknowledged
    /// push numbers.
    static func runChild(directory: String, start: Int, count: Int) async throws -> [Int] {
        let (lines, termination) = try await runChildUntilKilled(
            filter: "sessionCrashChildPushesUntilKilled",
            environment: [directoryVariable: directory, startVariable: String(start)],
            killAfter: count,
            linesStartingWith: "acked "
        )
        #expect(termination == .uncaughtSignal)
        return lines.compactMap { line in line.hasPrefix("acked ") ? Int(line.dropFirst(6)) : nil }
    }

    /// The state a single process reaches pushing `pushes` (in order) for `user` (in memory: nothing is
    /// committed, so nothing is waited for).
    static func reference(_ user: String, pushes: [Int]) async throws -> SessionSnapshot {
        let store = SessionStore(tagManager: try await DurableQueueSessionTests.manager())
        for n in pushes {
            let request = Self.request(n)
            try await store.push(
                event: request.event,
                parameters: request.parameters,
                for: user,
                waitsForDurability: false,
                prepare: DurableQueueSessionTests.nameUser
            )
        }
        return store.existingSession(for: user)?.snapshot() ?? SessionSnapshot(sessionID: user)
    }

    @Test func everyUsersSessionContinuesExactlyAfterKills() async throws {
        let directory = TemporaryDirectory("session-crash")
        defer { directory.remove() }
        var applied = [String: [Int]]()
        var next = 0
        var inFlightKept = 0
        var files = 0
        for round in 0..<4 {
            let acknowledged = try await Self.runChild(directory: directory.path, start: next, count: 60 + 17 * round)
            #expect(
                acknowledged.count >= 60 + 17 * round,
                "round \(round): only \(acknowledged.count) pushes acknowledged"
            )
            #expect(acknowledged == Array(next..<(next + acknowledged.count)), "acknowledged in stream order")
            for n in acknowledged { applied[Self.request(n).userID, default: []].append(n) }
            // The push after the last acknowledged one may have been committed before the kill, or not.
            let inFlight = next + acknowledged.count
            let inFlightUser = Self.request(inFlight).userID
            let queue = try Self.queue(directory.path)
            for index in 0..<Self.users {
                let user = "user-\(index)"
                let loaded = try await queue.sessions.load(userID: user)
                let events = loaded?.snapshot.eventNumber ?? 0
                let acked = applied[user, default: []].count
                if user == inFlightUser && events == acked + 1 {
                    applied[user, default: []].append(inFlight)
                    inFlightKept += 1
                }
                #expect(
                    events == applied[user, default: []].count,
                    "round \(round): \(user) has \(events) events, \(acked) acknowledged"
                )
                let expected = try await Self.reference(user, pushes: applied[user, default: []])
                #expect(
                    loaded?.snapshot.jsonText == expected.jsonText,
                    "round \(round): \(user) differs from the single-process reference"
                )
            }
            #expect(queue.statistics.unappliedSessionLines == 0)
            files = try FileManager.default.contentsOfDirectory(atPath: directory.path).count
            next = inFlight + 1
        }
        print(
            "session_crash kills=4 pushes=\(applied.values.map(\.count).reduce(0, +)) in_flight_kept=\(inFlightKept) "
                + "files=\(files)"
        )
    }
}
