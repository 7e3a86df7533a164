import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// A 1st-Party Cookie variable (`__k`) reads the first cookie of its name from the data layer's `gtm.cookie`
    /// (version 1) when pushed, else from the page's cookies the session's client context gives (a `Cookie` header's
    /// text, as `document.cookie` has it): names and values trimmed, the value URI-decoded when the variable asks.
    /// Without either it stays undefined, and a decision that reads it says so.
    @Suite struct CookieVariableTests {
        static let cookies = #"a=1; consent=%7B%22ads%22%3Atrue%7D;a=2 ;  spaced = x y ; bad=%E0%A4%A; empty="#

        static func value(_ macro: String, cookies: String? = cookies, before: [ValueMap] = []) throws -> Value? {
            let container = try Fidelity.resource(macro: macro, web: true)
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            let session = manager.makeDataLayer(context: ClientContext(cookies: cookies))
            for push in before { session.push(push) }
            session.push(event: "e")
            return try #require(recorder.calls.first?.arguments)["value"]
        }

        static func cookie(_ name: String, decode: Bool = false) -> String {
            #"{"function": "__k", "vtp_name": "\#(name)", "vtp_decodeCookie": \#(decode)}"#
        }

        @Test func theFirstCookieOfItsNameIsRead() throws {
            #expect(try Self.value(Self.cookie("a")) == "1")
            #expect(try Self.value(Self.cookie("spaced")) == "x y")
            #expect(try Self.value(Self.cookie("empty")) == "")
            #expect(try Self.value(Self.cookie("missing")) == nil)  // undefined: left out of the arguments
            #expect(try Self.value(Self.cookie("consent")) == "%7B%22ads%22%3Atrue%7D")
            #expect(try Self.value(Self.cookie("consent", decode: true)) == #"{"ads":true}"#)
            // `decodeURIComponent` throws, and gtm.js's macro expander makes the variable false.
            #expect(try Self.value(Self.cookie("bad", decode: true)) == false)
        }

        @Test func aPushedGtmCookieComesFirstAndWithoutCookiesItIsUndefined() throws {
            #expect(try Self.value(Self.cookie("a"), before: [["gtm.cookie": "a=pushed"]]) == "pushed")
            #expect(try Self.value(Self.cookie("a"), cookies: nil) == nil)
            #expect(try Self.value(Self.cookie("a"), cookies: nil, before: [["gtm.cookie": "a=pushed"]]) == "pushed")
        }

        /// A condition on a cookie is reported as read without the page's cookies until the session has them.
        @Test func aDecisionOnACookieSaysWhetherTheCookiesWereKnown() throws {
            let json = """
                {"resource": {"version": "1",
                  "macros": [{"function": "__e"},
                    {"function": "__k", "vtp_name": "consent", "instance_name": "Consent Cookie"}],
                  "tags": [{"function": "__funct", "tag_id": 1, "vtp_classPath": "t"}],
                  "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                                 {"function": "_eq", "arg0": ["macro", 1], "arg1": "denied"}],
                  "rules": [[["if", 0], ["unless", 1], ["add", 0]]]},
                 "permissions": {}}
                """
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(try ContainerLoader().load(bytes: Array(json.utf8)))
            let unknown = manager.makeDataLayer().push(event: "e")
            #expect(unknown.fired.first?.unknownInputs == ["{{Consent Cookie}}"])
            let granted = manager.makeDataLayer(context: ClientContext(cookies: "consent=granted")).push(event: "e")
            #expect(granted.fired.first?.unknownInputs == [])
            let denied = manager.makeDataLayer(context: ClientContext(cookies: "consent=denied")).push(event: "e")
            #expect(denied.fired.isEmpty)
        }
    }
}
