import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ContainerKit
@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// The session's Braze user: kept once, as a typed `UserIdentity` (not also as the `braze.user` attribute), saved as
/// that attribute in snapshots, files and deltas as before — and named by the session's ID where the provider reads
/// it anyway when so configured (``BrazeTagProvider/Configuration/sessionIDIsExternalID``).
@Suite struct BrazeUserStorageTests {
    /// A session snapshot as the versions that kept the user twice wrote it (one line of a sessions file, the
    /// `snapshot` of a PostgreSQL row): the user is the `braze.user` attribute.
    static let oldSnapshotLine =
        #"{"format":1,"session_id":"ada","model":{"event":"played song"},"raw_values":{},"user_properties":{},"#
        + #""attributes":{"braze.user":{"external_id":"u-1"},"z":false},"fired_once_per_load":[],"event_number":2,"#
        + #""context":{"platform":"Android","language":"en"}}"#

    /// The attribute the session holds as a value (not made from its typed user).
    static func heldAttribute(_ key: String, of session: DataLayer) -> Value? {
        session.state.withLock { $0.attributes[key] }
    }

    static func manager(
        sink: any AnalyticsSink,
        configuration: BrazeTagProvider.Configuration = .init()
    ) async throws -> TagManager {
        try await PendingRecordsTests.manager(
            sink: sink,
            clock: PendingRecordsTests.WallClock(),
            configuration: configuration
        )
        .0
    }

    @Test func anOldSnapshotWithTheUserAttributeLoadsIntoTheTypedUser() async throws {
        let sink = InMemoryAnalyticsSink()
        let manager = try await Self.manager(sink: sink)
        let session = manager.restoreDataLayer(from: try SessionSnapshot(jsonText: Self.oldSnapshotLine))
        #expect(BrazeTagProvider.user(of: session) == .externalID("u-1"))
        #expect(Self.heldAttribute(BrazeTagProvider.userAttributeKey, of: session) == nil, "moved into the typed user")

        await session.push(event: "played song", parameters: PendingRecordsTests.played("So What"))
        #expect(sink.records.map(\.user) == [.externalID("u-1")])
        // Saved as before: the attribute, in the same place of the same text.
        let saved = session.snapshot()
        #expect(saved.attributes[BrazeTagProvider.userAttributeKey] == ["external_id": "u-1"])
        #expect(saved.jsonText.contains(#""attributes":{"braze.user":{"external_id":"u-1"},"z":false}"#))
        #expect(session.attribute(BrazeTagProvider.userAttributeKey) == ["external_id": "u-1"])
    }

    @Test func anOldSessionsFileRestoresTheTypedUser() async throws {
        let directory = TemporaryDirectory("old-sessions")
        defer { directory.remove() }
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        let path = directory.file("sessions.jsonl")
        try Data((Self.oldSnapshotLine + "\n").utf8).write(to: URL(fileURLWithPath: path))
        let store = SessionStore(tagManager: try await Self.manager(sink: InMemoryAnalyticsSink()))
        #expect(try store.restore(from: path) == 1)
        let session = try #require(store.existingSession(for: "ada"))
        #expect(BrazeTagProvider.user(of: session) == .externalID("u-1"))

        // Written again and read back by the same path: the file keeps the attribute.
        #expect(try store.save(to: path) == 1)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(text.contains(#""braze.user":{"external_id":"u-1"}"#))
    }

    @Test func setUserKeepsTheUserOnceAndASnapshotSavesItAsTheAttribute() throws {
        let session = TagManager().makeDataLayer(sessionID: "bea")
        BrazeTagProvider.setUser(.brazeID("b-7"), on: session)
        #expect(Self.heldAttribute(BrazeTagProvider.userAttributeKey, of: session) == nil)
        #expect(BrazeTagProvider.user(of: session) == .brazeID("b-7"))
        #expect(session.snapshot().attributes[BrazeTagProvider.userAttributeKey] == ["braze_id": "b-7"])
        BrazeTagProvider.setUser(nil, on: session)
        #expect(session.snapshot().attributes[BrazeTagProvider.userAttributeKey] == nil)
    }

    @Test func theSessionIDNamesTheUserAtTheFirstBrazeTag() async throws {
        let sink = InMemoryAnalyticsSink()
        let manager = try await Self.manager(sink: sink, configuration: .init(sessionIDIsExternalID: true))
        let session = manager.makeDataLayer(sessionID: "ada")
        let quiet = await session.push(event: "played song", parameters: ["title": "Intro", "duration": 10])
        #expect(quiet.fired.isEmpty)
        #expect(BrazeTagProvider.user(of: session) == nil, "no Braze tag ran: nothing read, nothing named")

        let played = await session.push(event: "played song", parameters: PendingRecordsTests.played("So What"))
        #expect(played.fired.map(\.status) == [.ok], "not pending")
        #expect(sink.records.map(\.user) == [.externalID("ada")])
        #expect(BrazeTagProvider.user(of: session) == .externalID("ada"))

        // A changeUser tag still changes it.
        await session.push(event: "login", parameters: ["user_id": "bob"])
        #expect(BrazeTagProvider.user(of: session) == .externalID("bob"))
        await session.push(event: "played song", parameters: PendingRecordsTests.played("Blue in Green"))
        #expect(sink.records.last?.user == .externalID("bob"))
    }

    @Test func theSessionIDNamesTheUserOfHeldRecordsAtTheEndOfTheNextPush() async throws {
        let sink = InMemoryAnalyticsSink()
        // Held by a provider that names no user (a service run with `--braze-user none` before).
        let holding = try await Self.manager(sink: sink)
        let session = holding.makeDataLayer(sessionID: "cy")
        await session.push(event: "played song", parameters: PendingRecordsTests.played("So What"))
        #expect(BrazeTagProvider.pendingRecords(of: session).count == 1)

        let naming = try await Self.manager(sink: sink, configuration: .init(sessionIDIsExternalID: true))
        let restored = naming.restoreDataLayer(from: session.snapshot())
        let released = await restored.push(event: "nothing fires for this").hookOutputs.flatMap(\.records)
        #expect(released.compactMap { ($0 as? AnalyticsRecord)?.user } == [.externalID("cy")], "no tag ran")
        #expect(BrazeTagProvider.user(of: restored) == .externalID("cy"))
        #expect(BrazeTagProvider.pendingRecords(of: restored).isEmpty)
    }

    @Test func theSessionIDNamesAnAliasSessionsUserAndTheEndOfThePushIdentifiesTheAlias() async throws {
        let sink = InMemoryAnalyticsSink()
        let label = AliasIdentifyTests.label
        let aliasing = try await Self.manager(sink: sink, configuration: .init(withoutUser: .alias(label: label)))
        let session = aliasing.makeDataLayer(sessionID: "dee")
        await session.push(event: "played song", parameters: PendingRecordsTests.played("So What"))
        #expect(BrazeTagProvider.user(of: session) == .userAlias(name: "dee", label: label))

        let naming = try await Self.manager(
            sink: sink,
            configuration: .init(withoutUser: .alias(label: label), sessionIDIsExternalID: true)
        )
        let restored = naming.restoreDataLayer(from: session.snapshot())
        let next = await restored.push(event: "nothing fires for this")
        #expect(next.fired.isEmpty)
        #expect(sink.records.last?.payload == .identify(externalID: "dee", aliasName: "dee", aliasLabel: label))
        #expect(BrazeTagProvider.user(of: restored) == .externalID("dee"))
        #expect(BrazeTagProvider.aliasToIdentify(of: restored) == nil)
    }
}
