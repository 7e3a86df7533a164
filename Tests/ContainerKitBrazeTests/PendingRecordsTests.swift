import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// Records of Braze tags in a session without a user: held pending in the session (a session attribute),
/// released for the user in the push that names it, within bounds of count and age — or sent for a user alias.
@Suite struct PendingRecordsTests {
    /// A wall clock a test moves by hand.
    final class WallClock: Sendable {
        private let now: Mutex<Date>
        init(_ start: Date = Date(timeIntervalSince1970: 1_714_564_800)) { now = Mutex(start) }
        var date: Date { now.withLock { $0 } }
        func advance(by seconds: TimeInterval) { now.withLock { $0 = $0.addingTimeInterval(seconds) } }
        var read: @Sendable () -> Date { { self.date } }
    }

    /// `Containers/GTM-MUSIC01.json`: `played song` with a `duration` over 30 fires a Braze `logEvent`, `login`
    /// fires `changeUser` with the `user_id` parameter.
    static func manager(
        sink: any AnalyticsSink,
        clock: WallClock,
        configuration: BrazeTagProvider.Configuration = .init(),
        logger: InMemoryLogger = InMemoryLogger()
    ) async throws -> (TagManager, BrazeTagProvider) {
        let manager = TagManager(logger: logger)
        let provider = BrazeTagProvider(
            sink: sink,
            configuration: configuration,
            clock: clock.read,
            idGenerator: AnalyticsRecordIDGenerator(prefix: "r")
        )
        provider.register(on: manager)
        manager.add(
            try await ContainerLoader().load(
                path: Fixtures.packageRoot.appendingPathComponent("Containers/GTM-MUSIC01.json").path
            )
        )
        return (manager, provider)
    }

    static func played(_ title: String) -> ValueMap { ["title": .string(title), "genre": "jazz", "duration": 545] }

    static func eventNames(_ records: [AnalyticsRecord]) -> [String] {
        records.map { record in
            switch record.payload {
            case .customEvent(let name, let properties): return "\(name):\(properties["title"]?.jsString ?? "")"
            case .changeUser(let id, _): return "changeUser:\(id)"
            default: return record.kind.rawValue
            }
        }
    }

    @Test func aBrazeTagWithoutAUserIsPendingAndItsRecordWaitsInTheSession() async throws {
        let sink = InMemoryAnalyticsSink()
        let (manager, provider) = try await Self.manager(sink: sink, clock: WallClock())
        let session = manager.makeDataLayer(sessionID: "anon-1")
        let result = await session.push(event: "played song", parameters: Self.played("So What"))
        let tag = try #require(result.fired.first)
        #expect(tag.status.name == "pending")
        #expect(tag.status.message?.contains("until the session has a Braze user") == true)
        #expect(result.outputs.first?.pendingReason != nil)
        let sent = result.outputs.flatMap(\.records)
        #expect(sent.isEmpty, "nothing is sent yet")
        #expect(sink.records.isEmpty)
        let pending = BrazeTagProvider.pendingRecords(of: session)
        #expect(Self.eventNames(pending) == ["played song:So What"])
        #expect(pending.first?.user == nil)
        // The records are a session attribute: saved in snapshots and deltas like any attribute.
        guard case .array(let items)? = session.attribute(BrazeTagProvider.pendingAttributeKey) else {
            Issue.record("no pending attribute")
            return
        }
        #expect(items.count == 1)
        #expect(items.first?.objectValue?["name"] == "played song")
        #expect(provider.pendingStatistics == .init(held: 1))
        #expect(provider.pendingStatistics.pending == 1)
        // The push's JSON says so too.
        let json = try #require(result.jsonValue.objectValue)
        #expect(json["fired"]?.arrayValue?.first?.objectValue?["status"] == "pending")
        #expect(json["records"] == .array([]))
    }

