import ContainerKitTesting
import Testing

@testable import ContainerKit

/// An evaluation is one-way: what it reads of its session comes in (a ``SessionView`` taken when the push is merged,
/// the client context in the session's runtime holder, the once-per-load tags `inout`), what it changes goes out
/// (its calls, the keys added to ``OncePerLoad``), and it neither reads nor writes its ``DataLayer`` itself. These
/// pin that, and that handlers still get what they got.
struct OneWayEvaluationTests {
    /// Tag 0 (`t`, once per load, priority 10) passes the client's language, the user property `plan` and the
    /// version-1 value of `raw`; tag 1 (`u`) requires `ad_storage`; both fire on `e`.
    private func container() throws -> Container {
        try TestContainers.resource(
            macros: """
                [{"function": "__e"}, {"function": "__l", "instance_name": "language"},
                 {"function": "__fup", "instance_name": "plan", "vtp_key": "plan"},
                 {"function": "__v", "instance_name": "raw", "vtp_name": "raw", "vtp_dataLayerVersion": 1}]
                """,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t", "once_per_load": true, "priority": 10,
                  "vtp_functionArgument": ["list", ["map", "key", "language", "value", ["macro", 1]],
                    ["map", "key", "plan", "value", ["macro", 2]], ["map", "key", "raw", "value", ["macro", 3]]]},
                 {"function": "__funct", "tag_id": 2, "vtp_classPath": "u", "consent": ["list", "ad_storage"]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
            rules: #"[[["if", 0], ["add", 0, 1]]]"#
        )
    }

    @Test func anEvaluationReadsOnlyWhatItIsHandedAndChangesOnlyItsOutputs() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try container())
        let recorder = RecordingHandler()
        manager.register(tagHandler: recorder, for: "t")
        manager.register(tagHandler: recorder, for: "u")
        // The session's own state says one thing; the view the evaluation is handed says another.
        let session = manager.makeDataLayer(context: ClientContext(language: "fr"))
        session.setUserProperty("pro", forKey: "plan")
        session.push(["raw": "in the session"])
        let before = session.snapshot()
        let view = SessionView(
            call: CallSession(session),
            consent: ConsentState(entries: [ConsentState.Entry(type: "ad_storage", defaultGranted: false)]),
            rawValues: ["raw": "handed"],
            userProperties: ["plan": "team"]
        )
        let runtime = SessionRuntime(
            generation: 0,
            snapshot: manager.snapshot,
            context: ClientContext.Box(ClientContext(language: "de"))
        )
        var oncePerLoad = OncePerLoad()

        func evaluate() -> [FiredCall] {
            var evaluation = Evaluation(
                container: runtime.containers[0],
                message: ValueMap(),
                model: ValueMap(),
                eventName: "e",
                eventNumber: 1,
                session: view,
                runtime: runtime,
                recordTrace: false
            )
            evaluation.run(oncePerLoad: &oncePerLoad)
            return evaluation.takeCalls()
        }

        let first = evaluate()
        let call = try #require(recorder.calls.first)
        #expect(recorder.calls.count == 1)
        #expect(call.name == "t")
        #expect(call.arguments == ["language": "de", "plan": "team", "raw": "handed"])
        #expect(call.dataLayer === session)
        #expect(first.map(\.status) == [.ok, .blockedByConsent(["ad_storage"])])
        #expect(oncePerLoad.added == ["GTM-TEST1#0"])

        // The same once-per-load state, handed to the next evaluation: tag 0 is not called again.
        let second = evaluate()
        #expect(recorder.calls.count == 1)
        #expect(second.map(\.tag) == [1])

        // Nothing of it reached the session: that is the push's job, not the evaluation's.
        #expect(session.snapshot() == before)
        #expect(session.consent.isEmpty)
    }

    @Test func aPushEvaluatesTheSessionAsItFoundItAndAHandlersChangesApplyFromTheNextPush() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try container())
        let recorder = RecordingHandler()
        // Tag 1 fires after tag 0 (lower priority); tag 0's handler changes the context and the user property.
        manager.register(
            tagHandler: RecordingHandler { call in
                call.dataLayer.updateContext(ClientContext(language: "de"))
                call.dataLayer.setUserProperty("team", forKey: "plan")
            },
            for: "t"
        )
        manager.register(tagHandler: recorder, for: "u")
        let probe = try TestContainers.resource(
            macros: """
                [{"function": "__e"}, {"function": "__l", "instance_name": "language"},
                 {"function": "__fup", "instance_name": "plan", "vtp_key": "plan"}]
                """,
            tags: """
                [{"function": "__funct", "tag_id": 9, "vtp_classPath": "u", "priority": 1,
                  "vtp_functionArgument": ["list", ["map", "key", "language", "value", ["macro", 1]],
                    ["map", "key", "plan", "value", ["macro", 2]]]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#,
            id: "GTM-PROBE"
        )
        manager.add(probe)
        let session = manager.makeDataLayer(context: ClientContext(language: "fr"))
        session.setUserProperty("pro", forKey: "plan")
        session.push(event: "e")
        // The probe container is evaluated after the first one's handler ran, in the same push.
        let seen = recorder.calls.filter { $0.containerID == "GTM-PROBE" }.map(\.arguments)
        #expect(seen == [["language": "fr", "plan": "pro"]])
        session.push(event: "e")
        let next = recorder.calls.filter { $0.containerID == "GTM-PROBE" }.map(\.arguments)
        #expect(next.last == ["language": "de", "plan": "team"])
    }

    @Test func handlersGetTheSessionTheLoggerAndTheEventAsBefore() throws {
        struct Boom: Error {}
        let logger = InMemoryLogger()
        let manager = TagManager(logger: logger)
        manager.add(try container())
        let seen = RecordingHandler { call in
            call.logger.info("from the handler", metadata: ["tag": String(call.tagID ?? -1)])
            throw Boom()
        }
        manager.register(tagHandler: seen, for: "t")
        let session = manager.makeDataLayer(sessionID: "session-7")
        session.push(event: "e")
        let call = try #require(seen.calls.first)
        #expect(call.dataLayer === session)
        #expect(call.eventName == "e")
        #expect(call.containerID == "GTM-TEST1" && call.tagID == 1)
        #expect(logger.entries.contains { $0.message == "from the handler" && $0.metadata["tag"] == "1" })
        // The evaluation's own messages carry the session it runs for.
        let threw = try #require(logger.entries.first { $0.message == "a tag handler threw" })
        #expect(threw.metadata["session"] == "session-7")
        #expect(threw.metadata["tag"] == "1")
    }

    @Test func theOncePerLoadTagsAPushFiresAreInTheSessionWhenThePushReturns() throws {
        struct Boom: Error {}
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try container())
        manager.register(tagHandler: ClosureTagHandler { _ in throw Boom() }, for: "t")
        let session = manager.makeDataLayer()
        #expect(session.push(event: "e").fired.first { $0.tagID == 1 }?.status.name == "failed")
        #expect(session.snapshot().firedOncePerLoad == ["GTM-TEST1#0", "GTM-TEST1#0!failed"])
        // Restored elsewhere, the session remembers the failed call: the tag is not called again.
        let restored = manager.makeDataLayer()
        restored.restore(session.snapshot())
        #expect(restored.push(event: "e").fired.first { $0.tagID == 1 } == nil)
    }
}
