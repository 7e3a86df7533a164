import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

/// Snapshots: a restored session behaves exactly as the original would have.
struct SessionSnapshotTests {
    static let events: [(String, ValueMap)] = [
        ("gtm.js", [:]), ("login", ["user_id": "user-42", "method": "email"]),
        ("played song", ["title": "So What", "genre": "jazz", "duration": 545]),
        ("logEvent", ["eventName": "played song", "doubleParam": 2.5]), ("_e", [:]),
        ("purchase", ["value": 9.99, "currency": "EUR", "items": [["id": "a"], ["id": "b"]]]),
        ("screen_view", ["screen_name": "home"]), ("gtm.load", [:]), ("applicationStart", [:]),
        ("played song", ["title": "Intro", "genre": "rock", "duration": 12.0]), ("sign_up", [:]),
    ]

    /// What a push did, without values a random-number variable could change.
    static func outline(_ result: PushResult) -> [String] {
        result.fired.map { "\($0.index) \($0.status.name) \($0.parameters.keys.sorted())" }
    }

    /// Pushes the first half of the events, snapshots (through JSONEncoder and back), then checks the
    /// original and the restored session do the same for the second half and end equal.
    static func checkRoundTrip(_ container: Container, file: String) async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let original = manager.makeDataLayer(
            context: ClientContext(platform: "Android", language: "de", appID: "com.example.music"),
            sessionID: "user-1"
        )
        original.setAttribute(["external_id": "u-1"], forKey: "braze.user")
        original.setUserProperty("pro", forKey: "plan")
        for (name, parameters) in events.prefix(6) { await original.push(event: name, parameters: parameters) }
        await original.push(["gtm.element": "button#buy", "a.b": 1.0])

        let snapshot = original.snapshot()
        let data = try JSONEncoder().encode(snapshot)
        let decoded = try JSONDecoder().decode(SessionSnapshot.self, from: data)
        #expect(decoded == snapshot, "\(file): snapshot changed through JSON")
        let restored = manager.restoreDataLayer(from: decoded)
        #expect(restored.snapshot() == snapshot, "\(file): restored session differs")
        #expect(restored.sessionID == "user-1" && restored.context == original.context)

