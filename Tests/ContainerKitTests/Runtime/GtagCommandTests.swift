import ContainerKit
import ContainerKitTesting
import Testing

/// gtag commands as served gtm.js (version 1331, run under node) runs them in a GTM web container: an `event` is the
/// message `{event, eventModel}`, whose parameters a web session drops before its next message; a `set` replaces its
/// keys; the Google tag's own commands and malformed ones change nothing.
struct GtagCommandTests {
    // MARK: Reading the arguments

    @Test func anEventIsItsNameAndItsParametersWithoutGtmsOwnFlags() throws {
        let command = try GtagCommand(gtagArguments: [
            "event", "purchase", ["transaction_id": "T1", "value": 5, "_def": true],
        ])
        #expect(command == .event(name: "purchase", parameters: ["transaction_id": "T1", "value": 5]))
        #expect(command.message == ["event": "purchase", "eventModel": ["transaction_id": "T1", "value": 5]])
        // No parameters, or null ones: the message has no eventModel.
        #expect(try GtagCommand(gtagArguments: ["event", "custom2"]).message == ["event": "custom2"])
        #expect(try GtagCommand(gtagArguments: ["event", "custom2", .null]).message == ["event": "custom2"])
        // An empty object is still an eventModel.
        #expect(try GtagCommand(gtagArguments: ["event", "x", [:]]).message == ["event": "x", "eventModel": [:]])
    }

    @Test(arguments: [
        ["event", "purchase", ["transaction_id": "T3"], ["extra": 1]] as [Value],
        ["event", "purchase", "notAnObject"],
        ["event", "purchase", ["a", "b"]],
        ["event"],
        ["event", 5],
        ["event", "purchase", ["transaction_id": "T5", "_nge": true]],
    ])
    func anEventGtmIgnoresChangesNothing(arguments: [Value]) throws {
        let command = try GtagCommand(gtagArguments: arguments)
        guard case .ignored("event", let reason) = command else {
            Issue.record("read as \(command)")
            return
        }
        #expect(reason.hasPrefix("gtm.js ignores a gtag event"))
        #expect(command.message == nil)
    }

    @Test func aSetReplacesItsKeysInEitherForm() throws {
        #expect(try GtagCommand(gtagArguments: ["set", ["user_id": "u1"]]) == .set(["user_id": "u1"]))
        #expect(try GtagCommand(gtagArguments: ["set", "key", "value"]) == .set(["key": "value"]))
        #expect(try GtagCommand(gtagArguments: ["set", "obj", ["c": 3]]).message == ["obj": ["c": 3], "_clear": true])
        for arguments: [Value] in [["set", "user_id"], ["set", ["a": 1], "b"], ["set", 5, "v"], ["set"]] {
            guard case .ignored("set", _) = try GtagCommand(gtagArguments: arguments) else {
                Issue.record("\(arguments) was not ignored")
                continue
            }
        }
    }