    @Test func changeUserReleasesThePendingRecordsInThatPushInTheirOrderWithTheirTimes() async throws {
        let sink = InMemoryAnalyticsSink()
        let clock = WallClock()
        let (manager, provider) = try await Self.manager(sink: sink, clock: clock)
        let session = manager.makeDataLayer(sessionID: "anon-2")
        let start = clock.date
        await session.push(event: "played song", parameters: Self.played("So What"))
        clock.advance(by: 60)
        await session.push(event: "played song", parameters: Self.played("Blue in Green"))
        clock.advance(by: 60)
        let login = await session.push(event: "login", parameters: ["user_id": "ada"])

        #expect(login.fired.map(\.status) == [.ok])
        let released = login.hookOutputs.flatMap(\.records).compactMap { $0 as? AnalyticsRecord }
        #expect(Self.eventNames(released) == ["played song:So What", "played song:Blue in Green"])
        #expect(released.map(\.user) == [.externalID("ada"), .externalID("ada")])
        #expect(released.map(\.time) == [start, start.addingTimeInterval(60)], "their original times")
        #expect(released.map(\.id) == ["r-1", "r-2"], "their original IDs")
        // The push's records: its own change_user record, then the released ones.
        let json = try #require(login.jsonValue.objectValue)
        #expect(json["records"]?.arrayValue?.count == 3)
        #expect(
            Self.eventNames(sink.records) == ["changeUser:ada", "played song:So What", "played song:Blue in Green"]
        )
        #expect(BrazeTagProvider.pendingRecords(of: session).isEmpty)
        #expect(session.attribute(BrazeTagProvider.pendingAttributeKey) == nil, "no attribute once released")
        #expect(provider.pendingStatistics == .init(held: 2, released: 2))

