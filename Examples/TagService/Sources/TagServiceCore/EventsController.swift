import ContainerKit
import ContainerKitBraze
import Foundation
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
    /// The live debug page (`--debug-token`), which traces the pushes of followed users and of requests that
    /// carry its header; `nil`: off, and a push pays one branch for it.
    var debug: DebugHub? = nil

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

    /// `POST /v1/events` (`pathUser`: the `:user_id` of `POST /v1/users/{user_id}/events`): one
    /// ``SessionStore/push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)``, which loads the
    /// user's session on a miss, pushes, and commits the push's records (and, with PostgreSQL, the session's
    /// change) in one append; the answer waits for that commit unless `--no-durable-wait`. An event whose
    /// `message_id` the session has seen is not pushed again: the answer is the original's outcome with
    /// `"duplicate": true` (200), once the original is durable.
    func handle(_ request: Request, pathUser: String?) async throws(APIError) -> Response {
        let routedUser = try RoutedUser.of(request, pathSegment: pathUser)
        let receivedAt = Date()
        let event = try EventRequest(
            body: try await requestBody(of: request, limit: maximumBodyBytes),
            routedUser: routedUser
        )
        if let command = event.command {
            // A consent command changes the session's consent state only: no container is needed. Traced for the
            // debug page, its trace says what it changed.
            let tracing = debug?.tracing(userID: event.userID, headers: request.headers)
            defer { if let tracing { debug?.ended(tracing) } }
            let result: PushResult
            do {
                result = try await sessions.push(
                    command,
                    for: event.userID,
                    context: event.context,
                    waitsForDurability: waitsForDurability,
                    tracing: tracing != nil
                )
            } catch {
                throw refusal(error, userID: event.userID)
            }
            if waitsForDurability { readiness.commit(succeeded: true) }
            if let tracing { debug?.record(result, of: event, tracing: tracing) }
            return eventAnswer(result, userID: event.userID, durable: waitsForDurability)
        }
        try requireContainer(events: 1)
        let tracing = debug?.tracing(userID: event.userID, headers: request.headers)
        defer { if let tracing { debug?.ended(tracing) } }
        let result: PushResult
        let eventTime = event.eventTime(receivedAt: receivedAt)
        metrics.noteEventTime(eventTime, receivedAt: receivedAt)
        do {
            result = try await sessions.push(
                event: event.event,
                parameters: event.parameters,
                for: event.userID,
                context: event.context,
                eventID: event.eventID,
                eventTime: eventTime,
                waitsForDurability: waitsForDurability,
                tracing: tracing != nil
            )
        } catch {
            throw refusal(error, userID: event.userID)
        }
        if waitsForDurability { readiness.commit(succeeded: true) }
        if let tracing { debug?.record(result, of: event, tracing: tracing) }
        if let refusal = result.refusal { throw APIError(refusal: refusal) }
        if result.isDuplicate { metrics.duplicateEvents.increment() }
        return eventAnswer(result, userID: event.userID, durable: waitsForDurability)
    }

    /// `POST /v1/batch`: every readable event pushed in order (so a user's events in the order they are
    /// listed), then one wait for all their commits (``SessionStore/push(_:waitsForDurability:prepare:)``:
    /// they share the store's group commits, and events fenced by another instance are pushed again on the
    /// newest session), then the answer, one item per event. Each event with a `message_id` is deduplicated on its
    /// own: a second item with the same ID (of the same user) in one batch is answered as a duplicate of the first.
    func handleBatch(_ request: Request, pathUser: String?) async throws(APIError) -> Response {
        let routedUser = try RoutedUser.of(request, pathSegment: pathUser)
        let receivedAt = Date()
        let batch = try BatchRequest(
            body: try await requestBody(of: request, limit: batchLimits.maximumBytes),
            limits: batchLimits,
            routedUser: routedUser
        )
        try requireContainer(events: batch.items.count)
        var requests: [SessionStore.PushRequest] = []
        var positions: [Int] = []
        var traced: [Int: DebugTracing] = [:]
        defer { for tracing in traced.values { debug?.ended(tracing) } }
        for (index, item) in batch.items.enumerated() {
            guard case .success(let event) = item else { continue }
            let tracing = debug?.tracing(userID: event.userID, headers: request.headers)
            if let tracing { traced[requests.count] = tracing }
            if let command = event.command {
                requests.append(
                    SessionStore.PushRequest(
                        command: command,
                        userID: event.userID,
                        context: event.context,
                        tracing: tracing != nil
                    )
                )
                positions.append(index)
                continue
            }
            let eventTime = event.eventTime(receivedAt: receivedAt, sentAt: batch.sentAt)
            metrics.noteEventTime(eventTime, receivedAt: receivedAt)
            requests.append(
                SessionStore.PushRequest(
                    event: event.event,
                    parameters: event.parameters,
                    userID: event.userID,
                    context: event.context,
                    eventID: event.eventID,
                    eventTime: eventTime,
                    tracing: tracing != nil
                )
            )
            positions.append(index)
        }
        let pushed = await sessions.push(
            requests,
            waitsForDurability: waitsForDurability
        )
        // Refused items keep their refusal; each pushed one gets its outcome below.
        var outcomes: [Result<PushResult, APIError>?] = batch.items.map { item in
            if case .failure(let error) = item { return .failure(error) }
            return nil
        }
        var allDurable = true
        for (index, outcome) in pushed.enumerated() {
            switch outcome {
            case .success(let result):
                if let tracing = traced[index] { debug?.record(result, of: requests[index], tracing: tracing) }
                if result.isDuplicate { metrics.duplicateEvents.increment() }
                outcomes[positions[index]] = result.refusal.map { .failure(APIError(refusal: $0)) } ?? .success(result)
            case .failure(let error):
                if case .notDurable = error { allDurable = false }
                outcomes[positions[index]] = .failure(refusal(error, userID: requests[index].userID))
            }
        }
        if waitsForDurability, allDurable, !requests.isEmpty { readiness.commit(succeeded: true) }
        return BatchAnswer.response(outcomes.map { $0! }, userIDs: batch.userIDs, durable: waitsForDurability)
    }

    /// The answer to a push the session store could not acknowledge: its session could not be loaded, or
    /// its commit failed (answered by the error's code, never its text; the detail goes to the log).
    private func refusal(_ error: SessionStore.PushError, userID: String) -> APIError {
        switch error {
        case .sessionUnavailable(let failure):
            metrics.refusedEvent(reason: "sessions_unavailable")
            logger.error("cannot load a session", metadata: ["user_id": "\(userID)", "error": "\(failure.message)"])
            return APIError(.sessionsUnavailable, "the user's session cannot be loaded now; retry later")
        case .notDurable(let failure, _):
            logger.error(
                "records not durable",
                metadata: ["user_id": "\(userID)", "code": "\(failure.code)", "error": "\(failure.message)"]
            )
            return APIError(durability: failure, readiness: readiness)
        }
    }

    /// Without a live container nothing would be evaluated: the answer would say "no tag fired, durable"
    /// about an event no container saw. Refuse it (nothing is pushed) so that the client retries.
    private func requireContainer(events: Int) throws(APIError) {
        guard !sessions.tagManager.hasLiveContainers else { return }
        for _ in 0..<events { metrics.refusedEvent(reason: "no_container") }
        throw APIError(.noContainer, "no container is live; the event was not evaluated, retry later")
    }
}
