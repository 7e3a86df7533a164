import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Debian's `chromium`, headless, driven over the DevTools protocol through a pipe (`--remote-debugging-pipe`:
/// the browser reads commands from its descriptor 3 and writes answers and events to its descriptor 4, one JSON
/// message each, ended by a NUL byte). No WebSocket, no driver, no npm: a few commands of the protocol
/// (`Target.createTarget`, `Page.navigate`, `Runtime.evaluate`, `Page.captureScreenshot`).
///
/// Waiting for the page is done in the page: ``Page/waitFor(_:)`` evaluates a promise that resolves when a
/// condition holds, checked at each change of the DOM (a `MutationObserver`), never by polling.
final class HeadlessChromium: @unchecked Sendable {
    /// Why the browser could not do what was asked.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    private let pid: pid_t
    private let commands: Int32
    private let lock = NSLock()
    private var nextID = 1
    private var waiting: [Int: CheckedContinuation<Data, any Error>] = [:]
    private var ended = false
    private let profile: URL

    /// The browser's executable: `CHROMIUM` if set, else Debian's.
    static var executable: String? {
        let candidates = [
            ProcessInfo.processInfo.environment["CHROMIUM"], "/usr/lib/chromium/chromium", "/usr/bin/chromium",
        ]
        return candidates.compactMap { $0 }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Starts a headless browser with a fresh profile.
    init() throws {
        guard let executable = Self.executable else {
            throw Failure(description: "chromium is not installed: apt-get install -y chromium (.ci/run installs it)")
        }
        profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        var toBrowser: [Int32] = [0, 0]
        var fromBrowser: [Int32] = [0, 0]
        guard pipe(&toBrowser) == 0, pipe(&fromBrowser) == 0 else {
            throw Failure(description: "pipe failed: errno \(errno)")
        }
        // Every end close-on-exec (no other child inherits one), the browser's ends above 4: the child's dup2 onto
        // 3 and 4 then always makes a new descriptor, which does not close on exec.
        let browserReads = fcntl(toBrowser[0], F_DUPFD_CLOEXEC, 10)
        let browserWrites = fcntl(fromBrowser[1], F_DUPFD_CLOEXEC, 10)
        close(toBrowser[0])
        close(fromBrowser[1])
        _ = fcntl(toBrowser[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fromBrowser[0], F_SETFD, FD_CLOEXEC)
        let arguments = [
            executable, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
            "--disable-sync", "--mute-audio", "--hide-scrollbars", "--window-size=1280,900",
            "--user-data-dir=\(profile.path)", "--remote-debugging-pipe", "about:blank",
        ]
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, browserReads, 3)
        posix_spawn_file_actions_adddup2(&actions, browserWrites, 4)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let spawned = posix_spawn(&child, executable, &actions, nil, argv, environ)
        close(browserReads)
        close(browserWrites)
        guard spawned == 0 else {
            close(toBrowser[1])
            close(fromBrowser[0])
            throw Failure(description: "cannot start \(executable): error \(spawned)")
        }
        pid = child
        commands = toBrowser[1]
        let answers = fromBrowser[0]
        Thread { [self] in readAnswers(answers) }.start()
    }

    deinit { stop() }

    /// Ends the browser (SIGKILL: it keeps nothing) and removes its profile.
    func stop() {
        lock.lock()
        let wasRunning = !ended
        ended = true
        lock.unlock()
        guard wasRunning else { return }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        close(commands)
        try? FileManager.default.removeItem(at: profile)
    }

    /// Sends `method` with `parameters` (to the page `session`, if given); returns the answer's `result`.
    @discardableResult
    func send(_ method: String, _ parameters: [String: Any] = [:], session: String? = nil) async throws -> [String: Any]
    {
        var message: [String: Any] = ["method": method, "params": parameters]
        if let session { message["sessionId"] = session }
        let data: Data = try await withCheckedThrowingContinuation { continuation in
            lock.lock()
            if ended {
                lock.unlock()
                continuation.resume(throwing: Failure(description: "the browser has exited"))
                return
            }
            let id = nextID
            nextID += 1
            waiting[id] = continuation
            message["id"] = id
            var bytes = [UInt8]((try? JSONSerialization.data(withJSONObject: message)) ?? Data())
            bytes.append(0)
            var written = 0
            while written < bytes.count {
                let count = bytes[written...].withUnsafeBytes { write(commands, $0.baseAddress, $0.count) }
                if count <= 0 { break }
                written += count
            }
            lock.unlock()
        }
        let answer = try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
        if let error = answer["error"] as? [String: Any] {
            throw Failure(description: "\(method): \(error["message"] ?? error)")
        }
        return answer["result"] as? [String: Any] ?? [:]
    }

    /// Reads the browser's messages until it closes its end; answers go to their callers, events are ignored.
    private func readAnswers(_ fd: Int32) {
        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = read(fd, &chunk, chunk.count)
            if count < 0, errno == EINTR { continue }
            if count <= 0 { break }
            buffer += chunk[0..<count]
            while let end = buffer.firstIndex(of: 0) {
                let message = Data(buffer[..<end])
                buffer.removeSubrange(...end)
                guard let object = try? JSONSerialization.jsonObject(with: message) as? [String: Any],
                    let id = object["id"] as? Int
                else { continue }
                lock.lock()
                let continuation = waiting.removeValue(forKey: id)
                lock.unlock()
                continuation?.resume(returning: message)
            }
        }
        close(fd)
        lock.lock()
        ended = true
        let orphans = waiting
        waiting = [:]
        lock.unlock()
        for continuation in orphans.values {
            continuation.resume(throwing: Failure(description: "the browser exited"))
        }
    }

