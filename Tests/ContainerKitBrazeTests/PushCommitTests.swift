import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// A push committed as one unit by the library: the records of every tag it fired and the session's change,
/// in one append inside the session's turn (``SessionStore/Configuration/committer``, ``RecordCommitter``,
/// ``CommitSink``).
@Suite struct PushCommitTests {
    /// A front that records each append and resolves its tickets as the test says (durable by default).
    final class RecordingFront: AnalyticsSink, DurabilitySource {
        struct Append: Sendable {
            var records: [AnalyticsRecord]
            var sessions: [SessionCheckpoint]
        }

        /// The state of `user` after every checkpoint appended so far, on top of `base`.
        func state(of user: String, from base: StoredSession? = nil) -> SessionSnapshot? {
            var fold = SessionFold()
            if let base { fold.apply(snapshot: base.snapshot, version: base.version) }
            for checkpoint in appends.withLock({ $0 }).flatMap(\.sessions)
            where checkpoint.userID == user && checkpoint.version > base?.version ?? 0 {
                fold.apply(checkpoint)
            }
            return fold.unapplied == 0 ? fold.stored?.snapshot : nil
        }
        let appends = Mutex<[Append]>([])
        /// The failure of the next waits, once each (`nil`: durable).
        let failures = Mutex<[DurabilityError]>([])

        func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
            try enqueue(EncodedRecords(records))
        }

        func enqueue(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken? {
            let ticket = appends.withLock { appends in
                appends.append(Append(records: encoded.records, sessions: encoded.sessions))
                return UInt64(appends.count)
            }
            return DurabilityToken(source: self, ticket: ticket)
        }

        func waitUntilDurable(ticket: UInt64) async throws(DurabilityError) {
            if let failure = failures.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { throw failure }
        }
    }

    static func store(committer: RecordCommitter, persistence: (any SessionPersistence)? = nil) async throws
        -> SessionStore
    {
        let manager = TagManager(logger: InMemoryLogger())
        BrazeTagProvider(sink: CommitSink()).register(on: manager)
        manager.add(
            try await ContainerLoader().load(
                path: Fixtures.packageRoot.appendingPathComponent("Containers/GTM-MUSIC01.json").path
            )
        )
        return SessionStore(
            tagManager: manager,
            configuration: .init(persistence: persistence ?? InMemorySessionPersistence(), committer: committer)
        )
    }

    static func nameUser(_ session: DataLayer) {
        if BrazeTagProvider.user(of: session) == nil {
            BrazeTagProvider.setUser(.externalID(session.sessionID), on: session)
        }
    }

    @Test func aPushsRecordsAndItsSessionAreOneAppend() async throws {
        let front = RecordingFront()
        let sessions = try await Self.store(committer: RecordCommitter(front, keepsSessions: true))
        let first = try await sessions.push(
            event: "played song",
            parameters: ["title": "So What", "genre": "jazz", "duration": 545],
            for: "ada",
            prepare: Self.nameUser
        )
        let records = first.outputs.flatMap(\.records).compactMap { $0 as? AnalyticsRecord }
        #expect(records.count == 1)
        // A push that fires no tag still commits the session's change.
        try await sessions.push(
            event: "played song",
            parameters: ["genre": "rock", "duration": 12],
            for: "ada",
            prepare: Self.nameUser
        )
        let appends = front.appends.withLock { $0 }
        #expect(appends.count == 2, "one append per push")
        #expect(appends[0].records.map(\.id) == records.map(\.id))
        #expect(appends[1].records.isEmpty)
        #expect(appends.map { $0.sessions.map(\.version) } == [[1], [2]])
        #expect(appends.map { $0.sessions.first?.isDelta } == [true, true], "from the empty state, then on")
        #expect(front.state(of: "ada")?.model["genre"] == "rock")
        #expect(front.state(of: "ada") == sessions.existingSession(for: "ada")?.snapshot())
    }

