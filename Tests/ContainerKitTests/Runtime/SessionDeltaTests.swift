import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

@testable import ContainerKit

/// Deltas: the last snapshot with the later deltas applied is exactly the session's state, whatever the
/// pushes did (nested keys, `_clear`, dotted keys, user properties, attributes, once-per-load tags, the host's
/// changes between pushes), and applying them evaluates nothing.
struct SessionDeltaTests {
    /// The wall-clock time the sessions' event IDs are stamped with (a step may push later).
    @TaskLocal static var now: Int64 = 1_700_000_000_000

    /// At most three event IDs, for a day: the steps remember, forget by count and by age.
    static let eventIDs = EventIDWindow(duration: .seconds(86_400), maximumCount: 3, clock: { SessionDeltaTests.now })

    /// The pushes, host changes included: each step is applied to the live session, then a delta is taken.
    static let steps: [(String, @Sendable (DataLayer) async -> Void)] = [
        ("gtm.js", { _ = await $0.push(event: "gtm.js") }),
        ("login", { _ = await $0.push(event: "login", parameters: ["user_id": "user-42", "method": "email"]) }),
        ("attribute", { $0.setAttribute(["external_id": "u-1"], forKey: "braze.user") }),
        ("song", { _ = await $0.push(event: "played song", parameters: ["title": "So What", "genre": "jazz"]) }),
        ("nested", { _ = await $0.push(["ecommerce": ["items": [["id": "a"], ["id": "b"]], "value": 3]]) }),
        ("merge", { _ = await $0.push(["ecommerce": ["items": [.undefined, ["id": "c"]], "currency": "EUR"]]) }),
        ("dotted", { _ = await $0.push(["a.b.c": 1.0, "z": "last", "a.d": true]) }),
        ("properties", { _ = await $0.push(["gtm.userProperties": ["plan": "pro", "tier": 2]]) }),
        ("property", { $0.setUserProperty(nil, forKey: "tier") }),
        ("purchase", { _ = await $0.push(event: "purchase", parameters: ["value": 9.99, "currency": "EUR"]) }),
        ("clear key", { _ = await $0.push(["_clear": true, "ecommerce": .undefined, "a": ["x": 1]]) }),
        ("re-added", { _ = await $0.push(["ecommerce": ["value": 1]]) }),
        ("context", { $0.updateContext(ClientContext(platform: "iOS", language: "fr", appID: "com.example.music")) }),
        ("screen", { _ = await $0.push(event: "screen_view", parameters: ["screen_name": "home"]) }),
        ("nothing", { _ = $0 }),
        ("cleared", { $0.clear() }),
        ("after clear", { _ = await $0.push(event: "played song", parameters: ["genre": "rock", "duration": 12.0]) }),
        ("gtm.load", { _ = await $0.push(event: "gtm.load") }),
        ("event id", { _ = await $0.push(event: "played song", parameters: ["genre": "jazz"], eventID: "m-1") }),
        ("duplicate", { _ = await $0.push(event: "played song", parameters: ["genre": "jazz"], eventID: "m-1") }),
        (
            "ids past the count",
            { session in
                for id in ["m-2", "m-3", "m-4"] { _ = await session.push(event: "screen_view", eventID: id) }
            }
        ),
        (
            "a day later",
            { session in
                await $now.withValue(now + 86_400_001) { _ = await session.push(event: "gtm.js", eventID: "m-5") }
            }
        ),
        (
            "more ids than the count in one delta",
            { session in
                await $now.withValue(now + 86_400_002) {
                    for n in 6...10 { _ = await session.push(["n": .int(Int64(n))], eventID: "m-\(n)") }
                }
            }
        ),
        ("without an id", { _ = await $0.push(event: "played song", parameters: ["genre": "pop"]) }),
        // gtag commands: a web session drops the event's `eventModel` at the next message, which the delta says.
        ("gtag event", { _ = await $0.push(GtagCommand.event(name: "purchase", parameters: ["value": 5]).message!) }),
        ("after a gtag event", { _ = await $0.push(event: "played song", parameters: ["genre": "soul"]) }),
        ("gtag set", { _ = await $0.push(GtagCommand.set(["plan": ["tier": "gold"]]).message!) }),
    ]

