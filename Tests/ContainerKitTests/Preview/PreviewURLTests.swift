import ContainerKit
import Testing

/// The namespace of the preview suites (so that `swift test --filter Preview` selects them).
enum PreviewTests {}

extension PreviewTests {
    @Suite struct PreviewURLTests {
        static let token = "aB3-_x.~Z9"

        @Test func parsesAnEnterURL() throws {
            let url = try PreviewURL(
                parsing: "tagmanager.c.com.example.app://preview/p?id=GTM-K1T5&gtm_auth=\(Self.token)&gtm_preview=12"
            )
            #expect(url.appID == "com.example.app")
            #expect(url.containerID == "GTM-K1T5")
            #expect(
                url.action
                    == .enter(PreviewRequest(containerID: "GTM-K1T5", authToken: Self.token, previewNumber: "12"))
            )
            #expect(!url.isDebug)
        }

        @Test func parsesDebugMode() throws {
            let url = try PreviewURL(
                parsing: "tagmanager.c.app://preview/p?id=GTM-K1T5&gtm_auth=\(Self.token)&gtm_preview=3&gtm_debug=x"
            )
            #expect(url.isDebug)
            guard case .enter(let request) = url.action else {
                Issue.record("expected an enter url")
                return
            }
            #expect(request.debug)
            #expect(request.previewNumber == "3")
        }

        @Test func parsesTheExitURL() throws {
            let url = try PreviewURL(parsing: "tagmanager.c.com.example.app://preview/p?id=GTM-K1T5&gtm_preview=")
            #expect(url.action == .exit)
            #expect(url.containerID == "GTM-K1T5")
            #expect(!url.isDebug)
            #expect(url.description == "tagmanager.c.com.example.app://preview/p?id=GTM-K1T5&gtm_preview=")
        }

        @Test func decodesPercentEncodingFirst() throws {
            let url = try PreviewURL(
                parsing: "tagmanager.c.app%3A%2F%2Fpreview%2Fp%3Fid%3DGTM-K1T5%26gtm_auth%3Dabc%26gtm_preview%3D4"
            )
            #expect(url.action == .enter(PreviewRequest(containerID: "GTM-K1T5", authToken: "abc", previewNumber: "4")))
        }

