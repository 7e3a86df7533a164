import ContainerKit
import ContainerKitBraze
import ContainerKitPostgres
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization

/// `--postgres <url>`: records and sessions in PostgreSQL, so that several instances behind a load balancer
/// share them (Docs/Scaling.md).
///
/// The library's seams carry it: the ``SessionStore`` loads a session it does not hold through
/// ``PostgresSessionPersistence``, and the one ``DeliveryPipeline`` runs over the ``PostgresRecordStore``. A
/// request's push runs on the user's session; its records and the session's checkpoint (the snapshot with its
/// next version) are appended together and committed in the store's next group commit; the client is answered
/// after that commit. A write refused because another instance stored a newer version (the user was served
/// elsewhere meanwhile) drops the stale session, loads the newest one and pushes once more; any other failure
/// answers 503 with nothing acknowledged, and the session is loaded again on the user's next request.
final class PostgresScaleOut: Sendable {
    let store: PostgresRecordStore
    let pipeline: DeliveryPipeline<PostgresRecordStore>
    let sessions: SessionStore
    private let users = KeyedSerialization()

    /// The record store of `configuration`, or `nil` without `--postgres`.
    static func store(_ configuration: TagServiceConfiguration, logger: Logging.Logger) throws -> PostgresRecordStore? {
        guard let url = configuration.postgresURL else { return nil }
        let endpoint = try PostgresEndpoint(url: url)
        var storeConfiguration = PostgresRecordStore.Configuration(
            endpoint: endpoint,
            instanceName: configuration.instanceName
        )
        storeConfiguration.partitions = configuration.postgresPartitions
        storeConfiguration.logger = logger
        logger.info("records and sessions go to postgresql", metadata: ["postgres": "\(endpoint)"])
        return PostgresRecordStore(configuration: storeConfiguration)
    }