    /// A new session's first commit is what its push changed, from the empty state, with what the session began
    /// with (the client context, the Braze user's attribute): not the whole snapshot. Folded on its own it is the
    /// session's state.
    @Test func aNewSessionsFirstCommitIsADeltaThatRebuildsItsState() async throws {
        let front = RecordingFront()
        let sessions = try await Self.store(committer: RecordCommitter(front, keepsSessions: true))
        let context = ClientContext(language: "de-CH", appName: "Jukebox")
        try await sessions.push(
            event: "played song",
            parameters: ["title": "So What", "genre": "jazz", "duration": 545],
            for: "ida",
            context: context,
            prepare: Self.nameUser
        )
        let checkpoint = try #require(front.appends.withLock { $0 }.first?.sessions.first)
        guard case .delta(let delta) = checkpoint.content else {
            Issue.record("the first commit is \(checkpoint.content), not a delta")
            return
        }
        #expect(checkpoint.version == 1 && checkpoint.expected == 0 && checkpoint.parent == 0)
        #expect(delta.context == context)
        let state = try #require(sessions.existingSession(for: "ida")?.snapshot())
        #expect(delta.jsonText.utf8.count < state.jsonText.utf8.count)
        #expect(front.state(of: "ida") == state)
    }

    /// The commit happens inside the session's turn: concurrent pushes of one user append in the order they
    /// ran, each with the next version and the state its push produced.
    @Test func concurrentPushesOfOneUserAppendInTurnOrder() async throws {
        let front = RecordingFront()
        let sessions = try await Self.store(committer: RecordCommitter(front, keepsSessions: true))
        try await sessions.push(event: "login", for: "fay", prepare: Self.nameUser)
        await withTaskGroup(of: Void.self) { group in
            for index in 1...20 {
                group.addTask {
                    _ = try? await sessions.push(
                        event: "played song",
                        parameters: ["n": .int(Int64(index)), "duration": 545],
                        for: "fay"
                    )
                }
            }
        }
        let appends = front.appends.withLock { $0 }
        #expect(appends.count == 21)
        #expect(appends.compactMap { $0.sessions.first?.version } == Array(1...21).map(Int64.init))
        // Each append's checkpoint holds its own push: the event counter counts up with the versions.
        #expect(appends.compactMap { $0.sessions.first?.eventNumber } == Array(1...21))
        #expect(front.state(of: "fay") == sessions.existingSession(for: "fay")?.snapshot())
    }

    /// A commit refused because another instance stored a newer version drops the stale session, loads the
    /// newest and pushes again: the caller sees one successful push.
    @Test func aFencedCommitIsPushedAgainOnTheNewestSession() async throws {
        let front = RecordingFront()
        let persistence = InMemorySessionPersistence()
        let sessions = try await Self.store(
            committer: RecordCommitter(front, keepsSessions: true),
            persistence: persistence
        )
        try await sessions.push(event: "login", for: "bob", prepare: Self.nameUser)
        // Another instance served bob meanwhile and stored version 5.
        let elsewhere = SessionSnapshot(sessionID: "bob", model: ["plan": "gold"], eventNumber: 9)
        _ = try await persistence.save([.save(StoredSession(snapshot: elsewhere, version: 5))])
        front.failures.withLock { $0 = [DurabilityError(.superseded, "a newer version is stored")] }
        let result = try await sessions.push(
            event: "played song",
            parameters: ["genre": "jazz", "duration": 545],
            for: "bob",
            prepare: Self.nameUser
        )
        #expect(!result.fired.isEmpty)
        let appends = front.appends.withLock { $0 }
        #expect(appends.count == 3)
        #expect(appends[2].sessions.first?.version == 6, "pushed again above the stored version")
        let state = front.state(of: "bob", from: StoredSession(snapshot: elsewhere, version: 5))
        #expect(state?.model["plan"] == "gold", "on the newest session")
        #expect(state?.model["genre"] == "jazz")
    }

