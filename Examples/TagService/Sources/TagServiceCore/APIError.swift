import ContainerKit
import Hummingbird

/// A request the service refuses, answered as `{"error": {"code", "message"}}` with its HTTP status; a refusal of
/// one value of the body also says where it is: `"pointer"` (RFC 6901), `"line"` and `"column"`.
struct APIError: Error, Sendable {
    /// What kind of refusal, with its status.
    struct Code: RawRepresentable, Hashable, Sendable {
        var rawValue: String
        init(rawValue: String) { self.rawValue = rawValue }

        /// The body is not JSON, or not a JSON object (400).
        static let malformedJSON = Code(rawValue: "malformed_json")
        /// A required member is missing (400).
        static let missingField = Code(rawValue: "missing_field")
        /// A member has the wrong type or an unusable value (400).
        static let invalidField = Code(rawValue: "invalid_field")
        /// The `message_id` is not a string, empty, longer than 256 bytes or holds a NUL (400).
        static let invalidEventID = Code(rawValue: "invalid_event_id")
        /// The request presents none of the write keys (`--write-key`), or `/metrics` not the metrics token
        /// (401, with a `WWW-Authenticate` challenge).
        static let unauthorized = Code(rawValue: "unauthorized")
        /// The body is larger than `--max-body-bytes` (413).
        static let bodyTooLarge = Code(rawValue: "body_too_large")
        /// The body is not `application/json` (415).
        static let unsupportedMediaType = Code(rawValue: "unsupported_media_type")
        /// The records could not be made durable; the client should retry (503).
        static let notDurable = Code(rawValue: "not_durable")
        /// The store's database (PostgreSQL, `--postgres`) did not answer within `--postgres-timeout`: nothing of
        /// the event was stored, and `/ready` answers 503 until a call succeeds again; the client should retry
        /// (503).
        static let postgresTimeout = Code(rawValue: "postgres_timeout")
        /// No container is live, so the event would not be evaluated; the client should retry (503).
        static let noContainer = Code(rawValue: "no_container")
        /// The user's saved session cannot be loaded now; the client should retry (503).
        static let sessionsUnavailable = Code(rawValue: "sessions_unavailable")
        /// The body's `user_id` differs from the one in the `X-User-ID` header or the path (400).
        static let userMismatch = Code(rawValue: "user_id_mismatch")
        /// The `X-User-ID` header or the path's user id cannot be used: repeated, not UTF-8 (percent-decoded, for
        /// the path), empty, too long, with a NUL or U+FFFD (400; see ``RoutedUser``).
        static let invalidUserID = Code(rawValue: "invalid_user_id")
        /// The `X-User-ID` header and the path name two different users (400).
        static let conflictingUserID = Code(rawValue: "conflicting_user_id")
        /// The push would take the user's data layer past `--max-session-bytes` (413): it was refused and changed
        /// nothing.
        static let sessionTooLarge = Code(rawValue: "session_too_large")
        /// A batch holds more events than `--max-batch-events` (413).
        static let tooManyEvents = Code(rawValue: "too_many_events")
        /// The request was not received whole within `--request-timeout` (408; the connection is closed).
        static let requestTimeout = Code(rawValue: "request_timeout")
        /// The service is shutting down and cut a request still in progress after `--shutdown-timeout`: it was
        /// not acknowledged; the client should retry (503; the connection is closed).
        static let shuttingDown = Code(rawValue: "shutting_down")
        /// The record queue is not running (not started yet, or stopping), so nothing would store the
        /// event's records; the client should retry (503).
        static let queueNotRunning = Code(rawValue: "queue_not_running")
        /// The body's `Content-Encoding` is not one the service reads (gzip, deflate, identity) (415).
        static let unsupportedContentEncoding = Code(rawValue: "unsupported_content_encoding")
        /// The body is not of the coding its `Content-Encoding` names (corrupt or truncated gzip) (400).
        static let malformedEncoding = Code(rawValue: "malformed_encoding")
        /// A query parameter holds what it cannot be (`/ready?wait=10s`, `pushes.json?after=x`) (400).
        static let invalidParameter = Code(rawValue: "invalid_parameter")
    }

    var code: Code
    var message: String
    /// Where in the body the refused value is, as a JSON pointer (RFC 6901; `""` is the whole body, and a missing
    /// member's pointer is the object that lacks it), when the refusal is about one value.
    var pointer: String?
    /// The line and column of that value in the body (or where the body stopped being JSON), when known.
    var location: SourceLocation?

    init(_ code: Code, _ message: String, pointer: String? = nil, location: SourceLocation? = nil) {
        self.code = code
        self.message = message
        self.pointer = pointer
        self.location = location
    }

    /// The refusal of a body that is not JSON: the parser's message, after the line:column it stopped at.
    static func notJSON(_ error: ContainerError) -> APIError {
        let place = error.location.map { " at \($0.line):\($0.column)" } ?? ""
        return APIError(.malformedJSON, "the body is not JSON\(place): \(error.message)", location: error.location)
    }

