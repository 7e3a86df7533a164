import ContainerKit
import ContainerKitTesting
import Synchronization
import Testing

extension Fidelity {
    /// GTM's runtimes evaluate a variable at each reference (gtm.js's `"macro"` case; the mobile SDKs never cache a
    /// function call): a function-call variable's handler is asked each time the event reads it, not once per event.
    @Suite struct FunctionCallVariableTests {
        /// Tag `t` gets the variable twice (`first`, `second`), and a condition reads it once more.
        static let json = """
            {"resource": {"version": "1",
              "macros": [{"function": "__e"},
                {"function": "__funcm", "instance_name": "counter", "vtp_classPath": "com.example.Counter"}],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t",
                "vtp_functionArgument": ["list", ["map", "key", "first", "value", ["macro", 1]],
                  ["map", "key", "second", "value", ["macro", 1]]]}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                {"function": "_gt", "arg0": ["macro", 1], "arg1": 0}],
              "rules": [[["if", 0, 1], ["add", 0]]]}}
            """

        @Test func aFunctionCallVariableAsksItsHandlerAtEachReference() throws {
            let container = try TestContainers.load(json: Self.json, file: "GTM-TEST1.json")
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let count = Mutex(0)
            manager.register(
                macroHandler: ClosureMacroHandler { _ in
                    .int(
                        count.withLock { count in
                            count += 1
                            return Int64(count)
                        }
                    )
                },
                for: "com.example.Counter"
            )
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            let session = manager.makeDataLayer()
            let trace = try #require(session.push(event: "e", tracing: true).trace)
            // The condition read 1, the tag's arguments 2 and 3: three calls, and no more for the trace.
            #expect(count.withLock { $0 } == 3)
            #expect(recorder.calls.first?.arguments == ["first": 2, "second": 3])
            #expect(trace.evaluations.first?.variables.filter { $0.name == "counter" }.map(\.value) == [3])
        }
    }
}
