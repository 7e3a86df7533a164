import ContainerKit
import Foundation
import Hummingbird
import NIOCore

/// The body of `POST /v1/batch`: `{"events": [event, …], "sent_at"?}`, each event what `POST /v1/events` takes
/// (`{"user_id", "event", "parameters"?, "context"?, "message_id"?, "timestamp"?, "sent_at"?}`), of one user or of
/// many. The batch's `sent_at` (Segment's `sentAt`) is that of each event that has none.
///
/// The batch as a whole is refused (400, 413) only when it cannot be read: not JSON, no `events` array, an
/// empty one, more than ``BatchLimits/maximumEvents`` events or more than ``BatchLimits/maximumBytes``
/// bytes. An event that cannot be read is refused in its place, with the error `POST /v1/events` would
/// answer, and the others go on — also an event that nests deeper than a single body may (64 levels): the
/// batch is then read event by event (``JSONSpans``), and only that event is refused (`malformed_json`).
struct BatchRequest: Sendable {
    /// Each event in order: the request, or why it is refused.
    var items: [Result<EventRequest, APIError>] = []
    /// The user each event names (for one without `user_id`, the routed user), for its item in the answer —
    /// also when the event is refused.
    var userIDs: [String?] = []
    /// When the client sent the batch, by its own clock (`sent_at`): see ``EventRequest/eventTime(receivedAt:sentAt:)``.
    var sentAt: Date?

    /// Reads a batch body; `routedUser` as in ``EventRequest/init(body:routedUser:)``, for every event.
    init(body: [UInt8], limits: BatchLimits, routedUser: String? = nil) throws(APIError) {
        let value: Value
        do {
            // Two levels more than a single body: the batch object and its array.
            value = try Value(jsonBytes: body, maximumDepth: EventRequest.maximumDepth + 2)
        } catch  where error.code == .nestingTooDeep {
            // Something nests deeper than an event may: read the batch event by event, so that a too deep event
            // is refused in its place, as a body that deep is refused on its own, and the others go on.
            self = try Self(eventByEvent: body, limits: limits, routedUser: routedUser)
            return
        } catch {
            throw APIError.notJSON(error)
        }
        guard case .object(let object) = value else {
            throw APIError(.malformedJSON, "the body must be a JSON object, not \(value.typeName)", pointer: "")
                .placed(in: body)
        }
        guard let member = object["events"], !member.isUndefined, member != .null else {
            throw Self.missingEvents.placed(in: body)
        }
        guard case .array(let events) = member else { throw Self.eventsNotAnArray(member).placed(in: body) }
        do throws(APIError) {
            try Self.check(count: events.count, limits: limits)
            sentAt = try EventRequest.time(object["sent_at"], member: "sent_at")
        } catch {
            throw error.placed(in: body)
        }
        // One pass over the events, each object read where it is.
        reserve(events.count)
        for event in events { append(event, routedUser: routedUser) }
        placeRefusals(in: body)
    }

    /// Gives each refused event the line and column of what it refuses, reading the body again (once, and only
    /// when an event is refused). In a body nested too deep for the reader, the refusals keep their pointers only.
    private mutating func placeRefusals(in body: [UInt8]) {
        guard items.contains(where: { if case .failure = $0 { true } else { false } }) else { return }
        let document = APIError.positions(of: body)
        for index in items.indices {
            if case .failure(let error) = items[index] { items[index] = .failure(error.placed(in: document)) }
        }
    }

    private static let missingEvents = APIError(.missingField, "'events' is required", pointer: "")

    /// The refusal of an `events` member that is not an array of events (`events`: what it is).
    private static func eventsNotAnArray(_ events: Value) -> APIError {
        let found = events == .array([]) ? "an empty array" : events.typeName
        return APIError(.invalidField, "'events' must be a non-empty array, not \(found)", pointer: "/events")
    }

    /// Refuses the whole batch when `events` holds no event, or more than ``BatchLimits/maximumEvents``.
    private static func check(count: Int, limits: BatchLimits) throws(APIError) {
        guard count > 0 else { throw eventsNotAnArray(.array([])) }
        guard count <= limits.maximumEvents else {
            throw APIError(.tooManyEvents, "the batch holds \(count) events; the most is \(limits.maximumEvents)")
        }
    }

    private mutating func reserve(_ count: Int) {
        items.reserveCapacity(count)
        userIDs.reserveCapacity(count)
    }

    /// Appends the item of one event (an element of `events`); a refusal's pointer is the body's
    /// (`/events/3/parameters`).
    private mutating func append(_ event: Value, routedUser: String?) {
        let routed = routedUser.flatMap { $0.isEmpty ? nil : $0 }
        let place = "/events/\(items.count)"
        guard case .object(let object) = event else {
            userIDs.append(routed)
            items.append(
                .failure(
                    APIError(.invalidField, "each event must be a JSON object, not \(event.typeName)", pointer: place)
                )
            )
            return
        }
        if case .string(let user)? = object["user_id"] { userIDs.append(user) } else { userIDs.append(routed) }
        do throws(APIError) {
            items.append(.success(try EventRequest(object: object, routedUser: routedUser, index: items.count)))
        } catch {
            items.append(.failure(error.under(place)))
        }
    }

