import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// A web export's click, form, error, history and scroll built-in variables read what GTM's listeners push, as GTM
    /// compiles them (the corpus' `gtm.js` data: `{"function": "__v", "vtp_name": "gtm.elementUrl",
    /// "vtp_dataLayerVersion": 1}`); Debug Mode is false outside GTM's preview. They evaluated to undefined, so a
    /// "Click URL does not contain …" condition held on every click.
    @Suite struct WebBuiltInVariableTests {
        static let export = """
            {"exportFormatVersion": 2, "containerVersion": {
              "container": {"publicId": "GTM-TEST1", "usageContext": ["WEB"]},
              "builtInVariable": [
                {"type": "EVENT", "name": "Event"}, {"type": "CLICK_URL", "name": "Click URL"},
                {"type": "CLICK_CLASSES", "name": "Click Classes"}, {"type": "FORM_ID", "name": "Form ID"},
                {"type": "ERROR_LINE", "name": "Error Line"}, {"type": "HISTORY_SOURCE", "name": "History Source"},
                {"type": "NEW_HISTORY_URL", "name": "New History URL"},
                {"type": "SCROLL_DEPTH_THRESHOLD", "name": "Scroll Depth Threshold"},
                {"type": "DEBUG_MODE", "name": "Debug Mode"}, {"type": "CLICK_TEXT", "name": "Click Text"}]}}
            """

        @Test func theyReadWhatGTMsListenersPush() throws {
            let container = try TestContainers.load(json: Self.export, file: "GTM-TEST1.json")
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let session = manager.makeDataLayer()
            session.push([
                "event": "gtm.linkClick", "gtm.elementUrl": "https://example.com/about", "gtm.elementClasses": "nav",
                "gtm.elementId": "signup", "gtm.errorLineNumber": 12, "gtm.historyChangeSource": "pushState",
                "gtm.newUrl": "https://example.com/next", "gtm.scrollThreshold": 50,
            ])
            #expect(session.value(forKey: "Click URL") == "https://example.com/about")
            #expect(session.value(forKey: "Click Classes") == "nav")
            #expect(session.value(forKey: "Form ID") == "signup")
            #expect(session.value(forKey: "Error Line") == 12)
            #expect(session.value(forKey: "History Source") == "pushState")
            #expect(session.value(forKey: "New History URL") == "https://example.com/next")
            #expect(session.value(forKey: "Scroll Depth Threshold") == 50)
            #expect(session.value(forKey: "Debug Mode") == false)
            // Click Text reads the page, which a server does not have.
            #expect(session.value(forKey: "Click Text") == .undefined)
            #expect(container.unsupported.contains { $0.message.contains("'CLICK_TEXT'") })
            #expect(!container.unsupported.contains { $0.message.contains("'CLICK_URL'") })
        }

        /// An auto-event variable (`__aev`) reads the same values by its type, with its default value when missing;
        /// the types that read the page stay unsupported.
        @Test func autoEventVariablesReadTheListenersValues() throws {
            let classes = #"{"function": "__aev", "vtp_varType": "CLASSES", "vtp_defaultValue": "none"}"#
            let container = try Fidelity.resource(macro: classes, web: true)
            #expect(Fidelity.arguments(container, before: [["gtm.elementClasses": "btn buy"]])?["value"] == "btn buy")
            #expect(Fidelity.arguments(container)?["value"] == "none")
            let history = #"{"function": "__aev", "vtp_varType": "HISTORY_NEW_URL_FRAGMENT"}"#
            let pushed: [ValueMap] = [["gtm.newUrlFragment": "top"]]
            #expect(
                Fidelity.arguments(try Fidelity.resource(macro: history, web: true), before: pushed)?["value"] == "top"
            )
            let text = try Fidelity.resource(macro: #"{"function": "__aev", "vtp_varType": "TEXT"}"#, web: true)
            #expect(text.unsupported.contains { $0.message.contains("(TEXT)") })
        }

        /// A compiled container's Undefined Value (`__uv`) is undefined and Debug Mode (`__dbg`) false, as on a page
        /// outside GTM's preview: values ContainerKit knows, so no decision that reads them is reported as unknown.
        @Test func undefinedValueAndDebugModeAreKnownValues() throws {
            let undefinedValue = try Fidelity.resource(macro: #"{"function": "__uv"}"#, web: true)
            let arguments = try #require(Fidelity.arguments(undefinedValue))
            #expect(arguments["value"] == nil)  // an undefined argument is left out
            #expect(undefinedValue.unsupported.isEmpty)
            let debug = try Fidelity.resource(macro: #"{"function": "__dbg"}"#, web: true)
            #expect(Fidelity.arguments(debug)?["value"] == false)
            #expect(debug.unsupported.isEmpty)
        }
    }
}