        for (name, parameters) in events.dropFirst(6) {
            let expected = outline(await original.push(event: name, parameters: parameters))
            let actual = outline(await restored.push(event: name, parameters: parameters))
            #expect(actual == expected, "\(file): '\(name)' differs after restoring")
        }
        #expect(restored.snapshot() == original.snapshot(), "\(file): sessions drifted apart")
    }

    @Test(arguments: ["GTM-MUSIC01.json", "GTM-MUSICEX.json", "GTM-DEFAULT1.plist"])
    func bundledContainersRoundTripExactly(file: String) async throws {
        let container = try await ContainerLoader().load(path: TestContainers.bundled(file))
        try await Self.checkRoundTrip(container, file: file)
    }

    @Test(
        .enabled(
            if: TestContainers.corpus != nil,
            "corpus not found at ../shared/research/corpus; corpus tests skipped"
        )
    )
    func corpusContainersRoundTripExactly() async throws {
        var checked = 0
        for file in CorpusTests.jsonFiles {
            let path = try #require(TestContainers.corpusFile(file))
            guard let container = try? await ContainerLoader().load(path: path) else { continue }
            try await Self.checkRoundTrip(container, file: file)
            checked += 1
        }
        #expect(checked >= 19)
    }

    @Test func oncePerLoadTagsDoNotFireAgainAfterARestore() async throws {
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
        let first = manager.makeDataLayer(sessionID: "u")
        await #expect(first.push(event: "open").fired.map(\.tagID) == [1, 2])
        await #expect(first.push(event: "open").fired.map(\.tagID) == [2])
        let text = first.snapshot().jsonText

        // A new process: a new runtime, the session made from the stored text.
        let restart = TagManager(logger: InMemoryLogger())
        restart.add(container)
        let restored = restart.restoreDataLayer(from: try SessionSnapshot(jsonText: text))
        let result = await restored.push(event: "open")
        #expect(result.fired.map(\.tagID) == [2])
        // The event counter continues: this is the session's third event.
        #expect(restored.snapshot().eventNumber == 3)
    }

    @Test func snapshotsKeepKeyOrderAndNumberTypes() throws {
        var model = ValueMap()
        model["zeta"] = 1
        model["alpha"] = .double(2.0)
        model["mid"] = ["z": 1, "a": .double(-0.5), "list": [.double(1e21), 3, "x"]]
        let snapshot = SessionSnapshot(sessionID: "s", model: model, eventNumber: 4)
        let back = try SessionSnapshot(jsonText: snapshot.jsonText)
        #expect(back == snapshot)
        #expect(back.model.keys == ["zeta", "alpha", "mid"])
        #expect(back.model["alpha"] == .double(2.0))
    }

    @Test(arguments: [nil, "ad-\"1\u{1}"] as [String?])
    func aSnapshotsTextIsItsJSONValuesText(advertiserID: String?) throws {
        var model = ValueMap()
        model["title"] = "So \"What\"\n"
        model["position"] = 3
        model["price"] = .double(2.0)
        model["nested"] = ["z": 1, "a": .double(-0.5), "list": [.double(1e21), 3, "x", .null, true]]
        model["gone"] = .undefined
        let snapshot = SessionSnapshot(
            sessionID: "caf\u{E9}",
            model: model,
            rawValues: ["a.b": 1, "event": "played song"],
            userProperties: ["plan": "pro"],
            attributes: ["braze.user": ["external_id": "u-1"], "z": false],
            firedOncePerLoad: ["GTM-A#1", "GTM-A#12", "GTM-B#0"],
            eventNumber: 41,
            context: ClientContext(
                platform: "Android",
                language: "de",
                appID: "com.example",
                resolution: "1080x1920",
                advertisingTrackingEnabled: true,
                advertiserID: advertiserID
            )
        )
        let expected = JSONWriter.string(snapshot.jsonValue, keepsNumberTypes: true)
        #expect(snapshot.jsonText == expected)
        // What the text leaves out (an undefined entry) is all that differs once read back.
        var defined = snapshot
        defined.model["gone"] = nil
        #expect(try SessionSnapshot(jsonText: snapshot.jsonText) == defined)
    }

    @Test func unreadableSnapshotsAreErrorsNamingTheMember() {
        #expect(throws: ContainerError.self) { try SessionSnapshot(jsonText: "[]") }
        do {
            _ = try SessionSnapshot(jsonText: #"{"format": 1, "session_id": 7}"#)
            Issue.record("expected an error")
        } catch {
            #expect(error.pointer == "/session_id")
        }
        do {
            _ = try SessionSnapshot(jsonText: #"{"format": 99}"#)
            Issue.record("expected an error")
        } catch {
            #expect(error.message.contains("format"))
        }
    }

    @Test func anEventNumberACountCouldOverflowIsRefusedAtItsMember() throws {
        var value = try #require(SessionSnapshot(sessionID: "s", eventNumber: 4).jsonValue.objectValue)
        value["event_number"] = .int(Int64.max)
        do {
            _ = try SessionSnapshot(jsonValue: .object(value))
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .invalidStructure)
            #expect(error.pointer == "/event_number")
        }
        value["event_number"] = .int(9_007_199_254_740_991)
        #expect(try SessionSnapshot(jsonValue: .object(value)).eventNumber == 9_007_199_254_740_991)
    }

    @Test func clientContextsRoundTripAndDefaultToNothingAboutTheServer() throws {
        #expect(TagManager().defaultContext == ClientContext.server)
        #expect(ClientContext.server.platform.isEmpty && ClientContext.server.deviceName.isEmpty)
        let context = ClientContext(platform: "iOS", language: "fr", appID: "com.x", advertiserID: "ad-1")
        let data = try JSONEncoder().encode(context)
        #expect(try JSONDecoder().decode(ClientContext.self, from: data) == context)
        let partial = try JSONDecoder().decode(ClientContext.self, from: Data(#"{"platform": "Android"}"#.utf8))
        #expect(partial == ClientContext(platform: "Android"))
        #expect(throws: ContainerError.self) { try ClientContext(jsonValue: ["platform": ["nested": 1]]) }
    }

    /// The page's URL and referrer round-trip in every form a context is written in; an empty referrer (a page opened
    /// without one) stays known and empty, an absent one unknown.
    @Test func aContextsPageURLAndReferrerRoundTrip() throws {
        let context = ClientContext(platform: "web", pageURL: "https://shop.example/cart?x=1", referrer: "")
        #expect(try JSONDecoder().decode(ClientContext.self, from: try JSONEncoder().encode(context)) == context)
        #expect(try ClientContext(jsonValue: context.jsonValue) == context)
        var writer = JSONByteWriter()
        context.writeJSON(to: &writer)
        #expect(try Value(jsonBytes: writer.bytes) == context.jsonValue)
        #expect(context.jsonValue.objectValue?["referrer"] == "")
        #expect(ClientContext().jsonValue.objectValue?["page_url"] == nil)
        var set = ClientContext()
        try set.setValue("https://a.example/", forKey: "page_url")
        try set.setValue("", forKey: "referrer")
        #expect(set.pageURL == "https://a.example/" && set.referrer == "")
        try set.setValue("", forKey: "page_url")
        #expect(set.pageURL == nil)
    }

    @Test func aLiveSessionsContextCanBeUpdated() throws {
        let container = try TestContainers.resource(macros: #"[{"function": "__avn", "instance_name": "version"}]"#)
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let session = manager.makeDataLayer(context: ClientContext(appVersionName: "4.1"))
        #expect(session.string(forKey: "version") == "4.1")
        session.updateContext(ClientContext(appVersionName: "4.2"))
        #expect(session.string(forKey: "version") == "4.2")
    }
}
