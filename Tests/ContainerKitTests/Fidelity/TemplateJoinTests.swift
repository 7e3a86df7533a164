import ContainerKit
import Testing

extension Fidelity {
    /// gtm.js joins a template's parts with `parts.join("")`, which prints `null` and `undefined` as nothing: a
    /// constant `x-{{A}}-y` with `A` missing is `x--y` in a web container.
    @Suite struct TemplateJoinTests {
        static let template = #"{"function": "__c", "vtp_value": ["template", "x-", ["macro", 2], "-y"]}"#
        static let input = #", {"function": "__v", "vtp_name": "a", "vtp_dataLayerVersion": 2}"#

        @Test func aWebTemplatePrintsNothingForNullOrUndefined() throws {
            let container = try Fidelity.resource(macro: Self.template, more: Self.input, web: true)
            #expect(Fidelity.arguments(container)?["value"] == "x--y")
            #expect(Fidelity.arguments(container, before: [["a": .null]])?["value"] == "x--y")
            #expect(Fidelity.arguments(container, before: [["a": 0]])?["value"] == "x-0-y")
            #expect(Fidelity.arguments(container, before: [["a": ["b", .null]]])?["value"] == "x-b,-y")
            // Parts that are all constant are joined when the evaluation knows the platform, not folded before.
            let constant = #"{"function": "__c", "vtp_value": ["template", "[", null, "]"]}"#
            let folded = try Fidelity.resource(macro: constant, web: true)
            #expect(Fidelity.arguments(folded)?["value"] == "[]")
        }

        /// A mobile container prints them by name, as before (what the mobile SDKs print is not known here).
        @Test func aMobileTemplatePrintsThemByName() throws {
            let container = try Fidelity.resource(macro: Self.template, more: Self.input, web: false)
            #expect(Fidelity.arguments(container)?["value"] == "x-undefined-y")
            let constant = #"{"function": "__c", "vtp_value": ["template", "[", null, "]"]}"#
            #expect(Fidelity.arguments(try Fidelity.resource(macro: constant, web: false))?["value"] == "[null]")
        }
    }
}
