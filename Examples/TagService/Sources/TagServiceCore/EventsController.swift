import ContainerKit
import CoreMetrics
import Hummingbird
import Logging
import NIOCore

/// `POST /v1/events`: one push into the user's session, answered with the tags that fired and the
/// records they made — once those records are durable, unless the service was started with
/// `--no-durable-wait`.
///
/// A request that cannot be read (not JSON, a missing `user_id` or `event`, a body over the limit) is
/// refused with 400 or 413 and a JSON error before anything is pushed, so nothing is enqueued for it.
struct EventsController: Sendable {
    let sessions: UserSessions
    let pipeline: RecordPipeline
    let metrics: ServiceMetrics
    let waitsForDurability: Bool
    let maximumBodyBytes: Int
    let logger: Logging.Logger

    func register(on router: Router<BasicRequestContext>) {
        router.post("v1/events") { request, context in
            do throws(APIError) {
                return try await self.handle(request)
            } catch {
                if error.code != .notDurable { self.metrics.badRequests.increment() }
                return error.response
            }
        }
    }

    func handle(_ request: Request) async throws(APIError) -> Response {
        let start = ContinuousClock.now
        let event = try EventRequest(body: try await body(of: request))
        let session = sessions.session(for: event.userID, context: event.context)
        let result = await session.push(event: event.event, parameters: event.parameters)
        metrics.record(result)
        guard case .object(var answer) = result.jsonValue else { preconditionFailure("a push result is an object") }
        answer["user_id"] = .string(event.userID)
        if waitsForDurability {
            do {
                try await pipeline.waitUntilDurable(result)
            } catch {
                logger.error("records not durable", metadata: ["user_id": "\(event.userID)", "error": "\(error)"])
                throw APIError(.notDurable, "the event's records could not be made durable: \(error)")
            }
            if case .array(let records)? = answer["records"] {
                metrics.recordsAcknowledged.increment(by: records.count)
            }
        }
        answer["durable"] = .bool(waitsForDurability)
        metrics.eventLatency.recordInterval(since: start)
        return Response.json(answer)
    }

    /// The request body, refused when it is larger than ``maximumBodyBytes``.
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

extension CoreMetrics.Timer {
    /// Records the time since `start`.
    func recordInterval(since start: ContinuousClock.Instant) {
        let elapsed = ContinuousClock.now - start
        let (seconds, attoseconds) = elapsed.components
        recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
