import ContainerKit
import Testing

extension Fidelity {
    /// A served `gtm.js` names its own container (`ctid:"GTM-…"`, `containerId`): it runs under that id
    /// instead of `GTM-UNKNOWN` (issue 24, point 9).
    @Suite struct ScriptContainerIDTests {
        static let data = #"{"resource": {"version": "3", "macros": [{"function": "__e"}]}}"#

        @Test(arguments: [
            #"var ca = {ctid: "GTM-K1T5", canonicalContainerId: "123"};"#,
            #"Z.ctid = 'GTM-K1T5';"#,
            #"var x = {"containerId": "GTM-K1T5"};"#,
            #"var a = {xctid: "GTM-WRONG1"}, b = {ctid: "not-an-id"}, c = {ctid:"GTM-K1T5"};"#,
        ])
        func aServedScriptRunsUnderTheIDItNames(tail: String) throws {
            let script = "/* Copyright Google */\n(function(){\nvar data = \(Self.data);\n\(tail)\n})();\n"
            let container = try TestContainers.load(json: script, file: "gtm.js")
            #expect(container.id == "GTM-K1T5")
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
