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
        userIDs = events.map { event in
            if case .string(let user)? = event.objectValue?["user_id"] { return user }
            return routedUser.flatMap { $0.isEmpty ? nil : $0 }
        }
        items = events.map { event -> Result<EventRequest, APIError> in
            guard case .object(let object) = event else {
                return .failure(APIError(.invalidField, "each event must be a JSON object"))
            }
            do throws(APIError) {
                return .success(try EventRequest(object: object, routedUser: routedUser))
            } catch {
                return .failure(error)
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

/// The answer of `POST /v1/batch`, written straight to bytes:
/// `{"results": [item, …], "accepted": n, "refused": m}` with one item per event, in order — a pushed
/// event's item is the body `POST /v1/events` answers plus `"status": 200`; a refused one's is
/// `{"error": {"code", "message"}, "status": <its HTTP status>}` (with `user_id` when it named one).
struct BatchAnswer {
    private var bytes: [UInt8] = []
    private var accepted = 0
    private var refused = 0

    /// The answer of a batch whose events had `outcomes` (in order), naming `userIDs` (the request's
    /// ``BatchRequest/userIDs``).
    static func response(
        _ outcomes: [Result<PushResult, APIError>],
        userIDs: [String?],
        durable: Bool
    ) -> Response {
        var answer = BatchAnswer(capacity: 1024 * outcomes.count)
        for (outcome, userID) in zip(outcomes, userIDs) {
            switch outcome {
            case .success(let result): answer.appendPushed(result, userID: userID ?? "", durable: durable)
            case .failure(let error): answer.appendRefused(error, userID: userID)
            }
        }
        return answer.response()
    }

    private init(capacity: Int) {
        bytes.reserveCapacity(capacity)
        bytes.append(contentsOf: #"{"results":["#.utf8)
    }

    /// Appends a pushed event's item.
    private mutating func appendPushed(_ result: PushResult, userID: String, durable: Bool) {
        separate()
        accepted += 1
        appendEventAnswerMembers(result, userID: userID, durable: durable, to: &bytes)
        bytes.append(contentsOf: #","status":200}"#.utf8)
    }

    /// Appends a refused event's item.
    private mutating func appendRefused(_ error: APIError, userID: String?) {
        separate()
        refused += 1
        bytes.append(contentsOf: #"{"error":{"code":"#.utf8)
        JSONWriter.writeString(error.code.rawValue, into: &bytes)
        bytes.append(contentsOf: #","message":"#.utf8)
        JSONWriter.writeString(error.message, into: &bytes)
        bytes.append(0x7D)
        if let userID {
            bytes.append(contentsOf: #","user_id":"#.utf8)
            JSONWriter.writeString(userID, into: &bytes)
        }
        bytes.append(contentsOf: #","status":"#.utf8)
        bytes.append(contentsOf: String(error.status.code).utf8)
        bytes.append(0x7D)
    }

    private mutating func separate() {
        if accepted + refused > 0 { bytes.append(0x2C) }
    }

    /// The `200` response.
    private mutating func response() -> Response {
        bytes.append(contentsOf: #"],"accepted":"#.utf8)
        bytes.append(contentsOf: String(accepted).utf8)
        bytes.append(contentsOf: #","refused":"#.utf8)
        bytes.append(contentsOf: String(refused).utf8)
        bytes.append(0x7D)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes))
        )
    }
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
