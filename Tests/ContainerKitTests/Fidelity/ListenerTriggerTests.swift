import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// An export's listener triggers (link click, timer, form, element visibility, scroll depth) compile as GTM
    /// compiles them: the listener's push names the triggers it fires for (`gtm.triggers`: `"1234_30"`), so another
    /// trigger of the same type does not fire; and "Enable this trigger when" (`autoEventFilter`) is the listener's
    /// condition at page load, not tested again at its push.
    @Suite struct ListenerTriggerTests {
        /// Two timers (30: enabled when `section` is `help`; 31) and two visibility triggers (50, 51), each firing a
        /// function-call tag `t` named after it.
        static func export(containerID: String? = "1234") -> String {
            let id = containerID.map { #""containerId": "\#($0)", "# } ?? ""
            func tag(_ n: Int, _ trigger: Int) -> String {
                #"{"tagId": "\#(n)", "name": "tag\#(trigger)", "type": "funct", "firingTriggerId": ["\#(trigger)"], "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "t"}, {"type": "LIST", "key": "functionArgument", "list": [{"type": "MAP", "map": [{"type": "TEMPLATE", "key": "key", "value": "trigger"}, {"type": "TEMPLATE", "key": "value", "value": "\#(trigger)"}]}]}]}"#
            }
            return """
                {"exportFormatVersion": 2, "containerVersion": {\(id)
                  "container": {"publicId": "GTM-TEST1", "usageContext": ["WEB"]},
                  "variable": [{"name": "section", "type": "v", "parameter": [
                    {"type": "TEMPLATE", "key": "name", "value": "section"}, {"type": "INTEGER", "key": "dataLayerVersion", "value": "2"}]}],
                  "trigger": [
                    {"triggerId": "30", "name": "timer 30", "type": "TIMER", "autoEventFilter": [{"type": "EQUALS",
                      "parameter": [{"type": "TEMPLATE", "key": "arg0", "value": "{{section}}"},
                                    {"type": "TEMPLATE", "key": "arg1", "value": "help"}]}]},
                    {"triggerId": "31", "name": "timer 31", "type": "TIMER"},
                    {"triggerId": "50", "name": "visible 50", "type": "ELEMENT_VISIBILITY"},
                    {"triggerId": "51", "name": "visible 51", "type": "ELEMENT_VISIBILITY"}],
                  "tag": [\(tag(1, 30)), \(tag(2, 31)), \(tag(3, 50)), \(tag(4, 51))]}}
                """
        }

        func fired(_ pushes: [ValueMap], containerID: String? = "1234") throws -> [[Value]] {
            let container = try TestContainers.load(json: Self.export(containerID: containerID), file: "GTM-TEST1.json")
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            let session = manager.makeDataLayer()
            var fired: [[Value]] = []
            for push in pushes {
                let before = recorder.calls.count
                session.push(push)
                fired.append(recorder.calls.dropFirst(before).compactMap { $0.arguments["trigger"] })
            }
            return fired
        }

        @Test func aListenersPushFiresOnlyTheTriggersItNames() throws {
            let pushes: [ValueMap] = [
                ["event": "gtm.elementVisibility", "gtm.triggers": "1234_50"],
                ["event": "gtm.elementVisibility", "gtm.triggers": "1234_50,1234_51"],
                ["event": "gtm.timer", "gtm.triggers": "1234_31"],
                ["event": "gtm.timer", "gtm.triggers": "99_30"],
            ]
            #expect(try fired(pushes) == [["50"], ["50", "51"], ["31"], []])
        }

        /// A push that names no trigger (written by hand) fires every trigger of its type, as GTM's `(^$|…)` allows.
        @Test func aPushThatNamesNoTriggerFiresEveryOne() throws {
            #expect(try fired([["event": "gtm.elementVisibility"]]) == [["50", "51"]])
            // Without the export's numeric container ID the triggers cannot be named: every one fires.
            #expect(
                try fired([["event": "gtm.timer", "gtm.triggers": "1234_31"]], containerID: nil) == [["30", "31"]]
            )
        }

        /// "Enable this trigger when section equals help" held when the page installed timer 30's listener; the
        /// section changed since, and its push still fires it.
        @Test func enablingConditionsAreNotTestedAgainAtTheListenersPush() throws {
            let pushes: [ValueMap] = [
                ["event": "gtm.js", "section": "help"], ["section": "shop"],
                ["event": "gtm.timer", "gtm.triggers": "1234_30"],
            ]
            #expect(try fired(pushes) == [[], [], ["30"]])
        }
    }
}
