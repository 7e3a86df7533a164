import ContainerKit
import ContainerKitTesting
import Testing

/// The suite of the tests that check ContainerKit against GTM's own runtime (`swift test --filter Fidelity`).
@Suite enum Fidelity {}

extension Fidelity {
    /// Pushes `event` with `parameters` into a fresh session of `container` and returns the arguments the
    /// function-call tag with class path `t` received (`nil` when it did not fire).
    static func arguments(
        _ container: Container,
        event: String = "e",
        parameters: ValueMap = [:],
        before: [ValueMap] = []
    ) -> ValueMap? {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let recorder = RecordingHandler()
        manager.register(tagHandler: recorder, for: "t")
        let session = manager.makeDataLayer()
        for push in before { session.push(push) }
        session.push(event: event, parameters: parameters)
        return recorder.calls.first?.arguments
    }

    /// A compiled resource whose tag `t` fires on event `e` with the argument `value` = macro 1, the macro
    /// `macro` (the JSON of one macro; macro 0 is the event name, further macros from `more`).
    static func resource(macro: String, more: String = "", web: Bool = false) throws -> Container {
        let json = """
            {"resource": {"version": "1", "macros": [{"function": "__e"}, \(macro)\(more)],
              "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t",
                "vtp_functionArgument": ["list", ["map", "key", "value", "value", ["macro", 1]]]}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}],
              "rules": [[["if", 0], ["add", 0]]]}}
            """
        return try TestContainers.load(
            json: web ? "var data = \(json);" : json,
            file: web ? "gtm.js" : "GTM-TEST1.json"
        )
    }
}