    /// This refusal with the place of its pointer in `body`, the request's body it was read from. The body is read
    /// again, with positions, only here: on the refusal's path, never for a request that is taken.
    func placed(in body: [UInt8]) -> APIError {
        guard pointer != nil else { return self }
        return placed(in: Self.positions(of: body))
    }

    /// This refusal with its pointer under `prefix`.
    func under(_ prefix: String) -> APIError {
        var moved = self
        moved.pointer = pointer.map { prefix + $0 }
        return moved
    }

    /// This refusal with the line and column of its pointer in `document` (see ``positions(of:)``).
    func placed(in document: SourceDocument?) -> APIError {
        guard let pointer, let document else { return self }
        var placed = self
        placed.location = document.location(of: pointer)
        return placed
    }

    /// The JSON text `body` read with the positions of its values, to place refusals in it.
    static func positions(of body: [UInt8]) -> SourceDocument? {
        try? ContainerLoader(options: LoadOptions(recordPositions: true)).readDocument(bytes: body, file: nil)
    }

    var status: HTTPResponse.Status {
        switch code {
        case .unauthorized: .unauthorized
        case .requestTimeout: .requestTimeout
        case .bodyTooLarge, .tooManyEvents, .sessionTooLarge: .contentTooLarge
        case .unsupportedMediaType, .unsupportedContentEncoding: .unsupportedMediaType
        case .notDurable, .postgresTimeout, .noContainer, .sessionsUnavailable, .queueNotRunning, .shuttingDown:
            .serviceUnavailable
        default: .badRequest
        }
    }

    /// The refusal of a push whose records are not durable, by the ``DurabilityError``'s code (503 either
    /// way): a failed commit (`disk_full`, `io_error`, …) marks the last commit failed for `/ready`; a store
    /// past its deadline (`timeout`: PostgreSQL did not answer within `--postgres-timeout`) answers
    /// `postgres_timeout`; a queue that is not running or stopped says so, and leaves the commit history
    /// alone. The body names no server, URL or statement (the log has the error).
    init(durability error: DurabilityError, readiness: Readiness) {
        switch error.code {
        case .notRunning, .stopped:
            self.init(
                .queueNotRunning,
                "the record queue is not running; the event's records were not stored, retry later"
            )
        case .timeout:
            readiness.commit(succeeded: false)
            self.init(
                .postgresTimeout,
                "the database did not answer within its deadline; the event's records were not stored, retry later"
            )
        default:
            readiness.commit(succeeded: false)
            self.init(.notDurable, "the event's records could not be made durable now; retry later")
        }
    }

    /// Reads the query parameter `name` of `request` as a number of the kind `read` makes (`nil`: absent); a
    /// value that is not one is refused (`invalid_parameter`), saying what was found and what it must be.
    static func queryParameter<Number>(
        _ name: String,
        of request: Request,
        must kind: String,
        _ read: (String) -> Number?
    ) throws(APIError) -> Number? {
        guard let text = request.uri.queryParameters[Substring(name)].map(String.init) else { return nil }
        guard let value = read(text) else {
            let shown = text.count > 40 ? String(text.prefix(40)) + "…" : text
            throw APIError(.invalidParameter, "'\(name)' must be \(kind), not '\(shown)'")
        }
        return value
    }

    /// The refusal of a push the library refused (``PushResult/refusal``: `session_too_large`).
    init(refusal: ContainerError) {
        if refusal.code == .sessionTooLarge {
            self.init(
                .sessionTooLarge,
                "the event would make the user's data layer larger than allowed; it was not pushed"
            )
        } else if refusal.code == .invalidEventID {
            self.init(.invalidEventID, "the event was refused: \(refusal.message)")
        } else {
            self.init(.invalidField, "the event was refused: \(refusal.message)")
        }
    }

    /// The error as a response.
    var response: Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: jsonBytes))
        )
    }

    /// The answer's body: `{"error": {"code", "message", "pointer"?, "line"?, "column"?}}`.
    var jsonBytes: [UInt8] {
        JSONWriter.bytes(.object(["error": .object(jsonMembers)]))
    }

    /// The members of the answer's `error` object: `code`, `message`, and where it is known, the refused value's
    /// `pointer`, `line` and `column`.
    var jsonMembers: ValueMap {
        var error = ValueMap()
        error["code"] = .string(code.rawValue)
        error["message"] = .string(message)
        if let pointer { error["pointer"] = .string(pointer) }
        if let location {
            error["line"] = .int(Int64(location.line))
            error["column"] = .int(Int64(location.column))
        }
        return error
    }
}

extension Response {
    /// A response with `value` as compact JSON.
    static func json(_ value: ValueMap, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: JSONWriter.bytes(.object(value))))
        )
    }
}
