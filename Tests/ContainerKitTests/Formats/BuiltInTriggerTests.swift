import ContainerKit
import ContainerKitTesting
import Testing

/// Built-in trigger ids in exports: tags refer to them in `firingTriggerId` with no trigger object.
struct BuiltInTriggerTests {
    static func export(trigger id: String, usageContext: String = "IOS_SDK_5") -> String {
        """
        {"exportFormatVersion": 2, "containerVersion": {
          "container": {"publicId": "GTM-BUILT1", "usageContext": ["\(usageContext)"]},
          "tag": [{"tagId": "1", "name": "Every event", "type": "funct", "firingTriggerId": ["\(id)"],
            "parameter": [{"type": "TEMPLATE", "key": "classPath", "value": "com.example.Tag"}]}]}}
        """
    }

    static func fired(_ container: Container, event: String) -> Int {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        return manager.makeDataLayer().push(event: event, parameters: [:]).fired.count
    }

    @Test(arguments: ["2147479556", "2147479554", "2147479555"])
    func mobileBuiltInTriggersFireOnEveryEvent(id: String) throws {
        let container = try TestContainers.load(json: Self.export(trigger: id))
        #expect(container.unsupported.isEmpty)
        #expect(Self.fired(container, event: "screen_view") == 1)
        #expect(Self.fired(container, event: "purchase") == 1)
    }

    @Test func webBuiltInTriggerInAMobileContainerIsReportedByName() throws {
        let container = try TestContainers.load(json: Self.export(trigger: "2147479553"))
        let notes = container.unsupported.map(\.message)
        #expect(notes == ["web built-in trigger 'All Pages' (2147479553) in a mobile container is not supported"])
        #expect(Self.fired(container, event: "screen_view") == 0)
    }

    @Test func webBuiltInTriggerInAWebContainerFiresOnItsEvent() throws {
        let container = try TestContainers.load(json: Self.export(trigger: "2147479553", usageContext: "WEB"))
        #expect(container.unsupported.isEmpty)
        #expect(Self.fired(container, event: "gtm.js") == 1)
        #expect(Self.fired(container, event: "gtm.dom") == 0)
    }

    @Test func undocumentedBuiltInTriggerIsReportedAndNeverFires() throws {
        let container = try TestContainers.load(json: Self.export(trigger: "2147479600"))
        #expect(container.unsupported.map(\.message) == ["undocumented built-in trigger '2147479600' is not supported"])
        #expect(Self.fired(container, event: "screen_view") == 0)
    }
}