        @Test func descriptionRedactsTheToken() throws {
            let url = try PreviewURL(
                parsing: "tagmanager.c.app://preview/p?id=GTM-K1T5&gtm_auth=\(Self.token)&gtm_preview=3&gtm_debug=x"
            )
            #expect(
                url.description
                    == "tagmanager.c.app://preview/p?id=GTM-K1T5&gtm_auth=<redacted>&gtm_preview=3&gtm_debug=x"
            )
            #expect(!String(describing: url).contains(Self.token))
            #expect(!String(reflecting: url).contains(Self.token))
            #expect(!"\(url.action)".contains(Self.token))
        }

        static let prefix = "tagmanager.c.app://preview/p?"
        static let malformed: [(String, String)] = [
            ("empty string", ""),
            ("not a url", "hello"),
            ("wrong scheme", "tagmanager.x.app://preview/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("http url", "https://preview/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("upper-case scheme", "TAGMANAGER.C.app://preview/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("no app id", "tagmanager.c.://preview/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("app id with a slash", "tagmanager.c.a/b://preview/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("no ://", "tagmanager.c.app:preview/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("wrong host", "tagmanager.c.app://evil.com/p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("wrong path", "tagmanager.c.app://preview/q?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("path traversal", "tagmanager.c.app://preview/p/../p?id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1"),
            ("no query", "tagmanager.c.app://preview/p"),
            ("empty query", prefix),
            ("auth before id", prefix + "gtm_auth=\(token)&id=GTM-K1T5&gtm_preview=1"),
            ("preview before auth", prefix + "id=GTM-K1T5&gtm_preview=1&gtm_auth=\(token)"),
            ("no auth", prefix + "id=GTM-K1T5&gtm_preview=1"),
            ("empty auth", prefix + "id=GTM-K1T5&gtm_auth=&gtm_preview=1"),
            ("auth with a space", prefix + "id=GTM-K1T5&gtm_auth=a%20b&gtm_preview=1"),
            ("auth with a slash", prefix + "id=GTM-K1T5&gtm_auth=../x&gtm_preview=1"),
            ("auth with a quote", prefix + "id=GTM-K1T5&gtm_auth=a'b&gtm_preview=1"),
            ("no preview", prefix + "id=GTM-K1T5&gtm_auth=\(token)"),
            ("empty preview with auth", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview="),
            ("letters in preview", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=env-5"),
            ("negative preview", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=-1"),
            ("huge preview", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=" + String(repeating: "9", count: 21)),
            ("debug not x", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1&gtm_debug=y"),
            ("debug without value", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1&gtm_debug"),
            ("extra parameter", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1&v=5"),
            ("debug then more", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1&gtm_debug=x&a=b"),
            ("debug before preview", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_debug=x&gtm_preview=1"),
            ("trailing ampersand", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1&"),
            ("double ampersand", prefix + "id=GTM-K1T5&&gtm_auth=\(token)&gtm_preview=1"),
            ("fragment", prefix + "id=GTM-K1T5&gtm_auth=\(token)&gtm_preview=1#frag"),
            ("exit with extra parameter", prefix + "id=GTM-K1T5&gtm_preview=&gtm_debug=x"),
            ("bad percent encoding", prefix + "id=GTM-K1T5&gtm_auth=%zz&gtm_preview=1"),
            ("encoded newline", prefix + "id=GTM-K1T5&gtm_auth=\(token)%0A&gtm_preview=1"),
            ("non-ascii", prefix + "id=GTM-K1T5&gtm_auth=tökén&gtm_preview=1"),
            ("too long", prefix + "id=GTM-K1T5&gtm_auth=" + String(repeating: "a", count: 3000) + "&gtm_preview=1"),
        ]

        @Test(arguments: malformed)
        func refusesAMalformedURL(_ name: String, url: String) {
            #expect(throws: PreviewURLError.self, "\(name)") { try PreviewURL(parsing: url) }
            do throws(PreviewURLError) {
                _ = try PreviewURL(parsing: url)
            } catch {
                #expect(error.code == .malformed, "\(name)")
                #expect(!error.message.contains(Self.token), "\(name): \(error.message)")
            }
        }

        static let badIDs = ["GTM-k1t5", "GTM-", "gtm-K1T5", "GTM-K1T5/../x", "../GTM-K1T5", "GTM-K1 T5", "UA-1234"]

        @Test(arguments: badIDs)
        func refusesAContainerIDThatBreaksThePattern(id: String) {
            let url = "tagmanager.c.app://preview/p?id=\(id)&gtm_auth=\(Self.token)&gtm_preview=1"
            do throws(PreviewURLError) {
                _ = try PreviewURL(parsing: url)
                Issue.record("'\(id)' must be refused")
            } catch {
                #expect(error.code == .invalidContainerID || id.contains(" "), "\(id)")
            }
        }

        @Test func messagesNameTheOffendingPart() {
            let cases: [(String, String)] = [
                ("tagmanager.c.app://evil.com/p?id=GTM-K1T5&gtm_auth=a&gtm_preview=1", "'evil.com'"),
                ("tagmanager.c.app://preview/p?id=GTM-K1T5&gtm_auth=a&gtm_preview=env-5", "'env-5'"),
                ("tagmanager.c.app://preview/p?id=GTM-bad&gtm_auth=a&gtm_preview=1", "'GTM-bad'"),
                ("tagmanager.c.app://preview/p?id=GTM-K1T5&gtm_auth=a&gtm_preview=1&gtm_auth=b", "'gtm_auth'"),
                // A web container's preview link is told apart from a broken mobile one.
                (
                    "https://www.googletagmanager.com/gtm.js?id=GTM-K1T5&gtm_auth=b&gtm_preview=env-5",
                    "this is a web link, not a mobile preview url",
                ),
                ("com.example://preview/p?id=GTM-K1T5&gtm_auth=b&gtm_preview=1", "must start with 'tagmanager.c.'"),
            ]
            for (url, part) in cases {
                do throws(PreviewURLError) {
                    _ = try PreviewURL(parsing: url)
                    Issue.record("'\(url)' must be refused")
                } catch {
                    #expect(error.message.contains(part), "\(error.message)")
                    #expect(!error.message.contains("=b"))
                }
            }
        }
    }
}