    /// A new tab.
    func newPage() async throws -> Page {
        let target = try await send("Target.createTarget", ["url": "about:blank"])
        let attached = try await send(
            "Target.attachToTarget",
            ["targetId": target["targetId"] as? String ?? "", "flatten": true]
        )
        let page = Page(browser: self, session: attached["sessionId"] as? String ?? "")
        try await page.send("Page.enable")
        try await page.send("Runtime.enable")
        return page
    }

    /// One tab, attached.
    struct Page: Sendable {
        let browser: HeadlessChromium
        let session: String

        @discardableResult
        func send(_ method: String, _ parameters: [String: Any] = [:]) async throws -> [String: Any] {
            try await browser.send(method, parameters, session: session)
        }

        /// Opens `url` and returns once its document has loaded (after any redirect).
        func open(_ url: String) async throws {
            let answer = try await send("Page.navigate", ["url": url])
            if let error = answer["errorText"] as? String, !error.isEmpty {
                throw Failure(description: "cannot open \(url): \(error)")
            }
            try await evaluate(
                "new Promise(r => document.readyState === 'complete' ? r(true) : addEventListener('load', () => r(true)))"
            )
        }

        /// The value of `expression` (a promise is awaited), as JSON gives it.
        @discardableResult
        func evaluate(_ expression: String) async throws -> Any? {
            let answer = try await send(
                "Runtime.evaluate",
                ["expression": expression, "awaitPromise": true, "returnByValue": true]
            )
            if let exception = answer["exceptionDetails"] as? [String: Any] {
                let text = (exception["exception"] as? [String: Any])?["description"] ?? exception["text"] ?? exception
                throw Failure(description: "\(expression.prefix(120)): \(text)")
            }
            return (answer["result"] as? [String: Any])?["value"]
        }

        /// Waits until `condition` (a JavaScript expression) is truthy, checking it at each change of the DOM;
        /// returns its value.
        @discardableResult
        func waitFor(_ condition: String) async throws -> Any? {
            try await evaluate(
                """
                new Promise((resolve) => {
                  const check = () => { const value = (\(condition)); if (value) { resolve(value); return true; } return false; };
                  if (check()) { return; }
                  const observer = new MutationObserver(() => { if (check()) { observer.disconnect(); } });
                  observer.observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
                })
                """
            )
        }

        /// A PNG of the page as shown.
        func screenshot() async throws -> Data {
            let answer = try await send("Page.captureScreenshot", ["format": "png", "captureBeyondViewport": false])
            guard let text = answer["data"] as? String, let data = Data(base64Encoded: text) else {
                throw Failure(description: "no screenshot")
            }
            return data
        }
    }
}
