import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The debug page in a real browser (Debian's `chromium`, headless, over the DevTools protocol): the built
/// `TagService` executable started on 127.0.0.1 with `--debug-token`, events pushed over HTTP, assertions on
/// the DOM the browser rendered. A screenshot of the page is saved to `.build/test-artifacts/debug-page.png`.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct DebugPageBrowserTests {
    static let token = "debug-token-0123456789abcdef"

    /// A running service with the debug page on, over `GTM-DEBUG1` (a purchase tag on `purchase` when
    /// `{{Price}} > 10`, blocked for `{{Plan}} = staff`; a played-song tag on `played song`).
    struct Running {
        let process: ServiceProcess
        let root: URL
        let debugPort: Int

        init() async throws {
            root = FileManager.default.temporaryDirectory.appendingPathComponent(
                "tagservice-debug-\(UUID().uuidString)"
            )
            let containers = root.appendingPathComponent("containers")
            try FileManager.default.createDirectory(at: containers, withIntermediateDirectories: true)
            let fixture = try #require(
                Bundle.module.url(
                    forResource: "GTM-DEBUG1",
                    withExtension: "json",
                    subdirectory: "Fixtures/debug-containers"
                )
            )
            try FileManager.default.copyItem(at: fixture, to: containers.appendingPathComponent("GTM-DEBUG1.json"))
            process = try ServiceProcess([
                "--containers", containers.path, "--queue", root.appendingPathComponent("queue").path,
                "--debug-token", DebugPageBrowserTests.token, "--debug-port", "0", "--log-level", "info",
            ])
            try await process.waitUntilListening()
            var line = process.log.first { $0.contains("debug page listening") }
            if line == nil { line = await process.nextLine(containing: "debug page listening") }
            let port = line?.split(separator: " ").first { $0.hasPrefix("port=") }?.dropFirst(5)
            debugPort = try #require(port.flatMap { Int($0) }, "no debug listener: \(process.log)")
        }

        var debugBase: String { "http://127.0.0.1:\(debugPort)" }

        /// `POST /v1/events` for `user`, with `parameters` (a JSON object's text) and extra headers; with `command`
        /// (gtag's arguments), that consent command instead of the event.
        @discardableResult
        func push(
            user: String,
            event: String = "",
            parameters: [String: Any] = [:],
            command: [Any]? = nil,
            headers: [String: String] = [:]
        ) async throws -> Int {
            var request = URLRequest(url: URL(string: "http://127.0.0.1:\(process.port)/v1/events")!)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
            let body: [String: Any] =
                if let command { ["user_id": user, "command": command] } else {
                    ["user_id": user, "event": event, "parameters": parameters]
                }
            request.httpBody = try JSONSerialization.data(withJSONObject: body)
            let (_, response) = try await URLSession.shared.data(for: request)
            return (response as? HTTPURLResponse)?.statusCode ?? 0
        }

        func stop() async {
            await process.stop(SIGTERM)
            try? FileManager.default.removeItem(at: root)
        }

        /// Runs `body` with a running service (and a browser, `withBrowser`), then stops them, whatever `body` did.
        static func with(browser withBrowser: Bool = true, _ body: (Running, HeadlessChromium?) async throws -> Void)
            async throws
        {
            let service = try await Running()
            let browser = withBrowser ? try HeadlessChromium() : nil
            defer { browser?.stop() }
            do {
                try await body(service, browser)
            } catch {
                await service.stop()
                throw error
            }
            await service.stop()
        }
    }

    /// The pushes on the page, newest first: each push's event and its tags with their outcomes.
    static let pushesScript = """
        JSON.stringify([...document.querySelectorAll('#pushes details.push')].map(push => ({
          event: push.dataset.event,
          tags: [...push.querySelectorAll('tr.tag')].map(tag => ({
            name: tag.dataset.tag, outcome: tag.dataset.outcome,
            conditions: [...tag.querySelectorAll('.condition')].map(c => ({
              operator: c.dataset.operator, left: c.querySelector('.left').textContent,
              right: c.querySelector('.right').textContent })),
            blockedBy: [...tag.querySelectorAll('.blocked-by')].map(b => b.textContent) })) })))
        """

    struct PushOnPage: Decodable, Equatable {
        struct Tag: Decodable, Equatable {
            struct Condition: Decodable, Equatable {
                var `operator`: String
                var left: String
                var right: String
            }
            /// `data-tag`, `data-outcome`.
            var name: String, outcome: String
            /// The failed conditions (`.condition`) and the blocking triggers (`.blocked-by`).
            var conditions: [Condition], blockedBy: [String]
        }
        var event: String
        var tags: [Tag]

        func tag(_ name: String) -> Tag? { tags.first { $0.name == name } }
    }

    static func pushes(on page: HeadlessChromium.Page) async throws -> [PushOnPage] {
        let text = try #require(try await page.evaluate(pushesScript) as? String)
        return try JSONDecoder().decode([PushOnPage].self, from: Data(text.utf8))
    }

    @Test func aFollowedUsersPushesAppearLiveWithTheTagsThatFired() async throws {
        try await Running.with { service, browser in
            let browser = try #require(browser)
            let page = try await browser.newPage()
            // The token once in the address: the answer sets the cookie and sends the browser to the address without it.
            try await page.open("\(service.debugBase)/debug/users/alice?token=\(Self.token)")
            #expect(try await page.evaluate("location.href") as? String == "\(service.debugBase)/debug/users/alice")
            #expect(try await page.evaluate("document.cookie") as? String == "", "the cookie is HttpOnly")
            #expect(try await page.evaluate("document.querySelector('.user-id').textContent") as? String == "alice")
            try await page.waitFor("document.body.dataset.live === 'open'")

            // A staff purchase: the tag is blocked by its trigger.
            #expect(
                try await service.push(user: "alice", event: "purchase", parameters: ["price": 50, "plan": "staff"])
                    == 200
            )
            try await page.waitFor("document.querySelectorAll('#pushes details.push').length === 1")
            let staff = try #require(try await Self.pushes(on: page).first?.tag("Braze - purchase"))
            #expect(staff.outcome == "blocked")
            #expect(staff.blockedBy == ["blocked by trigger #2"])

            #expect(
                try await service.push(user: "alice", event: "purchase", parameters: ["price": 25, "plan": "pro"])
                    == 200
            )
            #expect(
                try await service.push(user: "alice", event: "played song", parameters: ["title": "So What"]) == 200
            )
            #expect(try await service.push(user: "alice", event: "purchase", parameters: ["price": 5]) == 200)
            // Another user's push is not shown (nor traced).
            #expect(try await service.push(user: "bob", event: "purchase", parameters: ["price": 99]) == 200)
            try await page.waitFor("document.querySelectorAll('#pushes details.push').length === 4")

            let pushes = try await Self.pushes(on: page)
            #expect(pushes.map(\.event) == ["purchase", "played song", "purchase", "purchase"], "newest first")
            #expect(pushes[2].tag("Braze - purchase")?.outcome == "fired")
            #expect(pushes[1].tag("Braze - played song")?.outcome == "fired")
            #expect(pushes[2].tag("Braze - played song")?.outcome == "not_fired")
            #expect(
                pushes[2].tag("Braze - played song")?.conditions
                    == [.init(operator: "_eq", left: "\"purchase\"", right: "\"played song\"")]
            )
            // Why the last purchase did not fire: {{Price}} > 10 was false with the value 5.
            #expect(pushes[0].tag("Braze - purchase")?.outcome == "not_fired")
            #expect(
                pushes[0].tag("Braze - purchase")?.conditions == [.init(operator: "_gt", left: "5", right: "\"10\"")]
            )
            // The fired purchase's record was queued, then delivered (to the records file) as the page watched.
            try await page.waitFor(
                "document.querySelector('#push-2 .record-delivery')?.textContent === 'delivered'"
            )
            // The data layer is the session's, after the last push.
            let dataLayer =
                try await page.evaluate("document.querySelector('#state .data-layer').textContent") as? String
            #expect(dataLayer?.contains("\"price\": 5") == true)

            // The page as a newcomer sees it: the first push opened.
            try await page.evaluate("document.querySelector('#pushes details.push:first-child').open = true")
            let png = try await page.screenshot()
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
            try Self.saveArtifact(png, name: "debug-page.png")

            // A consent command: what it changed, per type.
            #expect(
                try await service.push(user: "alice", command: ["consent", "update", ["ad_storage": "granted"]]) == 200
            )
            try await page.waitFor("document.querySelectorAll('#pushes details.push').length === 5")
            #expect(
                try await page.evaluate(
                    "[...document.querySelectorAll('#push-5 tr.consent-type td')].map(td => td.textContent).join('|')"
                ) as? String == "ad_storage|not set|granted"
            )

            // The page rendered anew (no stream) shows the same pushes.
            try await page.open("\(service.debugBase)/debug/users/alice")
            #expect(try await Self.pushes(on: page).dropFirst() == pushes[...])
        }
    }

    @Test func untrustedValuesAreShownAsTextAndNothingRuns() async throws {
        try await Running.with { service, browser in
            let browser = try #require(browser)
            let page = try await browser.newPage()
            // Counts what the Content-Security-Policy refused, from the document's start (a page that escapes
            // everything gives it nothing to refuse).
            try await page.send(
                "Page.addScriptToEvaluateOnNewDocument",
                [
                    "source":
                        "window.refused = []; document.addEventListener('securitypolicyviolation', e => window.refused.push(e.violatedDirective + ' ' + e.blockedURI));"
                ]
            )
            let user = "<img src=x onerror=\"document.title='pwned'\">\u{7}"
            let evil: [String: Any] = [
                "\"onmouseover=\"document.title='pwned'": "javascript:document.title='pwned'",
                "title": "</pre><script>document.title='pwned'</script>\u{1B}[31m\u{202E}olleh",
                "link": "javascript:alert(1)",
            ]
            let userPath = user.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            try await page.open("\(service.debugBase)/debug/users/\(userPath)?token=\(Self.token)")
            try await page.waitFor("document.body.dataset.live === 'open'")
            #expect(
                try await service.push(user: user, event: "<script>document.title='pwned'</script>", parameters: evil)
                    == 200
            )
            #expect(
                try await service.push(user: user, event: "\"onmouseover=\"document.title='pwned'", parameters: evil)
                    == 200
            )
            #expect(
                try await service.push(
                    user: user,
                    event: "purchase",
                    parameters: ["price": 50, "plan": "<b>staff</b>"]
                ) == 200
            )
            try await page.waitFor("document.querySelectorAll('#pushes details.push').length === 3")
            try await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            try await Self.expectNothingRan(page, user: user)

            // The same pushes rendered by the server in a fresh page.
            try await page.open("\(service.debugBase)/debug/users/\(userPath)")
            try await page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
            #expect(try await page.evaluate("document.querySelectorAll('#pushes details.push').length") as? Int == 3)
            try await Self.expectNothingRan(page, user: user)
        }
    }

    static func expectNothingRan(_ page: HeadlessChromium.Page, user: String) async throws {
        #expect(
            try await page.evaluate("document.title") as? String
                == "User <img src=x onerror=\"document.title='pwned'\">\\u0007 · TagService debug"
        )
        #expect(try await page.evaluate("document.scripts.length") as? Int == 1, "only the page's own script")
        #expect(
            try await page.evaluate(
                "[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => a.name.startsWith('on'))).length"
            ) as? Int == 0
        )
        #expect(
            try await page.evaluate("document.querySelectorAll('img, b, a[href^=\"javascript\"]').length") as? Int == 0
        )
        #expect(try await page.evaluate("JSON.stringify(window.refused)") as? String == "[]")
        // The values are there, as text.
        #expect(
            try await page.evaluate("document.querySelector('.user-id').textContent") as? String
                == "<img src=x onerror=\"document.title='pwned'\">\\u0007"
        )
        let events =
            try await page.evaluate(
                "[...document.querySelectorAll('#pushes .event')].map(e => e.textContent).join('|')"
            ) as? String
        #expect(events == "purchase|\"onmouseover=\"document.title='pwned'|<script>document.title='pwned'</script>")
        let text = try await page.evaluate("document.querySelector('#pushes').textContent") as? String ?? ""
        #expect(text.contains("\\u001b[31m"), "control characters are shown escaped (by JSON, in a value)")
        #expect(text.contains("\\u202Eolleh"), "a bidirectional override is shown escaped")
        #expect(text.contains("javascript:document.title='pwned'"))
    }

    @Test func everyDebugRouteIsNotFoundWithoutTheToken() async throws {
        try await Running.with(browser: false) { service, _ in
            for path in [
                "/debug", "/debug/users/alice", "/debug/users/alice/events", "/debug/static/debug.js", "/debug/nothing",
            ] {
                #expect(try await Self.get(service.debugPort, path).status == 404, "\(path)")
                #expect(try await Self.get(service.debugPort, path + "?token=wrong-token-0123456789").status == 404)
                #expect(
                    try await Self.get(service.debugPort, path, ["Authorization: Bearer wrong-token-0123456789"]).status
                        == 404
                )
                #expect(try await Self.get(service.debugPort, path, ["Cookie: tagservice_debug=00ff"]).status == 404)
            }
            // The main listener has no debug page at all.
            #expect(try await Self.get(service.process.port, "/debug?token=\(Self.token)").status == 404)

            // A script: the Bearer token.
            let page = try await Self.get(service.debugPort, "/debug", ["Authorization: Bearer \(Self.token)"])
            #expect(page.status == 200)
            #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
            // A browser: the token once, answered with the cookie and the address without it.
            let login = try await Self.get(service.debugPort, "/debug/users/alice?after=3&token=\(Self.token)")
            #expect(login.status == 303)
            #expect(login.headers["location"] == "/debug/users/alice?after=3")
            let cookie = try #require(login.headers["set-cookie"])
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
            #expect(!cookie.contains(Self.token), "the cookie does not hold the token as it is typed")
            let cookieValue = String(cookie.split(separator: ";")[0])
            #expect(
                try await Self.get(service.debugPort, "/debug/users/alice", ["Cookie: \(cookieValue)"]).status == 200
            )
            // No redirect leaves the listener.
            let sneaky = try await Self.get(service.debugPort, "//example.com/debug?token=\(Self.token)")
            #expect(sneaky.headers["location"]?.hasPrefix("//") != true)

            // A request with the debug header is traced whoever its user is; one with a wrong token is not.
            #expect(
                try await service.push(
                    user: "carol",
                    event: "purchase",
                    parameters: ["price": 30],
                    headers: ["X-TagService-Debug": Self.token]
                ) == 200
            )
            #expect(
                try await service.push(
                    user: "dave",
                    event: "purchase",
                    parameters: ["price": 30],
                    headers: ["X-TagService-Debug": "wrong-token-0123456789"]
                ) == 200
            )
            let overview = try await Self.get(service.debugPort, "/debug", ["Authorization: Bearer \(Self.token)"])
            #expect(overview.body.contains("/debug/users/carol"))
            #expect(!overview.body.contains("dave"))
            let carol = try await Self.get(
                service.debugPort,
                "/debug/users/carol",
                ["Authorization: Bearer \(Self.token)"]
            )
            #expect(carol.body.contains("data-event=\"purchase\""))
            #expect(carol.body.contains("class=\"via-header\""))
            // The page never shows server paths.
            #expect(!carol.body.contains(service.root.path) && !overview.body.contains(service.root.path))
        }
    }

    /// A raw `GET` (redirects not followed): the status, the headers (lowercased names) and the body.
    static func get(_ port: Int, _ path: String, _ headers: [String] = []) async throws -> (
        status: Int, headers: [String: String], body: String
    ) {
        let fd = try ServingTests.connect(port)
        var request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for header in headers { request += header + "\r\n" }
        ServingTests.send(fd, request + "\r\n")
        let answer = await ServingTests.readUntilClosed(fd)
        let parts = answer.components(separatedBy: "\r\n\r\n")
        let head = parts.first?.components(separatedBy: "\r\n") ?? []
        let status = head.first.flatMap { Int($0.split(separator: " ").dropFirst().first ?? "") } ?? 0
        var fields: [String: String] = [:]
        for line in head.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, fields, parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    /// Writes `data` to `.build/test-artifacts/<name>` of the example package.
    static func saveArtifact(_ data: Data, name: String) throws {
        let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent(".build/test-artifacts")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try data.write(to: directory.appendingPathComponent(name))
    }
}
