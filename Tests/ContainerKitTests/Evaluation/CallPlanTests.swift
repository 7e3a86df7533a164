import ContainerKit
import ContainerKitTesting
import Testing

/// One evaluation serves every container of a push, and each planned call reads the handler the registry
/// held when the push started: these pin what that reuse and that resolution must not change.
struct CallPlanTests {
    /// A container whose tag (class path `path`) fires on `e` and passes its macro 1 as argument `v`.
    private func container(id: String, macro: String) throws -> Container {
        try TestContainers.resource(
            macros: "[{\"function\": \"__e\"}, \(macro)]",
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "path",
                  "vtp_functionArgument": ["list", ["map", "key", "v", "value", ["macro", 1]]]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#,
            id: id
        )
    }

    @Test func eachContainerOfAPushEvaluatesItsOwnMacros() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(
            try container(id: "GTM-AAAA", macro: #"{"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "a"}"#)
        )
        manager.add(try container(id: "GTM-BBBB", macro: #"{"function": "__c", "vtp_value": "from B"}"#))
        let recorder = RecordingHandler()
        manager.register(tagHandler: recorder, for: "path")
        let session = manager.makeDataLayer()
        for _ in 0..<2 {
            let result = session.push(event: "e", parameters: ["a": "from A"])
            #expect(result.events.map(\.containerID) == ["GTM-AAAA", "GTM-BBBB"])
            #expect(result.fired.map(\.parameters) == [["v": "from A"], ["v": "from B"]])
        }
        #expect(recorder.calls.map(\.containerID) == ["GTM-AAAA", "GTM-BBBB", "GTM-AAAA", "GTM-BBBB"])
    }

    @Test func aHandlerRegisteredReplacedOrRemovedAfterTheSessionStartedIsTheOneCalled() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try container(id: "GTM-AAAA", macro: #"{"function": "__c", "vtp_value": "x"}"#))
        let session = manager.makeDataLayer()
        #expect(session.push(event: "e").fired.map(\.status) == [.unhandled])
        let first = RecordingHandler()
        manager.register(tagHandler: first, for: "path")
        #expect(session.push(event: "e").fired.map(\.status) == [.ok])
        let second = RecordingHandler()
        manager.register(tagHandler: second, for: "path")
        #expect(session.push(event: "e").fired.map(\.status) == [.ok])
        manager.unregisterTagHandler(for: "path")
        #expect(session.push(event: "e").fired.map(\.status) == [.unhandled])
        #expect(first.calls.count == 1)
        #expect(second.calls.count == 1)
    }
}
