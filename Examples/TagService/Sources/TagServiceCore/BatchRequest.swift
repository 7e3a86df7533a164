import ContainerKit
import Hummingbird
import NIOCore

/// The body of `POST /v1/batch`: `{"events": [event, …]}`, each event what `POST /v1/events` takes
/// (`{"user_id", "event", "parameters"?, "context"?}`), of one user or of many.
///
/// The batch as a whole is refused (400, 413) only when it cannot be read: not JSON, no `events` array, an
/// empty one, more than ``BatchLimits/maximumEvents`` events or more than ``BatchLimits/maximumBytes``
/// bytes. An event that cannot be read is refused in its place, with the error `POST /v1/events` would
/// answer, and the others go on.
struct BatchRequest: Sendable {
    /// Each event in order: the request, or why it is refused.
    var items: [Result<EventRequest, APIError>]
    /// The user each event names (for one without `user_id`, the routed user), for its item in the answer —
    /// also when the event is refused.
    var userIDs: [String?]

    /// Reads a batch body; `routedUser` as in ``EventRequest/init(body:routedUser:)``, for every event.
    init(body: [UInt8], limits: BatchLimits, routedUser: String? = nil) throws(APIError) {
        let value: Value
        do {
            // Two levels more than a single body: the batch object and its array.
            value = try Value(jsonBytes: body, maximumDepth: EventRequest.maximumDepth + 2)
        } catch {
            throw APIError(.malformedJSON, "the body is not JSON: \(error.message)")
        }
        guard case .object(let object) = value else {
            throw APIError(.malformedJSON, "the body must be a JSON object")
        }
        guard let member = object["events"], !member.isUndefined, member != .null else {
            throw APIError(.missingField, "'events' is required")
        }
        guard case .array(let events) = member, !events.isEmpty else {
            throw APIError(.invalidField, "'events' must be a non-empty array")
        }
        guard events.count <= limits.maximumEvents else {
            throw APIError(
                .tooManyEvents,
                "the batch holds \(events.count) events; the most is \(limits.maximumEvents)"
            )
        }
        // One pass over the events, each object read where it is.
        let routed = routedUser.flatMap { $0.isEmpty ? nil : $0 }
        items = []
        items.reserveCapacity(events.count)
        userIDs = []
        userIDs.reserveCapacity(events.count)
        for event in events {
            guard case .object(let object) = event else {
                userIDs.append(routed)
                items.append(.failure(APIError(.invalidField, "each event must be a JSON object")))
                continue
            }
            if case .string(let user)? = object["user_id"] { userIDs.append(user) } else { userIDs.append(routed) }
            do throws(APIError) {
                items.append(.success(try EventRequest(object: object, routedUser: routedUser)))
            } catch {
                items.append(.failure(error))
            }
        }
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
