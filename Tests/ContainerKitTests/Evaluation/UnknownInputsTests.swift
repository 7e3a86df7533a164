import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

/// A decision that reads what ContainerKit cannot evaluate as a page would (a browser-only variable, custom
/// JavaScript, a CSS selector condition) is made with it undefined; the result and the trace say so, for each tag
/// whose triggers read one, through the variables that read it.
struct UnknownInputsTests {
    /// Tag 1 fires on `gtm.js` unless `{{Page Hostname}}` (`__u`) contains "staging"; tag 2 on `gtm.js` when the
    /// lookup `{{Section}}` of `{{Page Hostname}}` is not "admin"; tag 3 on `gtm.js` alone; tag 4 on a CSS selector
    /// condition (which never holds here).
    static let json = """
        {"resource": {"version": "1",
          "macros": [{"function": "__e", "instance_name": "Event"},
            {"function": "__u", "vtp_component": "HOST", "instance_name": "Page Hostname"},
            {"function": "__smm", "vtp_input": ["macro", 1], "instance_name": "Section",
             "vtp_map": ["list", ["map", "key", "admin.example.com", "value", "admin"]]}],
          "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "one"},
                   {"function": "__funct", "tag_id": 2, "vtp_classPath": "two"},
                   {"function": "__funct", "tag_id": 3, "vtp_classPath": "three"},
                   {"function": "__funct", "tag_id": 4, "vtp_classPath": "four"}],
          "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "gtm.js"},
                         {"function": "_cn", "arg0": ["macro", 1], "arg1": "staging"},
                         {"function": "_eq", "arg0": ["macro", 2], "arg1": "admin", "negate": true},
                         {"function": "_css", "arg0": ["macro", 0], "arg1": "#hero"}],
          "rules": [[["if", 0], ["unless", 1], ["add", 0]], [["if", 0, 2], ["add", 1]], [["if", 0], ["add", 2]],
                    [["if", 0, 3], ["add", 3]]]},
         "permissions": {}}
        """

    static func session() throws -> DataLayer {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try ContainerLoader().load(bytes: Array(json.utf8)))
        return manager.makeDataLayer()
    }

    @Test func aFiredTagSaysWhichOfItsInputsCannotBeEvaluatedThroughTheVariablesThatReadThem() throws {
        let result = try Self.session().push(event: "gtm.js")
        let fired = Dictionary(uniqueKeysWithValues: result.fired.map { ($0.classPath ?? "", $0.unknownInputs) })
        #expect(fired["one"] == ["{{Page Hostname}}"])
        #expect(fired["two"] == ["{{Section}}"])  // a lookup of the hostname
        #expect(fired["three"] == [])
        #expect(fired["four"] == nil)  // a CSS selector condition never holds here
        // In both JSON forms, only where there are any.
        let one = try #require(result.fired.first { $0.classPath == "one" })
        #expect(one.jsonValue.objectValue?["unknown_inputs"] == ["{{Page Hostname}}"])
        var bytes: [UInt8] = []
        one.appendJSON(to: &bytes)
        #expect(try Value(jsonBytes: bytes) == one.jsonValue)
        let three = try #require(result.fired.first { $0.classPath == "three" })
        #expect(three.jsonValue.objectValue?["unknown_inputs"] == nil)
    }

    /// The page's URL given (the session's context, or a pushed `gtm.url`), Page Hostname is decided as a page
    /// would decide it, and no longer reported; a CSS selector still is.
    @Test func thePagesURLMakesItsVariablesKnown() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try ContainerLoader().load(bytes: Array(Self.json.utf8)))
        let staging = manager.makeDataLayer(context: ClientContext(pageURL: "https://staging.example.com/"))
        let result = staging.push(event: "gtm.js", tracing: true)
        let fired = Dictionary(uniqueKeysWithValues: result.fired.map { ($0.classPath ?? "", $0.unknownInputs) })
        #expect(fired["one"] == nil)  // blocked: the hostname contains "staging"
        #expect(fired["two"] == [])
        let tags = try #require(result.trace?.evaluations.first?.tags)
        #expect(tags[1].unknownInputs == nil)
        #expect(tags[3].failedConditions?.first?.note?.hasPrefix("_css cannot be evaluated here") == true)

        let pushed = manager.makeDataLayer()
        pushed.push(["gtm.url": "https://www.example.com/"])
        let live = pushed.push(event: "gtm.js")
        #expect(live.fired.first { $0.classPath == "one" }?.unknownInputs == [])
        // The referrer is not what these conditions read: knowing it alone changes nothing.
        let referred = manager.makeDataLayer(context: ClientContext(referrer: "https://www.example.com/"))
        #expect(
            referred.push(event: "gtm.js").fired.first { $0.classPath == "one" }?.unknownInputs == ["{{Page Hostname}}"]
        )
    }

    @Test func theTraceNotesTheConditionsAndTheTagsThatReadThem() throws {
        let trace = try #require(Self.session().push(event: "gtm.js", tracing: true).trace)
        let tags = try #require(trace.evaluations.first?.tags)
        #expect(tags[0].unknownInputs == ["{{Page Hostname}}"])
        #expect(tags[2].unknownInputs == nil)
        let css = try #require(tags[3].failedConditions?.first)
        #expect(css.operator == "_css")
        #expect(css.note?.hasPrefix("_css cannot be evaluated here") == true)
        #expect(trace.textLines.contains { $0.contains("decided with {{Page Hostname}} undefined") })
        // Read back from its JSON.
        let read = try PushTrace(json: trace.json())
        #expect(read.evaluations.first?.tags[0].unknownInputs == ["{{Page Hostname}}"])
    }

    /// The walk through the variables has a stack of its own: a chain of 20,000 macros ending in a browser-only one,
    /// and a cycle, are followed without exhausting the thread's.
    @Test func aLongChainOfVariablesAndACycleAreFollowed() throws {
        let count = 20_000
        var macros = [#"{"function": "__e"}"#]
        for index in 1..<count { macros.append(#"{"function": "__c", "vtp_value": ["macro", \#(index + 1)]}"#) }
        macros.append(#"{"function": "__u", "vtp_component": "HOST"}"#)
        // A cycle: macro count + 1 reads count + 2, which reads count + 1.
        macros.append(#"{"function": "__c", "vtp_value": ["macro", \#(count + 2)]}"#)
        macros.append(#"{"function": "__c", "vtp_value": ["macro", \#(count + 1)]}"#)
        let container = try TestContainers.resource(
            macros: "[" + macros.joined(separator: ",") + "]",
            tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "chain"},"#
                + #" {"function": "__funct", "tag_id": 2, "vtp_classPath": "cycle"}]"#,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},"#
                + #" {"function": "_eq", "arg0": ["macro", 1], "arg1": "x", "negate": true},"#
                + #" {"function": "_eq", "arg0": ["macro", \#(count + 1)], "arg1": "x", "negate": true}]"#,
            rules: #"[[["if", 0, 1], ["add", 0]], [["if", 0, 2], ["add", 1]]]"#
        )
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let fired = manager.makeDataLayer().push(event: "e").fired
        #expect(fired.first { $0.classPath == "chain" }?.unknownInputs == ["{{__c}}"])
        #expect(fired.first { $0.classPath == "cycle" }?.unknownInputs == [])
    }
}
