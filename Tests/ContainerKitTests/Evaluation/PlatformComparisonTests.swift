import ContainerKit
import ContainerKitTesting
import Testing

/// An export whose one tag fires on event `e` when `{{Cookie}} <type> <value>` holds; `Cookie` reads the
/// data-layer key `cookie`, which the tests leave out.
private func export(usageContext: String, type: String = "EQUALS", value: String = "undefined") -> String {
    """
    {"exportFormatVersion": 2, "containerVersion": {
      "container": {"publicId": "GTM-PLAT1", "usageContext": ["\(usageContext)"]},
      "variable": [{"variableId": "1", "name": "Cookie", "type": "v", "parameter": [
        {"type": "TEMPLATE", "key": "name", "value": "cookie"},
        {"type": "INTEGER", "key": "dataLayerVersion", "value": "2"}]}],
      "trigger": [{"triggerId": "2", "name": "E", "type": "CUSTOM_EVENT",
        "customEventFilter": [{"type": "EQUALS", "parameter": [
          {"type": "TEMPLATE", "key": "arg0", "value": "{{_event}}"},
          {"type": "TEMPLATE", "key": "arg1", "value": "e"}]}],
        "filter": [{"type": "\(type)", "parameter": [
          {"type": "TEMPLATE", "key": "arg0", "value": "{{Cookie}}"},
          {"type": "TEMPLATE", "key": "arg1", "value": "\(value)"}]}]}],
      "tag": [{"tagId": "3", "name": "T", "type": "funct", "firingTriggerId": ["2"], "parameter": [
        {"type": "TEMPLATE", "key": "classPath", "value": "t"}]}]
    }}
    """
}

/// A compiled resource (the same one-tag container) with `extra` top-level members.
private func resource(
    _ extra: String = "",
    macros: String = #"{"function": "__v", "vtp_name": "cookie"}"#,
    tag: String = "__funct"
) -> String {
    """
    {\(extra)"resource": {"version": "1", "macros": [{"function": "__e"}, \(macros)],
      "tags": [{"function": "\(tag)", "tag_id": 1, "vtp_classPath": "t"}],
      "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                     {"function": "_eq", "arg0": ["macro", 1], "arg1": "undefined"}],
      "rules": [[["if", 0, 1], ["add", 0]]]}}
    """
}

private func fires(_ container: Container) -> Bool {
    let manager = TagManager(logger: InMemoryLogger())
    manager.add(container)
    return !manager.makeDataLayer().push(event: "e", parameters: [:]).fired.isEmpty
}

struct PlatformComparisonTests {
    @Test(arguments: [
        ("WEB", ContainerPlatform.web), ("ANDROID_SDK_5", .mobile), ("IOS_SDK_5", .mobile),
    ])
    func exportPlatformComesFromUsageContext(context: String, platform: ContainerPlatform) throws {
        let container = try TestContainers.load(json: export(usageContext: context))
        #expect(container.platform == platform)
    }

    @Test func webContainerComparesUndefinedAsText() throws {
        let container = try TestContainers.load(json: export(usageContext: "WEB"))
        #expect(container.platform.comparesUndefinedAsText)
        #expect(fires(container))
    }

    @Test func mobileContainerTreatsUndefinedOperandAsFalse() throws {
        let container = try TestContainers.load(json: export(usageContext: "ANDROID_SDK_5"))
        #expect(!fires(container))
    }

    @Test(arguments: [
        ("CONTAINS", "defin", true), ("STARTS_WITH", "undef", true), ("ENDS_WITH", "ned", true),
        ("MATCH_REGEX", "^undefined$", true), ("EQUALS", "", false), ("GREATER", "0", false),
    ])
    func webStringOperatorsSeeTheTextUndefined(type: String, value: String, expected: Bool) throws {
        let container = try TestContainers.load(json: export(usageContext: "WEB", type: type, value: value))
        #expect(fires(container) == expected)
    }

    @Test func gtmJSScriptIsAWebContainer() throws {
        let container = try TestContainers.load(json: "var data = " + resource() + ";", file: "gtm.js")
        #expect(container.platform == .web)
        #expect(fires(container))
    }

    @Test func mobileFileWithFingerprintIsAMobileContainer() throws {
        let container = try TestContainers.load(json: resource(#""fingerprint": "MQ$0", "#))
        #expect(container.platform == .mobile)
        #expect(!fires(container))
    }

    @Test func resourceWithoutFingerprintIsDecidedByItsTemplates() throws {
        let web = try TestContainers.load(
            json: resource(macros: #"{"function": "__u", "vtp_component": "URL"}"#, tag: "__html")
        )
        #expect(web.platform == .web)
        let mobile = try TestContainers.load(
            json: resource(macros: #"{"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "cookie"}"#)
        )
        #expect(mobile.platform == .mobile)
    }

    @Test func loadOptionsOverrideThePlatform() throws {
        let bytes = Array(export(usageContext: "ANDROID_SDK_5").utf8)
        let container = try ContainerLoader(options: LoadOptions(platform: .web)).load(bytes: bytes)
        #expect(container.platform == .web)
        #expect(fires(container))
    }
}
