import ContainerKit
import ContainerKitBraze
import Foundation
import HTTPTypes
import Hummingbird

/// The debug listener's routes, every one behind ``DebugAccessMiddleware`` (404 without the token):
///
/// - `GET /debug` — the overview and the user picker; `GET /debug/overview` its content alone (the page reloads it);
/// - `GET /debug/users?user=<id>` — the picker's form: a redirect to the user's page;
/// - `GET /debug/users/<user id>` — the user's page (a stable address to share): requesting it starts following
///   the user;
/// - `GET /debug/users/<user id>/events` — the page's live stream (server-sent events: `push`, `delivery`,
///   `state`);
/// - `GET /debug/users/<user id>/pushes.json` — for scripts: the user's kept pushes as JSON, each with the library's
///   versioned trace (``DebugPushesDocument``); `?after=<n>` only those numbered after `n`. Like the page, it starts
///   following the user;
/// - `GET /debug/static/debug.js`, `/debug/static/debug.css` — the page's script and style sheet.
struct DebugController: Sendable {
    let hub: DebugHub
    let manager: TagManager
    let sessions: SessionStore

    func register(on router: Router<BasicRequestContext>) {
        router.add(middleware: DebugAccessMiddleware(hub: hub))
        router.get("debug") { _, _ in Self.html(DebugPages.overviewPage(self.overviewView)) }
        router.get("debug/overview") { _, _ in Self.html(DebugPages.overview(self.overviewView)) }
        router.get("debug/users") { request, _ in
            guard let user = request.uri.queryParameters["user"].map(String.init), !user.isEmpty else {
                return Self.redirect("/debug")
            }
            if let problem = UserIDRules.problem(with: user) {
                return Self.html(DebugPages.message("Cannot follow this user", "The user id \(problem)."), .badRequest)
            }
            return Self.redirect("/debug/users/\(HTML.pathSegment(user))")
        }
        router.get("debug/users/:user_id") { _, context in
            guard case .success(let userID) = self.userID(context) else { return self.badUser(context) }
            let since: Date
            do throws(DebugHub.Refusal) {
                since = try self.hub.follow(userID)
            } catch {
                return Self.refusalPage(error)
            }
            return Self.html(
                DebugPages.userPage(
                    userID: userID,
                    since: since,
                    entries: self.hub.pushes(of: userID),
                    session: self.sessionView(userID),
                    grace: self.hub.settings.followGrace
                )
            )
        }
        router.get("debug/users/:user_id/pushes.json") { request, context in
            let userID: String
            switch self.userID(context) {
            case .success(let user): userID = user
            case .failure(let error): return Self.jsonError(.badRequest, "invalid_user_id", error.message)
            }
            let since: Date
            do throws(DebugHub.Refusal) {
                since = try self.hub.follow(userID)
            } catch {
                return Self.jsonError(.serviceUnavailable, Self.code(error), Self.words(error))
            }
            let after: Int
            do throws(APIError) {
                after = try Self.after(request) ?? 0
            } catch {
                return error.response
            }
            let document = DebugPushesDocument(
                userID: userID,
                followedSince: since,
                entries: self.hub.pushes(of: userID).reversed().filter { $0.sequence > after }
            )
            return Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(string: document.json()))
            )
        }
        router.get("debug/users/:user_id/events") { request, context in
            guard case .success(let userID) = self.userID(context) else { return self.badUser(context) }
            // A reconnecting browser says the last push it has; a new page, the newest push it was rendered with.
            let asked: Int?
            do throws(APIError) {
                asked = try Self.after(request)
            } catch {
                return error.response
            }
            let after = request.headers[.lastEventID].flatMap { Int($0) } ?? asked ?? 0
            return self.stream(userID: userID, after: after)
        }
        router.get("debug/static/debug.js") { _, _ in
            Self.asset(DebugAssets.script, type: "text/javascript; charset=utf-8")
        }
        router.get("debug/static/debug.css") { _, _ in Self.asset(DebugAssets.style, type: "text/css; charset=utf-8") }
    }

    /// The `after` query parameter: a push number (0 or more).
    private static func after(_ request: Request) throws(APIError) -> Int? {
        try APIError.queryParameter("after", of: request, must: "a push number (a whole number from 0)") {
            Int($0).flatMap { $0 >= 0 ? $0 : nil }
        }
    }

    /// The user of a `/debug/users/<user id>` path, percent-decoded; a 400 page when it is not a user id.
    private func userID(_ context: BasicRequestContext) -> Result<String, APIError> {
        do throws(APIError) {
            return .success(try RoutedUser.decodedPathSegment(context.parameters.get("user_id") ?? ""))
        } catch {
            return .failure(error)
        }
    }

    private func badUser(_ context: BasicRequestContext) -> Response {
        guard case .failure(let error) = userID(context) else { return Self.redirect("/debug") }
        return Self.html(DebugPages.message("Not a user id", error.message), .badRequest)
    }

    /// The user's live stream: `retry`, then the kept pushes after `after` and the session's state, then each
    /// push as it is traced (with the state after it), and a heartbeat comment every 15 s.
    private func stream(userID: String, after: Int) -> Response {
        let subscription: DebugHub.Subscription
        do throws(DebugHub.Refusal) {
            subscription = try hub.subscribe(userID, after: after)
        } catch {
            // EventSource does not reconnect after an answer that is not an event stream: say why as an event.
            let text: String
            switch error {
            case .tooManyStreams(let count): text = "not live: \(count) pages are open already (--debug-max-streams)"
            case .tooManyUsers(let count): text = "not live: \(count) users are followed already (--debug-max-users)"
            case .closed: text = "not live: the service is stopping"
            }
            return Self.eventStream(
                ResponseBody(byteBuffer: ByteBuffer(string: ServerSentEvent(event: "refused", data: text).text))
            )
        }
        return Self.eventStream(
            ResponseBody { writer in
                defer { subscription.end() }
                try await writer.write(ByteBuffer(string: "retry: 2000\n\n"))
                try await writer.write(ByteBuffer(string: self.stateEvent(userID)))
                for await message in subscription.messages {
                    switch message {
                    case .push(let entry):
                        let text =
                            ServerSentEvent(id: String(entry.sequence), event: "push", data: DebugPages.push(entry))
                            .text
                            + self.stateEvent(userID)
                        try await writer.write(ByteBuffer(string: text))
                    case .delivery(let entry):
                        let text = ServerSentEvent(event: "delivery", data: DebugPages.records(entry)).text
                        try await writer.write(ByteBuffer(string: text))
                    case .heartbeat:
                        try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                    }
                }
                try await writer.finish(nil)
            }
        )
    }

    private func stateEvent(_ userID: String) -> String {
        ServerSentEvent(event: "state", data: DebugPages.state(sessionView(userID))).text
    }

    /// The session's data layer and pending records, when its session is in memory here.
    func sessionView(_ userID: String) -> DebugPages.SessionView {
        guard let session = sessions.existingSession(for: userID) else {
            return DebugPages.SessionView(dataLayer: nil, pending: [])
        }
        return DebugPages.SessionView(
            dataLayer: session.model,
            pending: BrazeTagProvider.pendingRecords(of: session).map(\.jsonValue)
        )
    }

    var overviewView: DebugPages.OverviewView {
        hub.sweep()
        let now = hub.now()
        let containers = manager.containers
        return DebugPages.OverviewView(
            containers: containers.map { ($0.id, $0.version) },
            followed: hub.followedUsers,
            tags: hub.overview.tagSeries(of: containers, at: now),
            deliveries: hub.overview.deliveries,
            openStreams: hub.openStreams,
            settings: hub.settings
        )
    }

    private static func refusalPage(_ refusal: DebugHub.Refusal) -> Response {
        switch refusal {
        case .tooManyUsers(let count):
            return html(
                DebugPages.message(
                    "Too many followed users",
                    "\(count) users are followed, each with a page open (--debug-max-users). Close one of their pages."
                ),
                .serviceUnavailable
            )
        case .tooManyStreams(let count):
            return html(DebugPages.message("Too many pages", "\(count) pages are open."), .serviceUnavailable)
        case .closed:
            return html(DebugPages.message("Stopping", "The service is stopping."), .serviceUnavailable)
        }
    }

    /// A refusal's code in a JSON answer.
    static func code(_ refusal: DebugHub.Refusal) -> String {
        switch refusal {
        case .tooManyUsers: "too_many_users"
        case .tooManyStreams: "too_many_streams"
        case .closed: "stopping"
        }
    }

    /// A refusal in words.
    static func words(_ refusal: DebugHub.Refusal) -> String {
        switch refusal {
        case .tooManyUsers(let count): "\(count) users are followed, each with a page open (--debug-max-users)"
        case .tooManyStreams(let count): "\(count) pages are open (--debug-max-streams)"
        case .closed: "the service is stopping"
        }
    }

    /// `{"error": {"code": …, "message": …}}` with `status`.
    static func jsonError(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        let body: Value = ["error": ["code": .string(code), "message": .string(message)]]
        return Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: JSONWriter.string(body)))
        )
    }

    static func html(_ text: String, _ status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/html; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: text))
        )
    }

    static func redirect(_ location: String) -> Response {
        Response(status: .seeOther, headers: [.location: location])
    }

    private static func asset(_ text: String, type: String) -> Response {
        Response(status: .ok, headers: [.contentType: type], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    private static func eventStream(_ body: ResponseBody) -> Response {
        Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"], body: body)
    }
}

extension HTTPField.Name {
    /// `Last-Event-ID`, which a reconnecting `EventSource` sends.
    static let lastEventID = HTTPField.Name("Last-Event-ID")!
}

/// One server-sent event in the `text/event-stream` format: `id`, `event`, and the data, one `data:` line per
/// line of it (a browser joins them with line feeds), ended by an empty line.
struct ServerSentEvent: Sendable {
    var id: String?
    var event: String
    var data: String

    var text: String {
        var text = ""
        if let id { text += "id: \(id)\n" }
        text += "event: \(event)\n"
        // CR, LF and CRLF all end a line of the format: each line of the data gets its own field.
        for line in data.split(
            omittingEmptySubsequences: false,
            whereSeparator: { $0 == "\n" || $0 == "\r" || $0 == "\r\n" }
        ) {
            text += "data: \(line)\n"
        }
        return text + "\n"
    }
}

/// `GET /debug/users/<user id>/pushes.json`: a followed user's kept pushes, oldest first, for scripts.
///
/// ```json
/// {"version": 1, "user_id": "alice", "followed_since_ms": 1764000000000,
///  "pushes": [{"sequence": 1, "time_ms": 1764000001000, "via_header": false, "trace": {…}}]}
/// ```
///
/// `trace` is the library's ``PushTrace`` JSON (its own `version`, documented in `Docs/Preview.md`), with the
/// records' delivery state as far as known. Keys are sorted; ``version`` rises when a member is renamed or removed.
struct DebugPushesDocument: Encodable {
    /// The version of this envelope: 1.
    var version = 1
    var userID: String
    var followedSince: Int64
    var pushes: [Push]

    struct Push: Encodable {
        var sequence: Int
        var time: Int64
        var viaHeader: Bool
        var trace: PushTrace

        enum CodingKeys: String, CodingKey {
            case sequence, time = "time_ms", viaHeader = "via_header", trace
        }
    }

    enum CodingKeys: String, CodingKey {
        case version, userID = "user_id", followedSince = "followed_since_ms", pushes
    }

    init(userID: String, followedSince: Date, entries: [DebugPushEntry]) {
        self.userID = userID
        self.followedSince = Self.milliseconds(followedSince)
        pushes = entries.map {
            Push(sequence: $0.sequence, time: Self.milliseconds($0.time), viaHeader: $0.viaHeader, trace: $0.trace)
        }
    }

    static func milliseconds(_ date: Date) -> Int64 { Int64((date.timeIntervalSince1970 * 1000).rounded()) }

    /// The document as JSON text, keys sorted.
    func json() -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }
}