    /// Runs every step on a session that keeps its changes; after each, the delta (through its JSON text)
    /// applied to the previous state equals the session's snapshot.
    static func checkDeltas(_ container: Container, file: String) async throws {
        let manager = TagManager(logger: InMemoryLogger(), eventIDs: eventIDs)
        manager.add(container)
        let session = manager.makeDataLayer(
            context: ClientContext(platform: "Android", language: "de", appID: "com.example.music"),
            sessionID: "user-1",
            debug: false,
            committing: nil,
            keepsChanges: true
        )
        var state = session.snapshot()
        for (name, step) in steps {
            await step(session)
            let delta = try #require(session.takeDelta())
            let read = try SessionDelta(jsonText: delta.jsonText)
            // Compared as stored (JSON text: key order and number types kept; an undefined array element, which
            // only the Swift API can push, is stored as null by deltas and snapshots alike).
            #expect(read.jsonText == delta.jsonText, "\(file) \(name): the delta changed through its JSON text")
            read.apply(to: &state)
            #expect(
                state.jsonText == session.snapshot().jsonText,
                "\(file) \(name): snapshot + delta differs from the session"
            )
            state = session.snapshot()
        }
        #expect(state.eventIDs.map(\.id) == ["m-8", "m-9", "m-10"], "\(file): the newest three ids are remembered")
    }

    @Test(arguments: ["GTM-MUSIC01.json", "GTM-MUSICEX.json", "GTM-DEFAULT1.plist"])
    func aDeltaAppliedToThePreviousStateIsTheSessionsState(file: String) async throws {
        let container = try await ContainerLoader().load(path: TestContainers.bundled(file))
        try await Self.checkDeltas(container, file: file)
    }

    /// A web container's session drops a gtag event's parameters before the next message.
    @Test func aWebContainersDeltasApplyExactly() async throws {
        let path = TestContainers.bundled("GTM-MUSICEX.json")
        let container = try await ContainerLoader(options: LoadOptions(platform: .web)).load(path: path)
        try await Self.checkDeltas(container, file: "GTM-MUSICEX.json as web")
    }

    @Test(
        .enabled(
            if: TestContainers.corpus != nil,
            "corpus not found at ../shared/research/corpus; corpus tests skipped"
        )
    )
    func corpusContainersDeltasApplyExactly() async throws {
        var checked = 0
        for file in CorpusTests.jsonFiles {
            let path = try #require(TestContainers.corpusFile(file))
            guard let container = try? await ContainerLoader().load(path: path) else { continue }
            try await Self.checkDeltas(container, file: file)
            checked += 1
        }
        #expect(checked >= 19)
    }

    /// A delta carries what the push set, not the whole session: a push of one key into a large session
    /// stays small.
    @Test func aDeltaHoldsOnlyTheKeysThePushSet() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        let session = manager.makeDataLayer(
            context: nil,
            sessionID: "u",
            debug: false,
            committing: nil,
            keepsChanges: true
        )
        var big = ValueMap()
        for index in 0..<200 { big["key\(index)"] = .string(String(repeating: "x", count: 40)) }
        await session.push(big)
        _ = session.takeDelta()
        await session.push(event: "tap", parameters: ["button": "play"])
        let delta = try #require(session.takeDelta())
        #expect(delta.model.keys == ["button", "event"])
        #expect(delta.jsonText.utf8.count < 120)
        #expect(session.snapshot().jsonText.utf8.count > 10_000)
    }

    /// Once-per-load tags that fired travel in the delta: a session folded from it does not fire them again,
    /// and nothing is evaluated while folding.
    @Test func aFoldedSessionDoesNotFireOncePerLoadTagsAgain() async throws {
        let container = try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "once", "once_per_load": true},
                 {"function": "__funct", "tag_id": 2, "vtp_classPath": "every"}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "open"}]"#,
            rules: #"[[["if", 0], ["add", 0, 1]]]"#
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let session = manager.makeDataLayer(
            context: nil,
            sessionID: "u",
            debug: false,
            committing: nil,
            keepsChanges: true
        )
        let base = session.snapshot()
        await #expect(session.push(event: "open").fired.map(\.tagID) == [1, 2])
        var fold = SessionFold()
        fold.apply(snapshot: base, version: 1)
        fold.apply(deltaText: try #require(session.takeDelta()).jsonText, version: 2)
        let stored = try #require(fold.stored)
        #expect(stored.version == 2 && stored.deltas == 1)
        let restored = manager.restoreDataLayer(from: stored.snapshot)
        await #expect(restored.push(event: "open").fired.map(\.tagID) == [2])
        #expect(restored.snapshot().eventNumber == 2)
    }

    /// A fold stops at a delta it cannot apply — one that does not parse, or a version gap — counts what it
    /// did not apply, and reports the newest version seen so that the next commit is a fenced snapshot.
    @Test func aFoldStopsAtADeltaItCannotApplyAndAsksForASnapshot() throws {
        let base = SessionSnapshot(sessionID: "u", model: ["a": 1])
        var fold = SessionFold()
        fold.apply(snapshot: base, version: 4)
        fold.apply(delta: SessionDelta(sessionID: "u", model: ["b": 2], eventNumber: 1), version: 5)
        fold.apply(deltaText: #"{"format":1,"session_id":"u","event_n"#, version: 6)
        fold.apply(delta: SessionDelta(sessionID: "u", model: ["c": 3], eventNumber: 3), version: 7)
        #expect(fold.unapplied == 2)
        #expect(fold.problem?.contains("version 6") == true)
        let stored = try #require(fold.stored)
        #expect(stored.snapshot.model == ["a": 1, "b": 2], "what applied, nothing after the bad delta")
        #expect(stored.version == 7, "the newest version seen: the next commit is fenced against it")
        #expect(stored.deltas == .max, "the next commit is a snapshot")

        var gap = SessionFold()
        gap.apply(snapshot: base, version: 1)
        gap.apply(delta: SessionDelta(sessionID: "u", model: ["b": 2], eventNumber: 1), version: 3)
        #expect(gap.unapplied == 1 && gap.stored?.snapshot == base && gap.stored?.version == 3)

        var orphan = SessionFold()
        orphan.apply(delta: SessionDelta(sessionID: "u", eventNumber: 1), version: 2)
        #expect(orphan.stored == nil && orphan.unapplied == 1)
    }

    /// A new session's first commit may be a delta (version 1, nothing before it): it applies to the empty state,
    /// and the deltas after it follow. Only version 1 has no snapshot before it.
    @Test func aFirstCommitsDeltaFoldsOntoTheEmptyState() throws {
        let french = ClientContext(language: "fr")
        var fold = SessionFold()
        let first = SessionDelta(sessionID: "u", model: ["a": 1], eventNumber: 1, context: french)
        fold.apply(delta: first, version: 1, id: 11)
        let second = SessionDelta(sessionID: "u", model: ["b": 2], eventNumber: 2)
        fold.apply(deltaText: second.jsonText, version: 2, id: 12)
        #expect(fold.unapplied == 0)
        let stored = try #require(fold.stored)
        #expect(
            stored.snapshot
                == SessionSnapshot(
                    sessionID: "u",
                    model: ["a": 1, "b": 2],
                    eventNumber: 2,
                    context: french
                )
        )
        #expect(stored.version == 2 && stored.deltas == 2 && stored.checkpointID == 12)
    }

    @Test(arguments: [
        #"[]"#, #"{"format":2,"session_id":"u","event_number":1}"#, #"{"format":1,"event_number":1}"#,
        #"{"format":1,"session_id":"u","event_number":-1}"#,
        #"{"format":1,"session_id":"u","event_number":1,"model":[]}"#,
        #"{"format":1,"session_id":"u","event_number":1,"replaces_model":1}"#,
        #"{"format":1,"session_id":"u","event_number":1,"context":7}"#,
    ])
    func aMalformedDeltaIsRefusedWithTheMemberNamed(text: String) {
        #expect(throws: ContainerError.self) { try SessionDelta(jsonText: text) }
    }
}
