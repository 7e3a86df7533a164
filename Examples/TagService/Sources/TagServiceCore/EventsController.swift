import ContainerKit
import ContainerKitBraze
import Hummingbird
import Logging
import NIOCore

/// `POST /v1/events`: one push into the user's session, answered with the tags that fired and the
/// records they made — once those records are durable, unless the service was started with
/// `--no-durable-wait`. `POST /v1/batch`: many of them in one request (``BatchRequest``), with one wait
/// for the durability of all their records. The user may also come in the `X-User-ID` header or the path
/// (``RoutedUser``), with the same rules as in `--postgres` mode.
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
    let batchLimits: BatchLimits
    let logger: Logging.Logger

    /// The routes: `POST /v1/events` and `POST /v1/batch`, and with the user in the path (``RoutedUser``)
    /// `POST /v1/users/{user_id}/events` and `POST /v1/users/{user_id}/batch`, as in `--postgres` mode.
    func register(on router: some RouterMethods<BasicRequestContext>) {
        router.post("v1/events") { request, _ in
            await self.answer { () async throws(APIError) in try await self.handle(request, pathUser: nil) }
        }
        router.post("v1/users/:user_id/events") { request, context in
            let user = context.parameters.get("user_id") ?? ""
            return await self.answer { () async throws(APIError) in try await self.handle(request, pathUser: user) }
        }
        router.post("v1/batch") { request, _ in
            await self.answer { () async throws(APIError) in try await self.handleBatch(request, pathUser: nil) }
        }
        router.post("v1/users/:user_id/batch") { request, context in
            let user = context.parameters.get("user_id") ?? ""
            return await self.answer { () async throws(APIError) in
                try await self.handleBatch(request, pathUser: user)
            }
        }
    }

    private func answer(_ body: () async throws(APIError) -> Response) async -> Response {
        do throws(APIError) {
            return try await body()
        } catch {
            return error.response
        }
    }

    /// `POST /v1/events` (`pathUser`: the `:user_id` of `POST /v1/users/{user_id}/events`).
    func handle(_ request: Request, pathUser: String?) async throws(APIError) -> Response {
        let routedUser = try RoutedUser.of(request, pathSegment: pathUser)
        let event = try EventRequest(
            body: try await requestBody(of: request, limit: maximumBodyBytes),
            routedUser: routedUser
        )
        try requireContainer(events: 1)
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
        return eventAnswer(result, userID: event.userID, durable: waitsForDurability)
    }

    /// `POST /v1/batch`: each readable event pushed in order (so a user's events in the order they are
    /// listed), its answer's item written at once (``BatchAnswer``: the push's result is released before the
    /// next push), then one wait until every record of the batch is durable, then the answer. When that wait
    /// fails, each event's own writes tell which events are durable (they have all ended by then, so this
    /// waits no more).
    func handleBatch(_ request: Request, pathUser: String?) async throws(APIError) -> Response {
        let routedUser = try RoutedUser.of(request, pathSegment: pathUser)
        let batch = try BatchRequest(
            body: try await requestBody(of: request, limit: batchLimits.maximumBytes),
            limits: batchLimits,
            routedUser: routedUser
        )
        try requireContainer(events: batch.items.count)
        var answer = BatchAnswer(events: batch.items.count)
        for (item, userID) in zip(batch.items, batch.userIDs) {
            switch item {
            case .failure(let error):
                answer.appendRefused(error, userID: userID)
            case .success(let event):
                do throws(APIError) {
                    let session = try await self.session(of: event)
                    let result = await session.push(event: event.event, parameters: event.parameters)
                    sessions.didChange(session)
                    answer.appendPushed(
                        result,
                        userID: event.userID,
                        durable: waitsForDurability,
                        tokens: result.durability
                    )
                } catch {
                    answer.appendRefused(error, userID: userID)
                }
            }
        }
        if waitsForDurability, !answer.tokens.isEmpty {
            do {
                try await DurabilityToken.waitUntilDurable(answer.tokens)
                readiness.commit(succeeded: true)
            } catch {
                // `error` is a DurabilityError, answered by its code (as for one event).
                logger.error(
                    "records of a batch not durable",
                    metadata: ["code": "\(error.code)", "error": "\(error.message)"]
                )
                await answer.refuseUndurable(APIError(durability: error, readiness: readiness))
            }
        }
        return answer.response()
    }

    /// Without a live container nothing would be evaluated: the answer would say "no tag fired, durable"
    /// about an event no container saw. Refuse it (nothing is pushed) so that the client retries.
    private func requireContainer(events: Int) throws(APIError) {
        guard sessions.tagManager.containers.isEmpty else { return }
        for _ in 0..<events { metrics.refusedEvent(reason: "no_container") }
        throw APIError(.noContainer, "no container is live; the event was not evaluated, retry later")
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
}