    /// Reads a batch whose body nests too deep somewhere: the body's structure (``JSONSpans``), then each member
    /// of the batch object and each event on its own, with the limits a single body has. An event too deep is
    /// refused in its place (`malformed_json`, as the same body sent alone); anything else that is not JSON, or
    /// too deep outside the events, refuses the batch.
    private init(eventByEvent body: [UInt8], limits: BatchLimits, routedUser: String?) throws(APIError) {
        let spans = JSONSpans(bytes: body)
        let notJSON = APIError(.malformedJSON, "the body is not JSON")
        guard let document = spans.document(), let members = spans.members(of: document) else {
            throw APIError(.malformedJSON, "the body must be a JSON object")
        }
        var eventsSpan: Range<Int>?
        var eventsValue: Value?
        for member in members {
            guard case .string(let key)? = try? Value(jsonBytes: Array(body[member.key])) else { throw notJSON }
            let isEvents = key.utf8.elementsEqual("events".utf8)
            if isEvents, body[member.value.lowerBound] == UInt8(ascii: "[") {
                // Read below, event by event (the last `events` wins, as in a parsed object).
                eventsSpan = member.value
                eventsValue = nil
                continue
            }
            let value: Value
            do {
                value = try Value(jsonBytes: Array(body[member.value]), maximumDepth: EventRequest.maximumDepth + 1)
            } catch {
                throw APIError(.malformedJSON, "the body is not JSON: \(error.message)")
            }
            if isEvents {
                eventsSpan = nil
                eventsValue = value
            } else if key.utf8.elementsEqual("sent_at".utf8) {
                sentAt = try EventRequest.time(value, member: "sent_at")
            }
        }
        guard let eventsSpan else {
            guard let eventsValue, eventsValue != .null else { throw Self.missingEvents }
            throw Self.eventsNotAnArray(eventsValue)
        }
        guard let elements = spans.elements(of: eventsSpan) else { throw notJSON }
        try Self.check(count: elements.count, limits: limits)
        reserve(elements.count)
        for element in elements {
            do {
                let event = try Value(jsonBytes: Array(body[element]), maximumDepth: EventRequest.maximumDepth)
                append(event, routedUser: routedUser)
            } catch  where error.code == .nestingTooDeep {
                let routed = routedUser.flatMap { $0.isEmpty ? nil : $0 }
                userIDs.append(Self.userID(in: element, of: spans) ?? routed)
                let place = "/events/\(items.count)"
                items.append(
                    .failure(APIError(.malformedJSON, "the event is not JSON: \(error.message)", pointer: place))
                )
            } catch {
                throw APIError(.malformedJSON, "the body is not JSON: \(error.message)")
            }
        }
        placeRefusals(in: body)
    }

    /// The `user_id` string of the event object `span`, read without the rest of the event.
    private static func userID(in span: Range<Int>, of spans: JSONSpans) -> String? {
        var userID: String?
        for member in spans.members(of: span) ?? [] {
            guard case .string(let key)? = try? Value(jsonBytes: Array(spans.bytes[member.key])),
                key.utf8.elementsEqual("user_id".utf8)
            else { continue }
            if case .string(let user)? = try? Value(jsonBytes: Array(spans.bytes[member.value]), maximumDepth: 1) {
                userID = user
            } else {
                userID = nil
            }
        }
        return userID
    }
}

/// How large a batch may be: `--max-batch-events` and `--max-batch-bytes`.
struct BatchLimits: Sendable {
    /// The most events in one batch (413 `too_many_events` beyond).
    var maximumEvents: Int
    /// The largest batch body in bytes (413 `body_too_large` beyond).
    var maximumBytes: Int
}

/// Appends the answer of one pushed event without its closing brace:
/// `{"fired":[…],"records":[…],…,"user_id":…,"durable":…`.
func appendEventAnswerMembers(_ result: PushResult, userID: String, durable: Bool, to bytes: inout [UInt8]) {
    result.appendJSONMembers(to: &bytes)
    bytes.append(contentsOf: #","user_id":"#.utf8)
    JSONWriter.writeString(userID, into: &bytes)
    bytes.append(contentsOf: durable ? #","durable":true"#.utf8 : #","durable":false"#.utf8)
}

/// The `200` answer of one pushed event: `{"fired":[…],"records":[…],…,"user_id":…,"durable":…}`.
func eventAnswer(_ result: PushResult, userID: String, durable: Bool) -> Response {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(1024)
    appendEventAnswerMembers(result, userID: userID, durable: durable, to: &bytes)
    bytes.append(0x7D)
    return Response(
        status: .ok,
        headers: [.contentType: "application/json; charset=utf-8"],
        body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
    )
}
