import ContainerKit
import ContainerKitTesting
import Testing

extension Fidelity {
    /// Page URL, Page Hostname, Page Path, URL variables (`__u`) and the Referrer (`__f`), as served gtm.js of 2026
    /// computes them (its `legacyUrls` module, run under node): from the data layer's `gtm.url` / `gtm.referrer`
    /// (version 1) when pushed, else the page's URL and referrer the session's client context gives (a browser's
    /// `location.href` and `document.referrer`), taken apart as a browser's `<a href>` does. Without either they stay
    /// undefined, and a decision that reads one says so.
    @Suite struct PageURLVariableTests {
        static let page =
            "https://WWW.Shop.example:443/catalog/./shoes/../index.html?utm_source=news%20letter&q=red+shoes&e=#reviews"

        /// The value of `macro` (JSON) in a web container, for a session whose context has `pageURL`/`referrer`, after
        /// `before` was pushed.
        static func value(
            _ macro: String,
            more: String = "",
            pageURL: String? = page,
            referrer: String? = nil,
            before: [ValueMap] = []
        ) throws -> Value {
            let container = try Fidelity.resource(macro: macro, more: more, web: true)
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let recorder = RecordingHandler()
            manager.register(tagHandler: recorder, for: "t")
            let session = manager.makeDataLayer(context: ClientContext(pageURL: pageURL, referrer: referrer))
            for push in before { session.push(push) }
            session.push(event: "e")
            let arguments = try #require(recorder.calls.first?.arguments)
            return arguments["value"] ?? .undefined
        }

        static func url(_ component: String, _ extra: String = "") -> String {
            #"{"function": "__u", "vtp_component": "\#(component)"\#(extra), "vtp_enableMultiQueryKeys": false}"#
        }