    /// A batch pushes every event, then waits once; the events of a user whose commit was fenced are pushed
    /// again, in order, on the newest session, and every outcome is a success.
    @Test func aBatchPushesAllThenWaitsAndPushesFencedEventsAgainInOrder() async throws {
        let front = RecordingFront()
        let persistence = InMemorySessionPersistence()
        let sessions = try await Self.store(
            committer: RecordCommitter(front, keepsSessions: true),
            persistence: persistence
        )
        try await sessions.push(event: "login", for: "gil", prepare: Self.nameUser)
        _ = try await persistence.save([
            .save(StoredSession(snapshot: SessionSnapshot(sessionID: "gil", model: ["plan": "gold"]), version: 7))
        ])
        // gil's two events are refused (the store holds version 7); hal's is kept.
        front.failures.withLock { $0 = [DurabilityError(.superseded, "newer"), DurabilityError(.superseded, "newer")] }
        let requests = [
            SessionStore.PushRequest(event: "played song", parameters: ["n": 1, "duration": 545], userID: "gil"),
            SessionStore.PushRequest(event: "played song", parameters: ["n": 2, "duration": 545], userID: "gil"),
        ]
        let outcomes = await sessions.push(requests, prepare: Self.nameUser)
        let results = try outcomes.map { try $0.get() }
        #expect(results.count == 2)
        let appends = front.appends.withLock { $0 }
        #expect(appends.count == 5, "login, two fenced, two pushed again")
        #expect(appends.suffix(2).compactMap { $0.sessions.first?.version } == [8, 9])
        let state = front.state(
            of: "gil",
            from: StoredSession(snapshot: SessionSnapshot(sessionID: "gil", model: ["plan": "gold"]), version: 7)
        )
        #expect(state?.model["n"] == 2)
        #expect(state?.model["plan"] == "gold")
    }

    /// A store that keeps records only (a durable queue): the records are one append per push, and the
    /// session is saved by the persistence.
    @Test func aRecordsOnlyFrontGetsOneAppendPerPushAndThePersistenceTheSession() async throws {
        let front = RecordingFront()
        let persistence = InMemorySessionPersistence()
        let sessions = try await Self.store(committer: RecordCommitter(front), persistence: persistence)
        try await sessions.push(
            event: "played song",
            parameters: ["title": "So What", "genre": "jazz", "duration": 545],
            for: "cy",
            prepare: Self.nameUser
        )
        #expect(front.appends.withLock { $0.count } == 1)
        #expect(front.appends.withLock { $0[0].sessions.isEmpty })
        #expect(try await sessions.saveChanges() == 1)
        #expect(try await persistence.load(userID: "cy")?.snapshot.model["genre"] == "jazz")
    }

    @Test func aCommitThatFailsIsNotAcknowledgedAndTheNextPushLoadsWhatIsStored() async throws {
        let front = RecordingFront()
        let sessions = try await Self.store(committer: RecordCommitter(front, keepsSessions: true))
        try await sessions.push(event: "login", for: "dee", prepare: Self.nameUser)
        let session = try #require(sessions.existingSession(for: "dee"))
        front.failures.withLock { $0 = [DurabilityError(.diskFull, "no space left")] }
        do {
            try await sessions.push(event: "played song", parameters: ["genre": "jazz"], for: "dee")
            Issue.record("expected the push not to be acknowledged")
        } catch {
            guard case .notDurable(let failure, _) = error else { throw error }
            #expect(failure.code == .diskFull)
        }
        #expect(sessions.existingSession(for: "dee") !== session, "the copy whose write failed was dropped")
    }

    @Test func recordsKeptForACommitThatNeverComesAreNotDurable() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        BrazeTagProvider(sink: CommitSink()).register(on: manager)
        manager.add(
            try await ContainerLoader().load(
                path: Fixtures.packageRoot.appendingPathComponent("Containers/GTM-MUSIC01.json").path
            )
        )
        let session = manager.makeDataLayer()
        BrazeTagProvider.setUser(.externalID("eve"), on: session)
        let result = await session.push(event: "played song", parameters: ["genre": "jazz", "duration": 545])
        #expect(!result.fired.isEmpty)
        let error = await #expect(throws: DurabilityError.self) { try await result.waitUntilDurable() }
        #expect(error?.code == .notRunning)
    }
}

extension SessionCheckpoint {
    /// The event counter the checkpoint carries.
    var eventNumber: Int {
        switch content {
        case .snapshot(let snapshot): snapshot.eventNumber
        case .delta(let delta): delta.eventNumber
        }
    }
}