    @Test func theGoogleTagsCommandsAndUnknownOnesAreIgnoredAndConsentIsAConsentCommand() throws {
        for name in ["config", "js", "get", "consnet"] {
            let command = try GtagCommand(gtagArguments: [.string(name), "G-1"])
            guard case .ignored(name, _) = command else {
                Issue.record("\(name) read as \(command)")
                continue
            }
        }
        let consent = try GtagCommand(gtagArguments: ["consent", "update", ["ad_storage": "granted"]])
        #expect(
            consent == .consent(ConsentCommand(kind: .update, settings: [.init(type: "ad_storage", value: "granted")]))
        )
        #expect(consent.message == nil)
        #expect(throws: ContainerError.self) { try GtagCommand(gtagArguments: ["consent", "update"]) }
        let unnamed = #expect(throws: ContainerError.self) { try GtagCommand(gtagArguments: [5, "e"]) }
        #expect(unnamed?.code == .invalidCommand)
        #expect(unnamed?.pointer == "/0")
    }

    // MARK: In a session

    /// One tag per condition, each fired on any event: `{{eventModel.transaction_id}}` equals T1 (tag 1),
    /// `{{transaction_id}}` equals T1 (tag 2), the event is `purchase` (tag 3).
    static func container(platform: ContainerPlatform) throws -> Container {
        let json = """
            {"resource": {"version": "1",
              "macros": [{"function": "__e"},
                {"function": "__v", "vtp_name": "eventModel.transaction_id", "vtp_dataLayerVersion": 2},
                {"function": "__v", "vtp_name": "transaction_id", "vtp_dataLayerVersion": 2}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "model"},
                       {"function": "__funct", "tag_id": 2, "vtp_classPath": "top"},
                       {"function": "__funct", "tag_id": 3, "vtp_classPath": "purchase"}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 1], "arg1": "T1"},
                             {"function": "_eq", "arg0": ["macro", 2], "arg1": "T1"},
                             {"function": "_eq", "arg0": ["macro", 0], "arg1": "purchase"}],
              "rules": [[["if", 0], ["add", 0]], [["if", 1], ["add", 1]], [["if", 2], ["add", 2]]]}}
            """
        return try ContainerLoader(options: LoadOptions(platform: platform)).load(bytes: Array(json.utf8))
    }

    static func session(platform: ContainerPlatform) throws -> DataLayer {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try container(platform: platform))
        return manager.makeDataLayer()
    }

    static func fired(_ result: PushResult) -> [String] { result.fired.compactMap(\.classPath) }

    @Test func aGtagEventFiresOnItsNameWithItsParametersUnderEventModelOnly() throws {
        let session = try Self.session(platform: .web)
        let message = try #require(
            try GtagCommand(gtagArguments: ["event", "purchase", ["transaction_id": "T1", "value": 5]]).message
        )
        #expect(Self.fired(session.push(message)) == ["model", "purchase"])
        #expect(session.get("eventModel") == ["transaction_id": "T1", "value": 5])
        #expect(session.get("transaction_id") == .undefined)
        #expect(session.get("event") == "purchase")
    }

    @Test func aWebSessionDropsTheEventModelBeforeItsNextMessageEvenOneWithoutAnEvent() throws {
        let session = try Self.session(platform: .web)
        let purchase = try #require(
            try GtagCommand(gtagArguments: ["event", "purchase", ["transaction_id": "T1"]]).message
        )
        session.push(purchase)
        // A later event does not see the gtag event's parameters.
        #expect(Self.fired(session.push(event: "x")) == [])
        #expect(session.get("eventModel") == .undefined)
        session.push(purchase)
        session.push(["foo": 1])
        #expect(session.get("eventModel") == .undefined)
        // Each gtag event has a fresh eventModel: the second's is not merged into the first's.
        session.push(purchase)
        session.push(try #require(try GtagCommand(gtagArguments: ["event", "purchase", ["value": 7]]).message))
        #expect(session.get("eventModel") == ["value": 7])
        // A set drops it too, and replaces the keys it names.
        session.push(["obj": ["a": 1]])
        session.push(try #require(try GtagCommand(gtagArguments: ["set", ["obj": ["b": 2]]]).message))
        #expect(session.get("obj") == ["b": 2])
        #expect(session.get("eventModel") == .undefined)
        #expect(session.get("_clear") == .undefined)
    }

    @Test func theTraceShowsTheDroppedEventModel() throws {
        let session = try Self.session(platform: .web)
        session.push(
            try #require(try GtagCommand(gtagArguments: ["event", "purchase", ["transaction_id": "T1"]]).message)
        )
        let trace = try #require(session.push(event: "x", tracing: true).trace)
        let change = try #require(trace.changes.first { $0.key == "eventModel" })
        #expect(change.before == ["transaction_id": "T1"])
        #expect(change.after == nil)
    }

    /// Mobile runtimes have no gtag: a mobile container's session keeps `eventModel` like any other key.
    @Test func aMobileSessionKeepsEventModelLikeAnyKey() throws {
        let session = try Self.session(platform: .mobile)
        session.push(
            try #require(try GtagCommand(gtagArguments: ["event", "purchase", ["transaction_id": "T1"]]).message)
        )
        #expect(Self.fired(session.push(event: "x")) == ["model"])
        #expect(session.get("eventModel") == ["transaction_id": "T1"])
    }
}
