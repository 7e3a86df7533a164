import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird
import NIOCore

/// The body of `POST /v1/events`: `{"user_id", "event", "parameters"?, "context"?, "message_id"?, "timestamp"?,
/// "sent_at"?}`, or a consent
/// command instead of the event: `{"user_id", "command": ["consent", "default" | "update", {…}], "context"?}`.
struct EventRequest: Sendable {
    /// The end user; one session per user.
    var userID: String
    /// The event name pushed to the data layer (empty for a command).
    var event: String
    /// A gtag-style consent command to push instead of an event (`command`).
    var command: ConsentCommand?
    /// The event's parameters, JSON types kept.
    var parameters: ValueMap
    /// The client the user is on (keys of ``ClientContext/keys``); used when the session is created.
    var context: ClientContext?
    /// The event's ID (`message_id`, Segment's name): a retry of an event the user's session has seen within
    /// its window is answered with the original's outcome, `"duplicate": true`, and not pushed again.
    var eventID: String?
    /// When the event happened, by its client's clock (`timestamp`, ISO-8601, Segment's name).
    var timestamp: Date?
    /// When the client sent the event, by the same clock (`sent_at`; Segment's `sentAt`): the difference from when
    /// the service received it corrects ``timestamp`` for a client clock that is wrong (``eventTime(receivedAt:sentAt:)``).
    var sentAt: Date?

    /// The deepest nesting a body may have (a batch's bodies may be two levels deeper: the batch object and
    /// its array).
    static let maximumDepth = 64

    /// Reads a request body; with `routedUser` (the `X-User-ID` header or the path: ``RoutedUser``), a body
    /// without `user_id` is this user's and a body naming another user is refused.
    init(body: [UInt8], routedUser: String? = nil) throws(APIError) {
        let value: Value
        do {
            value = try Value(jsonBytes: body, maximumDepth: Self.maximumDepth)
        } catch {
            throw APIError.notJSON(error)
        }
        guard case .object(let object) = value else {
            throw APIError(.malformedJSON, "the body must be a JSON object, not \(value.typeName)", pointer: "")
                .placed(in: body)
        }
        do {
            try self.init(object: object, routedUser: routedUser)
        } catch {
            throw error.placed(in: body)
        }
    }

    /// Reads one event object (a request's body, or an item of a batch: `index`, its place, named in the
    /// refusal of a bad `message_id`). A refusal's ``APIError/pointer`` is relative to the object; its place in
    /// the body is for the caller to add (``APIError/under(_:)``, ``APIError/placed(in:)``).
    init(object: ValueMap, routedUser: String? = nil, index: Int? = nil) throws(APIError) {
        var object = object
        if let routedUser, !routedUser.isEmpty {
            switch object["user_id"] {
            case .string(let bodyUser)?:
                // Compared as bytes: "café" composed and decomposed are two users.
                guard bodyUser.utf8.elementsEqual(routedUser.utf8) else {
                    throw APIError(
                        .userMismatch,
                        "the body's 'user_id' '\(bodyUser)' is not the routed user '\(routedUser)'",
                        pointer: "/user_id"
                    )
                }
            case nil, .null?:
                object["user_id"] = .string(routedUser)
            default:
                break  // refused below as an invalid field
            }
        }
        guard let user = object["user_id"], !user.isUndefined, user != .null else {
            throw APIError(.missingField, "'user_id' is required", pointer: "")
        }
        guard case .string(let userID) = user else {
            throw APIError(
                .invalidField,
                "'user_id' must be a non-empty string of at most 997 bytes, not \(user.typeName)",
                pointer: "/user_id"
            )
        }
        // The same rules as for the header and the path (a NUL, say, is refused here, before anything is pushed).
        if let problem = UserIDRules.problem(with: userID) {
            throw APIError(
                .invalidField,
                "'user_id' \(problem); it must be a non-empty string of at most 997 bytes",
                pointer: "/user_id"
            )
        }
        var command: ConsentCommand?
        switch object["command"] {
        case nil, .null?: break
        case .array(let arguments)?:
            guard object["event"] == nil || object["event"] == .null else {
                throw APIError(.invalidField, "give 'event' or 'command', not both", pointer: "/event")
            }
            for member in ["message_id", "timestamp"] where object[member] != nil && object[member] != .null {
                throw APIError(.invalidField, "'\(member)' is for events, not commands", pointer: "/\(member)")
            }
            do {
                command = try ConsentCommand(gtagArguments: arguments)
            } catch {
                throw APIError(.invalidField, "'command': \(error.message)", pointer: "/command" + error.pointer)
            }
        case let value?:
            throw APIError(
                .invalidField,
                "'command' must be a gtag command, an array such as [\"consent\", \"update\", {…}], not \(value.typeName)",
                pointer: "/command"
            )
        }
        var event = ""
        if command == nil {
            guard let eventValue = object["event"], !eventValue.isUndefined, eventValue != .null else {
                throw APIError(.missingField, "'event' is required (or a consent 'command')", pointer: "")
            }
            guard case .string(let name) = eventValue, !name.isEmpty else {
                let found = eventValue == .string("") ? "an empty string" : eventValue.typeName
                throw APIError(.invalidField, "'event' must be a non-empty string, not \(found)", pointer: "/event")
            }
            event = name
        }
        var parameters = ValueMap()
        switch object["parameters"] {
        case nil, .null?: break
        case .object(let map)?: parameters = map
        case let value?:
            throw APIError(
                .invalidField,
                "'parameters' must be an object, not \(value.typeName)",
                pointer: "/parameters"
            )
        }
        var context: ClientContext?
        switch object["context"] {
        case nil, .null?: break
        case let value?:
            // What the request does not say stays empty: a server knows nothing about the user's device.
            do {
                context = try ClientContext(jsonValue: value)
            } catch {
                throw APIError(.invalidField, "'context': \(error.message)", pointer: "/context" + error.pointer)
            }
        }
        var eventID: String?
        switch object["message_id"] {
        case nil, .null?: break
        case .string(let id)?:
            do {
                try DataLayer.validate(eventID: id)
            } catch {
                throw Self.invalidMessageID("'message_id' is refused: \(error.message)", index: index)
            }
            eventID = id
        case let value?:
            throw Self.invalidMessageID(
                "'message_id' must be a string of 1 to \(DataLayer.maximumEventIDBytes) bytes without NUL, "
                    + "not \(value.typeName)",
                index: index
            )
        }
        self.userID = userID
        self.event = event
        self.command = command
        self.parameters = parameters
        self.context = context
        self.eventID = eventID
        self.timestamp = try Self.time(object["timestamp"], member: "timestamp")
        self.sentAt = try Self.time(object["sent_at"], member: "sent_at")
    }

