import ContainerKit
import ContainerKitBraze
import Hummingbird
import Logging
import NIOCore

/// `POST /v1/events`: one push into the user's session, answered with the tags that fired and the
/// records they made — once those records are durable, unless the service was started with
/// `--no-durable-wait`.
///
/// A request that cannot be read (not JSON, a missing `user_id` or `event`, a body over the limit) is
/// refused with 400 or 413 and a JSON error before anything is pushed, so nothing is enqueued for it.
/// The handler counts nothing: events, tags and records reach the metrics through ContainerKit's
/// observer hooks, answers through ``RequestMetricsMiddleware``.
struct EventsController: Sendable {
    let sessions: SessionStore
    let metrics: ServiceMetrics
    let readiness: Readiness
    let waitsForDurability: Bool
    let maximumBodyBytes: Int
    let logger: Logging.Logger

    func register(on router: Router<BasicRequestContext>) {
        router.post("v1/events") { request, context in
            do throws(APIError) {
                return try await self.handle(request)
            } catch {
                return error.response
            }
        }
    }

    func handle(_ request: Request) async throws(APIError) -> Response {
        let event = try EventRequest(body: try await body(of: request))
        // Without a live container nothing would be evaluated: the answer would say "no tag fired, durable"
        // about an event no container saw. Refuse it (nothing is pushed) so that the client retries.
        guard !sessions.tagManager.containers.isEmpty else {
            metrics.refusedEvent(reason: "no_container")
            throw APIError(.noContainer, "no container is live; the event was not evaluated, retry later")
        }
        let session = try await self.session(of: event)
        let result = await session.push(event: event.event, parameters: event.parameters)
        sessions.didChange(session)
        if waitsForDurability {
            do {
                try await result.waitUntilDurable()
                readiness.commit(succeeded: true)
            } catch {
                // `error` is a DurabilityError: answered by its code, never by its text. The detail (with the
                // segment's path) goes to the log only; the client learns what to do.
                logger.error(
                    "records not durable",
                    metadata: ["user_id": "\(event.userID)", "code": "\(error.code)", "error": "\(error.message)"]
                )
                throw APIError(durability: error, readiness: readiness)
            }
        }
        // {"fired":[…],"records":[…],…,"user_id":…,"durable":…}, written straight to bytes.
        var answer: [UInt8] = []
        answer.reserveCapacity(1024)
        result.appendJSONMembers(to: &answer)
        answer.append(contentsOf: #","user_id":"#.utf8)
        JSONWriter.writeString(event.userID, into: &answer)
        answer.append(contentsOf: waitsForDurability ? #","durable":true}"#.utf8 : #","durable":false}"#.utf8)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer))
        )
    }

    /// The user's session: the live one, the saved one (loaded now; other users do not wait for it), or a
    /// new one whose Braze user is the request's `user_id` (an `external_id`), so that every record its
    /// tags make names the user.
    private func session(of event: EventRequest) async throws(APIError) -> DataLayer {
        let session: DataLayer
        do {
            session = try await sessions.loadSession(for: event.userID, context: event.context)
        } catch {
            metrics.refusedEvent(reason: "sessions_unavailable")
            logger.error(
                "cannot load a session",
                metadata: ["user_id": "\(event.userID)", "error": "\(error.message)"]
            )
            throw APIError(.sessionsUnavailable, "the user's session cannot be loaded now; retry later")
        }
        if BrazeTagProvider.user(of: session) == nil {
            BrazeTagProvider.setUser(.externalID(event.userID), on: session)
        }
        return session
    }

    /// The body, refused when it is larger than ``maximumBodyBytes``.
    private func body(of request: Request) async throws(APIError) -> [UInt8] {
        let tooLarge = APIError(.bodyTooLarge, "the body is larger than \(maximumBodyBytes) bytes")
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumBodyBytes {
            throw tooLarge
        }
        do {
            var buffer = try await request.body.collect(upTo: maximumBodyBytes)
            return buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch is NIOTooManyBytesError {
            throw tooLarge
        } catch {
            throw APIError(.malformedJSON, "the body could not be read: \(error)")
        }
    }
}