        // A later changeUser to another user sends nothing again for the first one.
        await session.push(event: "login", parameters: ["user_id": "bea"])
        #expect(Self.eventNames(sink.records).suffix(1) == ["changeUser:bea"])
        #expect(
            sink.records.filter { $0.kind == .customEvent }.map(\.user) == [.externalID("ada"), .externalID("ada")]
        )
    }

    @Test func setUserBeforeAPushReleasesThemWithThatPushEvenWhenNoBrazeTagFires() async throws {
        let sink = InMemoryAnalyticsSink()
        let (manager, _) = try await Self.manager(sink: sink, clock: WallClock())
        let session = manager.makeDataLayer(sessionID: "anon-3")
        await session.push(event: "played song", parameters: Self.played("So What"))
        BrazeTagProvider.setUser(.brazeID("b-7"), on: session)
        #expect(sink.records.isEmpty, "between pushes the records stay pending")
        #expect(BrazeTagProvider.pendingRecords(of: session).count == 1)
        let next = await session.push(event: "nothing fires for this")
        #expect(next.fired.isEmpty)
        #expect(next.outputs.flatMap(\.records).count == 1)
        #expect(sink.records.map(\.user) == [.brazeID("b-7")])
        #expect(BrazeTagProvider.pendingRecords(of: session).isEmpty)
    }

    @Test func withACommitterTheReleasedRecordsAreInTheAppendOfThePushThatIdentifiedTheUser() async throws {
        let front = PushCommitTests.RecordingFront()
        let clock = WallClock()
        let (manager, _) = try await Self.manager(sink: CommitSink(), clock: clock)
        let sessions = SessionStore(
            tagManager: manager,
            configuration: .init(
                persistence: InMemorySessionPersistence(),
                committer: RecordCommitter(front, keepsSessions: true)
            )
        )
        try await sessions.push(event: "played song", parameters: Self.played("So What"), for: "device-1")
        clock.advance(by: 5)
        try await sessions.push(event: "played song", parameters: Self.played("Blue in Green"), for: "device-1")
        #expect(front.appends.withLock { $0.flatMap(\.records) }.isEmpty, "nothing sent while pending")
        // The pending records are part of the committed session state.
        let committed = try #require(front.state(of: "device-1"))
        guard case .array(let held)? = committed.attributes[BrazeTagProvider.pendingAttributeKey] else {
            Issue.record("the committed session holds no pending records")
            return
        }
        #expect(held.count == 2)

        let login = try await sessions.push(event: "login", parameters: ["user_id": "ada"], for: "device-1")
        let appends = front.appends.withLock { $0 }
        let last = try #require(appends.last)
        #expect(
            Self.eventNames(last.records) == ["changeUser:ada", "played song:So What", "played song:Blue in Green"],
            "one append: the push's own record, the released ones and the session"
        )
        #expect(last.records.allSatisfy { $0.user == .externalID("ada") })
        #expect(last.sessions.count == 1)
        #expect(front.state(of: "device-1")?.attributes[BrazeTagProvider.pendingAttributeKey] == nil)
        #expect(login.committedOutputs == login.outputs.count)
    }

    /// The pending records are session state: committed in the durable queue's log with the session, loaded
    /// again after a restart, and released there.
    @Test func pendingRecordsSurviveADurableQueueRestartAndAreReleasedAfterIt() async throws {
        let directory = TemporaryDirectory("pending-restart")
        defer { directory.remove() }
        let restartable = DurableQueueSessionTests.RestartableQueue(directory: directory.path)
        let clock = WallClock()
        func store(_ queue: DeliveryPipeline<SegmentRecordStore>) async throws -> SessionStore {
            let (manager, _) = try await Self.manager(sink: CommitSink(), clock: clock)
            return SessionStore(
                tagManager: manager,
                configuration: .init(
                    persistence: queue.sessions,
                    committer: RecordCommitter(queue, keepsSessions: true)
                )
            )
        }
        let start = clock.date
        let sessions = try await store(try restartable.queue)
        try await sessions.push(event: "played song", parameters: Self.played("So What"), for: "device-2")
        clock.advance(by: 30)
        try await sessions.push(event: "played song", parameters: Self.played("Blue in Green"), for: "device-2")

        let restarted = try await restartable.restart()
        let again = try await store(restarted)
        let session = try await again.loadSession(for: "device-2")
        let pending = BrazeTagProvider.pendingRecords(of: session)
        #expect(Self.eventNames(pending) == ["played song:So What", "played song:Blue in Green"])
        #expect(pending.map(\.time) == [start, start.addingTimeInterval(30)])
        clock.advance(by: 30)
        try await again.push(event: "login", parameters: ["user_id": "ada"], for: "device-2")
        await restartable.destination.waitForDelivered(3)
        let delivered = restartable.destination.delivered
        #expect(
            Self.eventNames(delivered) == ["changeUser:ada", "played song:So What", "played song:Blue in Green"]
        )
        #expect(delivered.map(\.user) == Array(repeating: .externalID("ada"), count: 3))
        #expect(delivered.suffix(2).map(\.time) == [start, start.addingTimeInterval(30)])
        let loaded = try #require(try await restarted.sessions.load(userID: "device-2"))
        #expect(loaded.snapshot.attributes[BrazeTagProvider.pendingAttributeKey] == nil)
        await restartable.stop()
    }

    @Test func pastTheCountBoundTheOldestAreDroppedSayingWhy() async throws {
        let sink = InMemoryAnalyticsSink()
        let logger = InMemoryLogger()
        let (manager, provider) = try await Self.manager(
            sink: sink,
            clock: WallClock(),
            configuration: .init(maximumPendingRecords: 3),
            logger: logger
        )
        let session = manager.makeDataLayer(sessionID: "anon-4")
        var last: PushResult?
        for title in ["a", "b", "c", "d", "e"] {
            last = await session.push(event: "played song", parameters: Self.played(title))
        }
        #expect(Self.eventNames(BrazeTagProvider.pendingRecords(of: session)).map { $0.suffix(1) } == ["c", "d", "e"])
        let tag = try #require(last?.fired.first)
        #expect(tag.status.name == "pending")
        #expect(tag.output?.problems.first?.contains("at most 3 pending records") == true)
        #expect(provider.pendingStatistics == .init(held: 5, overflowed: 2))
        #expect(logger.entries.contains { $0.message == "dropped pending braze records" })
        BrazeTagProvider.setUser(.externalID("ada"), on: session)
        await session.push(event: "anything")
        #expect(Self.eventNames(sink.records).map { $0.suffix(1) } == ["c", "d", "e"])
    }

    /// However many and however large the records, a session holds at most the count and the bytes it is
    /// allowed (measured as the JSON its snapshot saves).
    @Test(arguments: [(100, 64 * 1024), (1_000, 8 * 1024)])
    func aSessionAtItsPendingBoundsNeverGrowsPastThem(records: Int, bytes: Int) async throws {
        let (manager, provider) = try await Self.manager(
            sink: InMemoryAnalyticsSink(),
            clock: WallClock(),
            configuration: .init(maximumPendingRecords: records, maximumPendingBytes: bytes)
        )
        let session = manager.makeDataLayer(sessionID: "anon-6")
        let title = String(repeating: "t", count: 250)
        for n in 0..<300 {
            await session.push(event: "played song", parameters: Self.played("\(title)\(n)"))
        }
        let pending = BrazeTagProvider.pendingRecords(of: session)
        let saved = try #require(session.attribute(BrazeTagProvider.pendingAttributeKey))
        let savedBytes = JSONWriter.string(saved).utf8.count
        #expect(pending.count <= records)
        #expect(savedBytes <= bytes + pending.count + 2, "the records' bytes, their commas and the brackets")
        #expect(Self.eventNames(pending).last == "played song:\(title)299", "the newest are kept")
        #expect(provider.pendingStatistics.held == 300)
        #expect(provider.pendingStatistics.overflowed == 300 - pending.count)
        print("pending_bound records=\(pending.count) bytes=\(savedBytes) (limits \(records), \(bytes))")
    }

    @Test func pastTheAgeBoundTheyExpireAtTheNextPushAndAreNeverReleased() async throws {
        let sink = InMemoryAnalyticsSink()
        let clock = WallClock()
        let (manager, provider) = try await Self.manager(sink: sink, clock: clock)
        let session = manager.makeDataLayer(sessionID: "anon-5")
        await session.push(event: "played song", parameters: Self.played("old"))
        clock.advance(by: 23 * 3600)
        await session.push(event: "played song", parameters: Self.played("recent"))
        clock.advance(by: 2 * 3600)  // "old" is 25 h old, "recent" 2 h
        let quiet = await session.push(event: "nothing fires")
        #expect(quiet.hookOutputs.first?.problems.first?.contains("pending longer than 24 h") == true)
        #expect(quiet.jsonValue.objectValue?["problems"]?.arrayValue?.count == 1)
        #expect(Self.eventNames(BrazeTagProvider.pendingRecords(of: session)) == ["played song:recent"])
        #expect(provider.pendingStatistics.expired == 1)
        await session.push(event: "login", parameters: ["user_id": "ada"])
        #expect(Self.eventNames(sink.records) == ["changeUser:ada", "played song:recent"])
        #expect(provider.pendingStatistics == .init(held: 2, released: 1, expired: 1))
    }

    /// A push that says when its event happened (a client's timestamp) makes records of that time, held or not.
    @Test func aRecordCarriesTheTimeItsEventHappened() async throws {
        let sink = InMemoryAnalyticsSink()
        let clock = WallClock()
        let (manager, _) = try await Self.manager(sink: sink, clock: clock)
        let session = manager.makeDataLayer(sessionID: "s-7")
        BrazeTagProvider.setUser(.externalID("ada"), on: session)
        let happened = clock.date.addingTimeInterval(-3600.5)
        await session.push(event: "played song", parameters: Self.played("late"), eventTime: happened)
        await session.push(event: "played song", parameters: Self.played("now"))
        #expect(Self.eventNames(sink.records) == ["played song:late", "played song:now"])
        #expect(sink.records.map(\.time) == [happened, clock.date])
    }

    /// An event three days old is held until its session has a user and released then with its own time: its age
    /// in the session counts from when it was held, also after the session is saved and read back. Held longer
    /// than the bound, it expires as any other.
    @Test func aHeldRecordOfALateEventCountsItsAgeFromWhenItWasHeld() async throws {
        let sink = InMemoryAnalyticsSink()
        let clock = WallClock()
        let (manager, provider) = try await Self.manager(sink: sink, clock: clock)
        let session = manager.makeDataLayer(sessionID: "anon-8")
        let happened = clock.date.addingTimeInterval(-3 * 86_400)
        let heldAt = clock.date
        await session.push(event: "played song", parameters: Self.played("offline"), eventTime: happened)
        await session.push(event: "played song", parameters: Self.played("online"))
        let saved = try #require(session.attribute(BrazeTagProvider.pendingAttributeKey))
        let restored = try #require(PendingKey.stored(fromAttribute: saved))
        #expect(restored.records.map(\.time) == [happened, heldAt])
        #expect(restored.heldAt == [heldAt, heldAt])
        // Only the record whose time is not when it was held says when that was.
        #expect(saved.arrayValue?.map { $0.objectValue?[PendingKey.heldAtMember] != nil } == [true, false])
        clock.advance(by: 3600)
        await session.push(event: "login", parameters: ["user_id": "ada"])
        #expect(Self.eventNames(sink.records) == ["changeUser:ada", "played song:offline", "played song:online"])
        #expect(sink.records.dropFirst().map(\.time) == [happened, heldAt])
        #expect(provider.pendingStatistics.expired == 0)

        let other = manager.makeDataLayer(sessionID: "anon-9")
        await other.push(event: "played song", parameters: Self.played("forgotten"), eventTime: happened)
        clock.advance(by: 25 * 3600)
        await other.push(event: "nothing fires")
        #expect(BrazeTagProvider.pendingRecords(of: other).isEmpty)
        #expect(provider.pendingStatistics.expired == 1)
    }

    /// Pending records an earlier version saved say nothing of when they were held: their own time is taken.
    @Test func pendingRecordsSavedWithoutAHeldTimeAreHeldAtTheirOwnTime() throws {
        let record = AnalyticsRecord(
            id: "r-1",
            time: Date(timeIntervalSince1970: 1_714_564_800),
            user: nil,
            payload: .customEvent(name: "e", properties: [:])
        )
        let restored = try #require(PendingKey.stored(fromAttribute: .array([record.jsonValue])))
        #expect(restored.records == [record] && restored.heldAt == [record.time])
    }

    @Test func holdingNothingDropsTheCallAsBefore() async throws {
        let sink = InMemoryAnalyticsSink()
        let (manager, _) = try await Self.manager(
            sink: sink,
            clock: WallClock(),
            configuration: .init(maximumPendingRecords: 0)
        )
        let session = manager.makeDataLayer()
        let result = await session.push(event: "played song", parameters: Self.played("So What"))
        #expect(result.fired.first?.status.name == "dropped")
        #expect(result.fired.first?.status.message?.contains("no Braze user") == true)
        #expect(session.attribute(BrazeTagProvider.pendingAttributeKey) == nil)
    }

    @Test func theAliasOptionSendsAtOnceForAUserAliasThatUsersTrackCanCreate() async throws {
        let sink = InMemoryAnalyticsSink()
        let (manager, provider) = try await Self.manager(
            sink: sink,
            clock: WallClock(),
            configuration: .init(withoutUser: .alias(label: "containerkit_session"))
        )
        let session = manager.makeDataLayer(sessionID: "cookie-9")
        let result = await session.push(event: "played song", parameters: Self.played("So What"))
        #expect(result.fired.map(\.status) == [.ok])
        let alias = UserIdentity.userAlias(name: "cookie-9", label: "containerkit_session")
        #expect(sink.records.map(\.user) == [alias])
        #expect(BrazeTagProvider.user(of: session) == alias)
        #expect(provider.pendingStatistics == .init())
        // changeUser names the alias as the previous user (what `/users/identify` merges).
        await session.push(event: "login", parameters: ["user_id": "ada"])
        #expect(sink.records.dropLast().last?.payload == .changeUser(externalID: "ada", previousUser: alias))
        #expect(sink.records.last?.kind == .identify, "then Braze is told to merge the alias (AliasIdentifyTests)")

        let batcher = BrazeUsersTrackBatcher(limit: .total(75), createsAliasOnlyProfiles: true)
        let body = try #require(batcher.requests(for: [sink.records[0]]).requests.first?.body)
        let event = try #require(try Value(jsonBytes: body).objectValue?["events"]?.arrayValue?.first?.objectValue)
        #expect(event["user_alias"] == ["alias_name": "cookie-9", "alias_label": "containerkit_session"])
        #expect(event["_update_existing_only"] == false)
        #expect(event["external_id"] == nil)
    }
}
