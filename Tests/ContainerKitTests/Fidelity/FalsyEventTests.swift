import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// A pushed `event` that is falsy (`false`, `0`, `""`) is no event for GTM's web runtime (issue 42, point
    /// 4): gtm.js merges the message into the data layer and stops (`if (!a.event) return !1;` in 2018–2022
    /// scripts, `r.event ? (…) : q = !1` in 2024–2025 ones). Other values are events, compared in their string
    /// form (`String(a.event)`).
    @Suite struct FalsyEventTests {
        /// A container whose tag `t` fires on every event (an "all events" trigger: `_re .*` on the event), and
        /// whose tag `u` fires on the event named `name`.
        static func container(web: Bool, name: String = "0") throws -> Container {
            let json = """
                {"resource": {"version": "1", "macros": [{"function": "__e"}],
                  "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"},
                           {"function": "__funct", "tag_id": 2, "vtp_classPath": "u"}],
                  "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": ".*"},
                                 {"function": "_eq", "arg0": ["macro", 0], "arg1": "\(name)"}],
                  "rules": [[["if", 0], ["add", 0]], [["if", 1], ["add", 1]]]}}
                """
            return try TestContainers.load(
                json: web ? "var data = \(json);" : json,
                file: web ? "gtm.js" : "GTM-M1.json"
            )
        }

        static func fired(_ containers: [Container], _ message: ValueMap) -> (calls: [String], model: Value?) {
            let manager = TagManager(logger: InMemoryLogger())
            for container in containers { manager.add(container) }
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            manager.register(tagHandler: recorder, for: "u")
            let layer = manager.makeDataLayer()
            layer.push(message)
            return (recorder.calls.map(\.name), layer.get("event"))
        }

        @Test(arguments: [Value.bool(false), .int(0), .double(0), .string("")])
        func aFalsyEventOnlyUpdatesTheDataLayerOfAWebContainer(event: Value) throws {
            let result = Self.fired([try Self.container(web: true)], ["event": event, "x": 1])
            #expect(result.calls.isEmpty)
            #expect(result.model == event)
        }

        @Test func otherEventsAreComparedInTheirStringForm() throws {
            let web = try Self.container(web: true, name: "1")
            #expect(Self.fired([web], ["event": 1]).calls == ["t", "u"])
            #expect(Self.fired([try Self.container(web: true, name: "true")], ["event": true]).calls == ["t", "u"])
        }

        /// Mobile SDKs evaluate a message whose `event` is present, whatever its value: `0` is the event "0".
        @Test func aMobileContainerStillEvaluatesAFalsyEvent() throws {
            #expect(Self.fired([try Self.container(web: false)], ["event": 0]).calls == ["t", "u"])
        }

        /// A session with a web and a mobile container: only the mobile one sees the falsy event.
        @Test func aFalsyEventReachesOnlyTheMobileContainersOfASession() throws {
            let web = try Self.container(web: true)
            let mobile = try Self.container(web: false)
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(web)
            manager.add(mobile)
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            manager.register(tagHandler: recorder, for: "u")
            let result = manager.makeDataLayer().push(["event": ""])
            #expect(result.fired.count == 1)
            #expect(result.events.filter { !$0.fired.isEmpty }.map(\.containerID) == [mobile.id])
        }
    }
}