    init(
        store: PostgresRecordStore,
        configuration: TagServiceConfiguration,
        sessions: SessionStore,
        diagnostics: any DiagnosticLogger,
        observer: any DeliveryObserver
    ) throws {
        var destination = try Self.destination(configuration)
        if let limit = configuration.brazeRequestsPerSecond {
            destination = SharedRateLimitDestination(destination, requestsPerSecond: limit, store: store)
        }
        var pipelineConfiguration = DeliveryPipeline<PostgresRecordStore>.Configuration()
        // Committed records are never given up on; a flush does not wait for a destination that is down.
        pipelineConfiguration.delivery.retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(100),
            maximumDelay: .seconds(30)
        )
        pipelineConfiguration.flushFailsOnRetry = true
        pipelineConfiguration.delivery.maximumConcurrentDeliveries = 2
        pipelineConfiguration.delivery.logger = diagnostics
        pipelineConfiguration.delivery.observer = observer
        pipelineConfiguration.label = "postgres delivery"
        self.store = store
        self.pipeline = DeliveryPipeline(store: store, destination: destination, configuration: pipelineConfiguration)
        self.sessions = sessions
    }

    /// Where delivered records go: Braze's `/users/track`, or without an endpoint the JSON-lines file.
    private static func destination(_ configuration: TagServiceConfiguration) throws -> any AnalyticsDestination {
        if let endpoint = configuration.brazeEndpoint {
            return BrazeUsersTrackDestination(endpoint: endpoint, apiKey: configuration.brazeAPIKey ?? "")
        }
        return try JSONLinesDestination(destination: .file(path: configuration.recordsFile), synchronizes: true)
    }

    /// The pipeline as a member of the application's service group: graceful shutdown drains it (within its
    /// drain timeout), cancellation stops it at once (what is committed stays in PostgreSQL).
    var services: [any Service] {
        let pipeline = self.pipeline
        return [
            ClosureService {
                try await withGracefulShutdownHandler {
                    try await pipeline.run()
                } onGracefulShutdown: {
                    pipeline.gracefulShutdown()
                }
            }
        ]
    }

    /// Why a push is tried once more on a freshly loaded session.
    private struct StaleSession: Error {}

    /// Pushes `event` into its user's session and returns once its records and the session are committed.
    func push(_ event: EventRequest) async throws(APIError) -> PushResult {
        do {
            return try await users.serialize(event.userID) { () async throws(APIError) -> PushResult in
                do {
                    return try await pushOnce(event)
                } catch is StaleSession {
                    // Served elsewhere meanwhile: the stale copy is gone; push on the newest one.
                    do {
                        return try await pushOnce(event)
                    } catch {
                        throw APIError(.notDurable, "the event could not be committed: \(error)")
                    }
                } catch let error as APIError {
                    throw error
                } catch {
                    throw APIError(.notDurable, "the event could not be committed: \(error)")
                }
            }
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError(.notDurable, "\(error)")
        }
    }

    private func pushOnce(_ event: EventRequest) async throws -> PushResult {
        let (session, result) = try await pushed(event)
        try await commit(Self.records(of: result), of: session, user: event.userID)
        return result
    }

    /// Pushes `event` into its user's session (loaded from PostgreSQL on a miss; a new one names the user for
    /// Braze), without committing anything yet.
    private func pushed(_ event: EventRequest) async throws -> (session: DataLayer, result: PushResult) {
        let session = try await sessions.loadSession(for: event.userID, context: event.context)
        if BrazeTagProvider.user(of: session) == nil {
            BrazeTagProvider.setUser(.externalID(event.userID), on: session)
        }
        return (session, await session.push(event: event.event, parameters: event.parameters))
    }

    /// Appends a push's records with its session's checkpoint and waits for their commit.
    private func commit(_ records: [AnalyticsRecord], of session: DataLayer, user: String) async throws {
        let token = try append(records, of: session, user: user)
        do {
            try await pipeline.waitUntilDurable(ticket: token.ticket)
        } catch {
            throw refused(error, user: user)
        }
    }

    /// Appends a push's records with its session's checkpoint (the snapshot with its next version).
    private func append(_ records: [AnalyticsRecord], of session: DataLayer, user: String) throws -> DurabilityToken {
        // Dropped meanwhile (evicted, or superseded by a save): push again on the one loaded now.
        guard let checkpoint = sessions.checkpoint(session) else { throw StaleSession() }
        do {
            return try pipeline.append(EncodedRecords(records, sessions: [checkpoint]))
        } catch {
            throw refused(DurabilityError(error), user: user)
        }
    }

    /// A refused (or perhaps cut-off) commit: the next request loads what is stored.
    private func refused(_ error: DurabilityError, user: String) -> any Error {
        sessions.invalidate(user)
        return error.code == .superseded ? StaleSession() : error
    }

    /// Pushes each event of a batch into its user's session, in order, and returns once their records and
    /// sessions are committed: one result per item (a refused item stays refused).
    ///
    /// The turnstiles of every user of the batch are held throughout (acquired in one order, so that two
    /// batches cannot wait for each other), as a single push holds its user's. Once every event is pushed,
    /// each push's records and its session's checkpoint are appended one after the other without a suspension
    /// between them, so they join one group commit, and the batch waits once, for its last ticket (tickets
    /// resolve in order, so every earlier one is settled then). Pushes refused because another instance stored
    /// a newer session are pushed once more on the newest one, in order, with one more wait.
    func push(_ items: [Result<EventRequest, APIError>]) async -> [Result<PushResult, APIError>] {
        let held = await users.acquire(items.compactMap { try? $0.get().userID })
        defer { for user in held { users.release(user) } }
        // Each readable event's outcome is set when it is pushed (the placeholder is never answered).
        var outcomes = items.map { item -> Result<PushResult, APIError> in
            item.flatMap { _ in .failure(APIError(.notDurable, "the event was not pushed")) }
        }
        func failed(_ error: any Error) -> Result<PushResult, APIError> {
            .failure(APIError(.notDurable, "the event could not be committed: \(error)"))
        }
        var pending = Array(items.indices.filter { (try? items[$0].get()) != nil })
        for attempt in 0..<2 {
            // Every push first (a session load may wait for PostgreSQL), then every append at once, so that
            // the batch joins one group and commits in one transaction.
            var prepared: [(index: Int, user: String, records: [AnalyticsRecord], session: DataLayer)] = []
            var retry: [Int] = []
            for index in pending {
                guard case .success(let event) = items[index] else { continue }
                do {
                    let (session, result) = try await pushed(event)
                    outcomes[index] = .success(result)
                    prepared.append((index, event.userID, Self.records(of: result), session))
                } catch {
                    outcomes[index] = failed(error)
                }
            }
            var tickets: [(index: Int, user: String, ticket: UInt64)] = []
            for entry in prepared {
                do {
                    let token = try append(entry.records, of: entry.session, user: entry.user)
                    tickets.append((entry.index, entry.user, token.ticket))
                } catch is StaleSession where attempt == 0 {
                    retry.append(entry.index)
                } catch {
                    outcomes[entry.index] = failed(error)
                }
            }
            // One wait: the highest ticket first; the others are settled by then and answer at once.
            for (index, user, ticket) in tickets.sorted(by: { $0.ticket > $1.ticket }) {
                do {
                    try await pipeline.waitUntilDurable(ticket: ticket)
                } catch {
                    let refusal = refused(error, user: user)
                    if refusal is StaleSession && attempt == 0 {
                        retry.append(index)
                    } else {
                        outcomes[index] = failed(refusal)
                    }
                }
            }
            // Served elsewhere meanwhile: the stale copies are gone (invalidated); push on the newest ones.
            if retry.isEmpty { break }
            pending = retry.sorted()
        }
        return outcomes
    }

    private static func records(of result: PushResult) -> [AnalyticsRecord] {
        var records: [AnalyticsRecord] = []
        for tag in result.fired {
            for record in tag.output?.records ?? [] {
                if let record = record as? AnalyticsRecord { records.append(record) }
            }
        }
        return records
    }

    /// The `/metrics` lines of the store and the delivery (Prometheus text format).
    func metricsText() async -> String {
        let store = self.store.statistics
        let delivery = self.pipeline.statistics
        var lines = [
            "# TYPE containerkit_postgres_commits_total counter",
            "containerkit_postgres_commits_total \(store.commits)",
            "# TYPE containerkit_postgres_committed_rows_total counter",
            "containerkit_postgres_committed_rows_total \(store.committedRows)",
            "# TYPE containerkit_postgres_rows_per_commit gauge",
            "containerkit_postgres_rows_per_commit \(store.rowsPerCommit)",
            "# TYPE containerkit_postgres_commit_seconds_total counter",
            "containerkit_postgres_commit_seconds_total \(store.commitSeconds)",
            "# TYPE containerkit_postgres_commit_seconds_max gauge",
            "containerkit_postgres_commit_seconds_max \(store.maximumCommitSeconds)",
            "# TYPE containerkit_postgres_failed_commits_total counter",
            "containerkit_postgres_failed_commits_total \(store.failedCommits)",
            "# TYPE containerkit_postgres_fenced_sessions_total counter",
            "containerkit_postgres_fenced_sessions_total \(store.fencedSessions)",
            "# TYPE containerkit_postgres_available gauge",
            "containerkit_postgres_available \(self.store.isAvailable ? 1 : 0)",
            "# TYPE containerkit_postgres_leases_held gauge",
            "containerkit_postgres_leases_held \(store.leasesHeld)",
            "# TYPE containerkit_postgres_instances gauge",
            "containerkit_postgres_instances \(store.instances)",
            "# TYPE containerkit_postgres_delivered_records_total counter",
            "containerkit_postgres_delivered_records_total \(delivery.deliveredRecords)",
            "# TYPE containerkit_postgres_acknowledged_batches_total counter",
            "containerkit_postgres_acknowledged_batches_total \(store.acknowledgedBatches)",
        ]
        if let undelivered = try? await self.store.undeliveredRows() {
            lines += [
                "# TYPE containerkit_postgres_undelivered_rows gauge",
                "containerkit_postgres_undelivered_rows \(undelivered)",
            ]
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// `POST /v1/events` and `POST /v1/users/{user_id}/events` in `--postgres` mode; `POST /v1/batch` and
/// `POST /v1/users/{user_id}/batch` the same for each event of a batch. The user id may come in the `X-User-ID`
/// header or the path (``RoutedUser``: what a load balancer hashes on to send a user's requests to the instance
/// that holds their session), as in the local mode; a body whose `user_id` disagrees is refused with 400
/// `user_id_mismatch`.
struct PostgresEventsController: Sendable {
    let scaleOut: PostgresScaleOut
    let maximumBodyBytes: Int
    let batchLimits: BatchLimits

    func register(on router: some RouterMethods<BasicRequestContext>) {
        router.post("v1/events") { request, _ in
            await self.answer(request, pathUser: nil)
        }
        router.post("v1/users/:user_id/events") { request, context in
            await self.answer(request, pathUser: context.parameters.get("user_id") ?? "")
        }
        router.post("v1/batch") { request, _ in
            await self.answerBatch(request, pathUser: nil)
        }
        router.post("v1/users/:user_id/batch") { request, context in
            await self.answerBatch(request, pathUser: context.parameters.get("user_id") ?? "")
        }
    }

    private func answer(_ request: Request, pathUser: String?) async -> Response {
        do throws(APIError) {
            let routedUser = try RoutedUser.of(request, pathSegment: pathUser)
            let body = try await requestBody(of: request, limit: maximumBodyBytes)
            let event = try EventRequest(body: body, routedUser: routedUser)
            let result = try await scaleOut.push(event)
            return eventAnswer(result, userID: event.userID, durable: true)
        } catch {
            return error.response
        }
    }

    private func answerBatch(_ request: Request, pathUser: String?) async -> Response {
        do throws(APIError) {
            let routedUser = try RoutedUser.of(request, pathSegment: pathUser)
            let body = try await requestBody(of: request, limit: batchLimits.maximumBytes)
            let batch = try BatchRequest(body: body, limits: batchLimits, routedUser: routedUser)
            let outcomes = await scaleOut.push(batch.items)
            return BatchAnswer.response(outcomes, userIDs: batch.userIDs, durable: true)
        } catch {
            return error.response
        }
    }
}

/// The Braze provider's sink in `--postgres` mode: keeps nothing, since the records travel in the push's
/// result and ``PostgresScaleOut`` commits them with the session.
struct AnswersOnlySink: AnalyticsSink {
    func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? { nil }
}