    /// When the event happened by the service's clock: ``timestamp`` moved by how far the client's clock was off
    /// when it sent the event (`receivedAt` − ``sentAt``, or `sentAt`, a batch's, when the event has none), as
    /// Segment corrects it; ``timestamp`` as given without a send time; `nil` (now) without a timestamp.
    func eventTime(receivedAt: Date, sentAt batchSentAt: Date? = nil) -> Date? {
        guard let timestamp else { return nil }
        guard let sent = sentAt ?? batchSentAt else { return timestamp }
        return timestamp.addingTimeInterval(receivedAt.timeIntervalSince(sent))
    }

    /// The time of `member` (`timestamp`, `sent_at`): an ISO-8601 date and time, such as
    /// `2024-05-01T12:30:00.250Z` or `2024-05-01T14:30:00+02:00` (without a zone: UTC); `nil` when absent.
    static func time(_ value: Value?, member: String) throws(APIError) -> Date? {
        switch value {
        case nil, .null?: return nil
        case .string(let text)?:
            guard let time = ISO8601Timestamp.date(from: text) else {
                throw APIError(
                    .invalidField,
                    "'\(member)' must be an ISO-8601 time such as 2024-05-01T12:30:00.250Z, not '\(text.prefix(64))'",
                    pointer: "/\(member)"
                )
            }
            return time
        case let value?:
            throw APIError(
                .invalidField,
                "'\(member)' must be an ISO-8601 time such as 2024-05-01T12:30:00.250Z, not \(value.typeName)",
                pointer: "/\(member)"
            )
        }
    }

    /// The refusal of a bad `message_id` (of the batch's event `index`): `problem` says what is wrong, once.
    private static func invalidMessageID(_ problem: String, index: Int?) -> APIError {
        APIError(.invalidEventID, (index.map { "event \($0): " } ?? "") + problem, pointer: "/message_id")
    }
}

/// The body of `request`: refused with 415 `unsupported_media_type` unless its `Content-Type` is
/// `application/json` (see ``isJSONContentType(_:)``), and with 415 `unsupported_content_encoding` unless its
/// `Content-Encoding` is one ``ContentCoding`` reads, before anything is read; with 413 `body_too_large` when it
/// is larger than `limit` bytes (by its `Content-Length` before anything is read, else while it is read, and a
/// compressed body also once decompressed).
func requestBody(of request: Request, limit: Int) async throws(APIError) -> [UInt8] {
    let types = request.headers[values: .contentType]
    guard types.count == 1, isJSONContentType(types[0]) else {
        let given = types.isEmpty ? "no Content-Type" : "Content-Type '\(types.joined(separator: ", "))'"
        throw APIError(
            .unsupportedMediaType,
            "the body must be JSON sent as 'Content-Type: application/json' (charset utf-8 if any), not \(given)"
        )
    }
    let coding = try ContentCoding(request.headers)
    let tooLarge = APIError(.bodyTooLarge, "the body is larger than \(limit) bytes")
    if let length = request.headers[.contentLength].flatMap(Int.init), length > limit { throw tooLarge }
    do {
        let buffer = try await request.body.collect(upTo: limit)
        return Array(try coding.decode(buffer, limit: limit).readableBytesView)
    } catch let error as APIError {
        throw error
    } catch is NIOTooManyBytesError {
        throw tooLarge
    } catch {
        throw APIError(.malformedJSON, "the body could not be read: \(error)")
    }
}

/// Whether a `Content-Type` value is `application/json`, with any parameters, of which a `charset` must be
/// UTF-8: `application/json`, `Application/JSON; charset="utf-8"`. Not another JSON-based type
/// (`application/vnd.api+json`), not `text/plain` (what a browser's form or `fetch` may send across origins
/// without asking first).
func isJSONContentType(_ value: String) -> Bool {
    let parts = value.split(separator: ";", omittingEmptySubsequences: false)
    guard let type = parts.first, type.trimmingWhitespace().lowercased() == "application/json" else { return false }
    for parameter in parts.dropFirst() {
        let pair = parameter.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
        guard pair.count == 2 else { return false }
        guard pair[0].trimmingWhitespace().lowercased() == "charset" else { continue }
        var charset = Substring(pair[1].trimmingWhitespace())
        if charset.count >= 2, charset.first == "\"", charset.last == "\"" { charset = charset.dropFirst().dropLast() }
        guard ["utf-8", "utf8"].contains(charset.lowercased()) else { return false }
    }
    return true
}

extension Substring {
    /// Without leading and trailing spaces and tabs (HTTP's optional whitespace).
    func trimmingWhitespace() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
