import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// `__e` reports a Firebase short name (`_vs`) as the container's own runtime does: a v5 container's `__e_main`
    /// carries its own table (`b = {"_f": "first_open", …}; a = b[a] || a`), older ones without `_vs`; a web
    /// container's `__e` reports the name as pushed.
    @Suite struct FirebaseShortNameTests {
        /// Tag `t` gets `{{Event Name}}` on every event; `runtime` is the container's runtime section, if any.
        static func container(runtime: String?, web: Bool = false, id: String = "GTM-TEST1") throws -> Container {
            let runtimeMember = runtime.map { #", "runtime": \#($0)"# } ?? ""
            let json = """
                {"resource": {"version": "1", "macros": [{"function": "__e"}],
                  "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t",
                    "vtp_functionArgument": ["list", ["map", "key", "event", "value", ["macro", 0]]]}],
                  "predicates": [{"function": "_re", "arg0": ["macro", 0], "arg1": "."}],
                  "rules": [[["if", 0], ["add", 0]]]}\(runtimeMember)}
                """
            return try TestContainers.load(
                json: web ? "var data = \(json);" : json,
                file: web ? "gtm.js" : id + ".json"
            )
        }

        /// A runtime whose table knows `_f` and `_e` only (as GTM-TSCXGGQ's knows no `_vs`).
        static let oldRuntime =
            #"[[50, "__e_main", [46], [41, "a", "b"], [3, "b", [8, "_f", "first_open", "_e", "user_engagement"]]]]"#

        func reported(_ event: String, by containers: [Container]) -> [Value?] {
            let manager = TagManager(logger: InMemoryLogger())
            for container in containers { manager.add(container) }
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            manager.makeDataLayer().push(event: event)
            return recorder.calls.map { $0.arguments["event"] }
        }

        @Test func aV5ContainerReportsShortNamesByItsOwnTable() throws {
            let old = try Self.container(runtime: Self.oldRuntime)
            #expect(reported("_vs", by: [old]) == ["_vs"])
            #expect(reported("_e", by: [old]) == ["user_engagement"])
            // Without a runtime, a mobile container uses the newest table.
            #expect(reported("_vs", by: [try Self.container(runtime: nil)]) == ["screen_view"])
            #expect(reported("screen_view", by: [old]) == ["screen_view"])
        }

        @Test func aWebContainerReportsTheNameAsPushed() throws {
            #expect(reported("_e", by: [try Self.container(runtime: nil, web: true)]) == ["_e"])
        }

        /// Two containers live in one session report the same push each by its own table.
        @Test func eachLiveContainerReportsByItsOwnTable() throws {
            let mobile = try Self.container(runtime: nil, id: "GTM-MOBILE1")
            let web = try Self.container(runtime: nil, web: true)
            #expect(Set(reported("_e", by: [mobile, web])) == ["user_engagement", "_e"])
            #expect(
                Set(reported("_vs", by: [mobile, try Self.container(runtime: Self.oldRuntime, id: "GTM-OLD1")])) == [
                    "screen_view", "_vs",
                ]
            )
        }
    }
}
