import ContainerKit
import ContainerKitTesting
import TestSupport
import Testing

extension Fidelity {
    /// A 2016 GTM export (format 1.3) keeps its enabled built-in variables in
    /// `containerVersion.container.enabledBuiltInVariable` (GTM API v1's `Container.enabledBuiltInVariable`, a
    /// list of type names such as `event`, `appId`), not in a `builtInVariable` list (issue 42, point 7).
    @Suite struct EnabledBuiltInVariableTests {
        @Test func aTriggerOnTheEventBuiltInOfA2016ExportFires() throws {
            let container = try TestContainers.load(json: Fixtures.mobileExport2016, file: "export.json")
            #expect(container.id == "GTM-OLD16")
            #expect(container.variableNames.contains("Event"))
            #expect(container.variableNames.contains("App ID"))
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            let session = manager.makeDataLayer(context: ClientContext(appID: "com.example.shop"))
            session.push(event: "browse")
            session.push(event: "purchase")
            #expect(recorder.calls.map(\.arguments) == [["app": "com.example.shop", "version": "7"]])
        }

        @Test(arguments: [
            ("appVersionCode", "App Version Code"), ("APP_VERSION_CODE", "App Version Code"), ("event", "Event"),
            ("advertisingTrackingEnabled", "Advertiser Tracking Enabled"), ("resolution", "Screen Resolution"),
        ])
        func v1TypeNamesGetTheDisplayNamesGTMGivesThem(type: String, name: String) throws {
            let json = """
                {"exportFormatVersion": 1.3, "containerVersion": {"container": {"publicId": "GTM-OLD16",
                  "usageContext": ["ANDROID"], "enabledBuiltInVariable": ["\(type)"]}}}
                """
            #expect(try TestContainers.load(json: json, file: "export.json").variableNames.contains(name))
        }

        /// A type a `builtInVariable` entry names keeps that entry (and its name); only the others are added.
        @Test func aBuiltInVariableEntryWinsOverTheEnabledList() throws {
            let json = """
                {"exportFormatVersion": 2, "containerVersion": {"container": {"usageContext": ["ANDROID"],
                  "enabledBuiltInVariable": ["event", "appId"]},
                  "builtInVariable": [{"type": "EVENT", "name": "Event Name"}]}}
                """
            let names = try TestContainers.load(json: json, file: "GTM-TEST1.json").variableNames
            #expect(names.contains("Event Name") && names.contains("App ID") && !names.contains("Event"))
        }
    }
}
