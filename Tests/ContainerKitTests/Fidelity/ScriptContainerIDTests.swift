import ContainerKit
import Testing

extension Fidelity {
    /// A served `gtm.js` names its own container (`ctid:"GTM-…"`, `containerId`, `a.set("containerId", …)`,
    /// `data.blob["5"]`): it runs under that id instead of `GTM-UNKNOWN` (issue 24, point 9; issue 42, point 6).
    @Suite struct ScriptContainerIDTests {
        static let data = #"{"resource": {"version": "3", "macros": [{"function": "__e"}]}}"#

        @Test(arguments: [
            #"var ca = {ctid: "GTM-K1T5", canonicalContainerId: "123"};"#,
            #"Z.ctid = 'GTM-K1T5';"#,
            #"var x = {"containerId": "GTM-K1T5"};"#,
            #"var a = {xctid: "GTM-WRONG1"}, b = {ctid: "not-an-id"}, c = {ctid:"GTM-K1T5"};"#,
            // Scripts of about 2022: the sandbox's `read_container_data` (`a.set("containerId", 'GTM-…')`).
            #"var Lf = function() { var a = new ib; a.set("containerId", 'GTM-K1T5'); a.set("version", '1590'); };"#,
            #"a.set("containerIdx", 'GTM-WRONG1'); b.set(containerId, 'GTM-WRONG2'); a.set('containerId', "GTM-K1T5");"#,
            // Scripts of about 2019–2021: a minified member beside the version or numeric id.
            #"var ld={},md=null,nd=Math.random();ld.s="GTM-K1T5";ld.Ob="783";ld.Md="";"#,
            #"var x = "GTM-WRONG1"; var y = {a:"GTM-WRONG2",b:"v1"}; var Ne={R:"GTM-K1T5",Yb:"504339"};"#,
        ])
        func aServedScriptRunsUnderTheIDItNames(tail: String) throws {
            let script = "/* Copyright Google */\n(function(){\nvar data = \(Self.data);\n\(tail)\n})();\n"
            let container = try TestContainers.load(json: script, file: "gtm.js")
            #expect(container.id == "GTM-K1T5")
        }

        /// Scripts of 2025 and later keep the id in `data.blob["5"]`: `ctid: Oi(5, "GTM-…")` reads it, falling
        /// back to the literal only when the blob lacks it.
        @Test func aServedScriptRunsUnderTheIDOfItsDataBlob() throws {
            let data = #"""
                {"resource": {"version": "3", "macros": [{"function": "__e"}]}, "runtime": [],
                 "blob": {"1": "2", "10": "GTM-K1T5", "5": "GTM-K1T5", "6": "194183940", "9": "GTM-K1T5"}}
                """#
            let tail = #"var ng = {ctid: Oi(5, "GTM-K1T5"), canonicalContainerId: Oi(6, "194183940")};"#
            let script = "/* Copyright Google */\n(function(){\nvar data = \(data);\n\(tail)\n})();\n"
            #expect(try TestContainers.load(json: script, file: "gtm.js").id == "GTM-K1T5")
            let bare = "(function(){var data = \(data);})();"
            #expect(try TestContainers.load(json: bare, file: "gtm.js").id == "GTM-K1T5")
            let wrong = #"(function(){var data = {"resource": {"version": "3"}, "blob": {"5": "G-K1T5"}};})();"#
            #expect(try TestContainers.load(json: wrong, file: "gtm.js").id == "GTM-UNKNOWN")
        }

        @Test func aScriptThatNamesNoIDIsStillUnknown() throws {
            let script = "// gtm.js\nvar data = \(Self.data);\nvar ctid = 42;\n"
            #expect(try TestContainers.load(json: script, file: "gtm.js").id == "GTM-UNKNOWN")
        }

        @Test func theFileNameStillComesFirst() throws {
            let script = "// gtm.js\nvar data = \(Self.data);\nvar ca = {ctid: \"GTM-K1T5\"};\n"
            #expect(try TestContainers.load(json: script, file: "GTM-FILE1.json").id == "GTM-FILE1")
        }
    }
}