        @Test func theWholeURLIsTheBrowsersFormWithoutItsFragment() throws {
            // Scheme and host lowercased, the default port dropped, `.` and `..` resolved, the fragment removed.
            #expect(
                try Self.value(Self.url("URL"))
                    == "https://www.shop.example/catalog/index.html?utm_source=news%20letter&q=red+shoes&e="
            )
            // No component is the whole URL too (Page URL as compiled before components had a default).
            #expect(
                try Self.value(#"{"function": "__u"}"#)
                    == "https://www.shop.example/catalog/index.html?utm_source=news%20letter&q=red+shoes&e="
            )
            // A space and a quote are percent-encoded as a browser does.
            #expect(
                try Self.value(Self.url("URL"), pageURL: "https://a.example/my page?x=\"1\"")
                    == "https://a.example/my%20page?x=%221%22"
            )
        }

        @Test func eachPartIsWhatGTMsPartFunctionGives() throws {
            #expect(try Self.value(Self.url("HOST")) == "www.shop.example")
            #expect(try Self.value(Self.url("HOST", #", "vtp_stripWww": true"#)) == "shop.example")
            #expect(
                try Self.value(Self.url("HOST", #", "vtp_stripWww": true"#), pageURL: "http://www2.a.example/")
                    == "a.example"
            )
            #expect(try Self.value(Self.url("PROTOCOL")) == "https")
            #expect(try Self.value(Self.url("PORT")) == "443")  // the scheme's default when none is written
            #expect(try Self.value(Self.url("PORT"), pageURL: "http://a.example:8080/x") == "8080")
            #expect(try Self.value(Self.url("PATH")) == "/catalog/index.html")
            let defaults = #", "vtp_defaultPages": ["list", "index.html", "index.php"]"#
            #expect(try Self.value(Self.url("PATH", defaults)) == "/catalog/")
            #expect(try Self.value(Self.url("EXTENSION")) == "html")
            #expect(try Self.value(Self.url("FRAGMENT")) == "reviews")
            #expect(try Self.value(Self.url("QUERY")) == "utm_source=news%20letter&q=red+shoes&e=")
            // A URL without a host has an empty one; the part names are exact (`host` reads the whole URL).
            #expect(try Self.value(Self.url("HOST"), pageURL: "mailto:someone@example.com") == "")
            #expect(try Self.value(Self.url("host"), pageURL: "https://a.example/b#c") == "https://a.example/b")
        }

        @Test func aQueryKeyGivesItsDecodedValueOrUndefined() throws {
            #expect(try Self.value(Self.url("QUERY", #", "vtp_queryKey": "utm_source""#)) == "news letter")
            #expect(try Self.value(Self.url("QUERY", #", "vtp_queryKey": "q""#)) == "red shoes")  // `+` is a space
            #expect(try Self.value(Self.url("QUERY", #", "vtp_queryKey": "e""#)) == "")
            // `+` becomes a space before decoding, so an encoded `+` stays one.
            let plus = "https://a.example/?p=%2B1"
            #expect(try Self.value(Self.url("QUERY", #", "vtp_queryKey": "p""#), pageURL: plus) == "+1")
            #expect(try Self.value(Self.url("QUERY", #", "vtp_queryKey": "gclid""#)) == .undefined)
            // A value that does not decode is undefined, and the next of several keys is tried.
            let malformed = "https://a.example/?x=%E0%A4%A&y=2"
            #expect(try Self.value(Self.url("QUERY", #", "vtp_queryKey": "x""#), pageURL: malformed) == .undefined)
            let either = #", "vtp_queryKey": "x,y", "vtp_multiQueryKeys": true"#
            #expect(try Self.value(Self.url("QUERY", either), pageURL: malformed) == "2")
            // Several keys: the first present; with `ignoreEmptyQueryParam`, the first not empty.
            let several = #", "vtp_queryKey": "gclid, e ,q", "vtp_multiQueryKeys": true"#
            #expect(try Self.value(Self.url("QUERY", several)) == "")
            #expect(try Self.value(Self.url("QUERY", several + #", "vtp_ignoreEmptyQueryParam": true"#)) == "red shoes")
        }

        @Test func aPushedGtmURLAndACustomSourceComeBeforeThePage() throws {
            let pushed: [ValueMap] = [["gtm.url": "https://spa.example/checkout?step=2"]]
            #expect(try Self.value(Self.url("PATH"), before: pushed) == "/checkout")
            #expect(try Self.value(Self.url("PATH"), pageURL: nil, before: pushed) == "/checkout")
            // A pushed `gtm.url` is the whole URL as written (without its fragment); its parts are read as an `<a href>`
            // on the page reads them.
            let relative: [ValueMap] = [["gtm.url": "/cart#top"]]
            #expect(try Self.value(Self.url("URL"), before: relative) == "/cart")
            #expect(try Self.value(Self.url("HOST"), before: relative) == "www.shop.example")
            let written: [ValueMap] = [["gtm.url": "HTTPS://SPA.example:443/x#y"]]
            #expect(try Self.value(Self.url("URL"), before: written) == "HTTPS://SPA.example:443/x")
            #expect(try Self.value(Self.url("HOST"), before: written) == "spa.example")
            // A custom source (here a Click URL, `gtm.elementUrl`) is read instead, when it is truthy.
            let click = #", {"function": "__v", "vtp_name": "gtm.elementUrl", "vtp_dataLayerVersion": 1}"#
            let source = Self.url("HOST", #", "vtp_customUrlSource": ["macro", 2]"#)
            #expect(
                try Self.value(source, more: click, before: [["gtm.elementUrl": "https://partner.example/x"]])
                    == "partner.example"
            )
            #expect(try Self.value(source, more: click) == "www.shop.example")
        }

        @Test func withoutThePagesURLTheyAreUndefined() throws {
            #expect(try Self.value(Self.url("URL"), pageURL: nil) == .undefined)
            #expect(try Self.value(Self.url("HOST"), pageURL: nil) == .undefined)
            // A relative `gtm.url` without the page's URL still has its path; its host is not known.
            #expect(try Self.value(Self.url("PATH"), pageURL: nil, before: [["gtm.url": "/a/b?c=1"]]) == "/a/b")
            #expect(try Self.value(Self.url("HOST"), pageURL: nil, before: [["gtm.url": "/a/b?c=1"]]) == .undefined)
        }

        @Test func theReferrerReadsGtmReferrerOrTheContext() throws {
            let referrer = #"{"function": "__f", "vtp_component": "URL"}"#
            #expect(
                try Self.value(referrer, referrer: "https://search.example/?q=shoes#x")
                    == "https://search.example/?q=shoes"
            )
            #expect(try Self.value(referrer, referrer: "") == "")  // opened without one
            #expect(try Self.value(referrer) == .undefined)  // not known
            #expect(
                try Self.value(referrer, before: [["gtm.referrer": "https://other.example/a"]])
                    == "https://other.example/a"
            )
            let host = #"{"function": "__f", "vtp_component": "HOST", "vtp_stripWww": true}"#
            #expect(try Self.value(host, referrer: "https://www.search.example/") == "search.example")
            let query = #"{"function": "__f", "vtp_component": "QUERY", "vtp_queryKey": "q"}"#
            #expect(try Self.value(query, referrer: "https://search.example/?q=red+shoes") == "red shoes")
            // The Referrer has no extension part: it reads the whole URL.
            let fileExtension = #"{"function": "__f", "vtp_component": "EXTENSION"}"#
            #expect(try Self.value(fileExtension, referrer: "https://a.example/x.pdf#p") == "https://a.example/x.pdf")
        }

        /// An export's Page URL, Page Hostname, Page Path and Referrer built-ins are the same variables.
        @Test func anExportsPageBuiltInsReadThePage() throws {
            let export = """
                {"exportFormatVersion": 2, "containerVersion": {
                  "container": {"publicId": "GTM-TEST1", "usageContext": ["WEB"]},
                  "builtInVariable": [{"type": "PAGE_URL", "name": "Page URL"},
                    {"type": "PAGE_HOSTNAME", "name": "Page Hostname"}, {"type": "PAGE_PATH", "name": "Page Path"},
                    {"type": "REFERRER", "name": "Referrer"}]}}
                """
            let container = try TestContainers.load(json: export, file: "GTM-TEST1.json")
            #expect(!container.unsupported.contains { $0.message.contains("PAGE_") })
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let session = manager.makeDataLayer(
                context: ClientContext(pageURL: "https://www.example.com/a/b?c=d", referrer: "https://ref.example/")
            )
            session.push(event: "gtm.js")
            #expect(session.value(forKey: "Page URL") == "https://www.example.com/a/b?c=d")
            #expect(session.value(forKey: "Page Hostname") == "www.example.com")
            #expect(session.value(forKey: "Page Path") == "/a/b")
            #expect(session.value(forKey: "Referrer") == "https://ref.example/")
        }

        @Test func urlsAreTakenApartAsABrowserDoes() {
            let base = URLParts("https://a.example/dir/page.html?x=1#f", base: nil)
            #expect(base?.hostname == "a.example")
            #expect(base?.pathname == "/dir/page.html")
            #expect(base?.search == "?x=1")
            #expect(base?.hash == "#f")
            #expect(URLParts("other.html", base: base)?.href == "https://a.example/dir/other.html")
            #expect(URLParts("../up?y", base: base)?.href == "https://a.example/up?y")
            #expect(URLParts("?z=2", base: base)?.href == "https://a.example/dir/page.html?z=2")
            #expect(URLParts("#g", base: base)?.href == "https://a.example/dir/page.html?x=1#g")
            #expect(URLParts("//cdn.example/s.js", base: base)?.href == "https://cdn.example/s.js")
            #expect(URLParts("HTTP://User@Host.Example:80", base: nil)?.href == "http://User@host.example/")
            #expect(URLParts(#"https:\\a.example\b\c"#, base: nil)?.href == "https://a.example/b/c")
            #expect(URLParts("https://a.example/é?é#é", base: nil)?.href == "https://a.example/%C3%A9?%C3%A9#%C3%A9")
            #expect(URLParts("mailto:someone@example.com", base: nil)?.pathname == "someone@example.com")
            // What a browser refuses: no host, a port out of range, a relative reference without a base.
            #expect(URLParts("https://", base: nil) == nil)
            #expect(URLParts("https://a.example:70000/", base: nil) == nil)
            #expect(URLParts("/relative", base: nil) == nil)
        }
    }
}
