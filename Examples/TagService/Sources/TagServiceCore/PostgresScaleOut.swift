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
/// A request's push runs on the user's session — loaded from PostgreSQL on a miss — and its records are
/// committed together with the session's new snapshot in the store's next group commit; the client is
/// answered after that commit. A write fenced by a newer snapshot (the user was served elsewhere meanwhile)
/// drops the stale session, loads the newest one and pushes once more; any other failure answers 503 with
/// nothing acknowledged, and the session is loaded again on the user's next request.
final class PostgresScaleOut: Sendable {
    let store: PostgresRecordStore
    let delivery: PostgresDelivery
    /// Where the delivery sends: its `run()` (Braze's HTTP client and its I/O thread) is a service too.
    let destination: any AnalyticsDestination
    let sessions: SessionStore
    private let users = KeyedSerialization()

    /// The scale-out of `configuration`, or `nil` without `--postgres`.
    static func make(
        _ configuration: TagServiceConfiguration,
        sessions: SessionStore,
        logger: Logging.Logger
    ) throws -> PostgresScaleOut? {
        guard let url = configuration.postgresURL else { return nil }
        let endpoint = try PostgresEndpoint(url: url)
        return PostgresScaleOut(
            endpoint: endpoint,
            configuration: configuration,
            destination: try destination(configuration),
            sessions: sessions,
            logger: logger
        )
    }

    private init(
        endpoint: PostgresEndpoint,
        configuration: TagServiceConfiguration,
        destination: any AnalyticsDestination,
        sessions: SessionStore,
        logger: Logging.Logger
    ) {
        var storeConfiguration = PostgresRecordStore.Configuration(endpoint: endpoint)
        storeConfiguration.partitions = configuration.postgresPartitions
        storeConfiguration.logger = logger
        storeConfiguration.onSessionsInvalidated = { users in
            for user in users { sessions.remove(user) }
        }
        store = PostgresRecordStore(configuration: storeConfiguration)
        var deliveryConfiguration = PostgresDelivery.Configuration(
            endpoint: endpoint,
            instanceName: configuration.instanceName,
            requestsPerSecond: configuration.brazeRequestsPerSecond
        )
        deliveryConfiguration.partitions = configuration.postgresPartitions
        deliveryConfiguration.logger = logger
        delivery = PostgresDelivery(configuration: deliveryConfiguration, destination: destination)
        self.destination = destination
        self.sessions = sessions
        logger.info("records and sessions go to postgresql", metadata: ["postgres": "\(endpoint)"])
    }

    /// Where delivered records go: Braze's `/users/track`, or without an endpoint the JSON-lines file.
    private static func destination(_ configuration: TagServiceConfiguration) throws -> any AnalyticsDestination {
        if let endpoint = configuration.brazeEndpoint {
            return BrazeUsersTrackDestination(endpoint: endpoint, apiKey: configuration.brazeAPIKey ?? "")
        }
        return try JSONLinesDestination(destination: .file(path: configuration.recordsFile), synchronizes: true)
    }

    /// The destination, the store and the delivery as members of the application's service group (the
    /// destination first: the group stops it after the delivery that sends through it).
    var services: [any Service] {
        [destination.service, delivery.cancelledOnGracefulShutdown(), store.cancelledOnGracefulShutdown()]
    }

    /// Pushes `event` into its user's session and returns once its records and the session are committed.
    func push(_ event: EventRequest) async throws(APIError) -> PushResult {
        do {
            return try await users.serialize(event.userID) { () async throws(APIError) -> PushResult in
                do {
                    return try await pushOnce(event)
                } catch let error as PostgresStoreError where error.code == .fenced {
                    // Served elsewhere meanwhile: the stale copy is gone (invalidated); push on the newest one.
                    do {
                        return try await pushOnce(event)
                    } catch {
                        throw APIError(.notDurable, "the event could not be committed: \(error)")
                    }
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
        let session = try await session(of: event)
        let result = await session.push(event: event.event, parameters: event.parameters)
        var records: [AnalyticsRecord] = []
        for tag in result.fired {
            for record in tag.output?.records ?? [] {
                if let record = record as? AnalyticsRecord { records.append(record) }
            }
        }
        try await store.commit(records, session: .init(userID: event.userID, snapshot: session.snapshot()))
        return result
    }

    /// The user's live session, else the one PostgreSQL holds, else a new one (named after the user).
    private func session(of event: EventRequest) async throws -> DataLayer {
        if sessions.existingSession(for: event.userID) == nil {
            if let snapshot = try await store.loadSession(userID: event.userID) {
                sessions.restore([snapshot])
            }
        }
        let session = sessions.session(for: event.userID, context: event.context)
        if BrazeTagProvider.user(of: session) == nil {
            BrazeTagProvider.setUser(.externalID(event.userID), on: session)
        }
        return session
    }

    /// The `/metrics` lines of the store and the delivery (Prometheus text format).
    func metricsText() async -> String {
        let store = self.store.statistics
        let delivery = self.delivery.statistics
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
            "containerkit_postgres_leases_held \(delivery.leasesHeld)",
            "# TYPE containerkit_postgres_instances gauge",
            "containerkit_postgres_instances \(delivery.instances)",
            "# TYPE containerkit_postgres_delivered_records_total counter",
            "containerkit_postgres_delivered_records_total \(delivery.deliveredRecords)",
            "# TYPE containerkit_postgres_acknowledged_batches_total counter",
            "containerkit_postgres_acknowledged_batches_total \(delivery.acknowledgedBatches)",
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

extension PostgresRecordStore: @retroactive Service {}
extension PostgresDelivery: @retroactive Service {}

/// Runs the work of one key at a time, first come first served (a user's push and its commit, so the snapshot
/// committed with a push's records holds that push and no later one).
final class KeyedSerialization: Sendable {
    private let waiting = Mutex<[String: [CheckedContinuation<Void, Never>]]>([:])

    func serialize<T: Sendable>(_ key: String, _ body: () async throws -> T) async throws -> T {
        await withCheckedContinuation { continuation in
            let runNow = waiting.withLock { waiting -> Bool in
                if waiting[key] == nil {
                    waiting[key] = []
                    return true
                }
                waiting[key]!.append(continuation)
                return false
            }
            if runNow { continuation.resume() }
        }
        defer {
            let next = waiting.withLock { waiting -> CheckedContinuation<Void, Never>? in
                guard var queue = waiting[key], !queue.isEmpty else {
                    waiting[key] = nil
                    return nil
                }
                let first = queue.removeFirst()
                waiting[key] = queue
                return first
            }
            next?.resume()
        }
        return try await body()
    }
}

extension APIError.Code {
    /// The body's `user_id` differs from the one in the `X-User-ID` header or the path (400).
    static let userMismatch = APIError.Code(rawValue: "user_id_mismatch")
}

/// `POST /v1/events` and `POST /v1/users/{user_id}/events` in `--postgres` mode: the user id may come in the
/// `X-User-ID` header or the path (what a load balancer hashes on to send a user's requests to the instance
/// that holds their session); a body whose `user_id` disagrees is refused with 400 `user_id_mismatch`.
struct PostgresEventsController: Sendable {
    let scaleOut: PostgresScaleOut
    let maximumBodyBytes: Int

    /// The header a load balancer routes on.
    static let userHeader = HTTPField.Name("X-User-ID")!

    func register(on router: Router<BasicRequestContext>) {
        router.post("v1/events") { request, _ in
            await self.answer(request, routedUser: request.headers[Self.userHeader])
        }
        router.post("v1/users/:user_id/events") { request, context in
            await self.answer(request, routedUser: context.parameters.get("user_id"))
        }
    }

    private func answer(_ request: Request, routedUser: String?) async -> Response {
        do throws(APIError) {
            let event = try EventRequest(body: try await body(of: request, routedUser: routedUser))
            let result = try await scaleOut.push(event)
            var answer: [UInt8] = []
            answer.reserveCapacity(1024)
            result.appendJSONMembers(to: &answer)
            answer.append(contentsOf: #","user_id":"#.utf8)
            JSONWriter.writeString(event.userID, into: &answer)
            answer.append(contentsOf: #","durable":true}"#.utf8)
            return Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer))
            )
        } catch {
            return error.response
        }
    }

    /// The body, with the routed user id filled in when the body has none; refused when they disagree.
    private func body(of request: Request, routedUser: String?) async throws(APIError) -> [UInt8] {
        let tooLarge = APIError(.bodyTooLarge, "the body is larger than \(maximumBodyBytes) bytes")
        if let length = request.headers[.contentLength].flatMap(Int.init), length > maximumBodyBytes { throw tooLarge }
        var bytes: [UInt8]
        do {
            var buffer = try await request.body.collect(upTo: maximumBodyBytes)
            bytes = buffer.readBytes(length: buffer.readableBytes) ?? []
        } catch is NIOTooManyBytesError {
            throw tooLarge
        } catch {
            throw APIError(.malformedJSON, "the body could not be read: \(error)")
        }
        guard let routedUser, !routedUser.isEmpty else { return bytes }
        guard case .object(var object)? = try? Value(jsonBytes: bytes, maximumDepth: 64) else { return bytes }
        switch object["user_id"] {
        case .string(let bodyUser)?:
            // Compared as bytes: "café" composed and decomposed are two users.
            guard Array(bodyUser.utf8) == Array(routedUser.utf8) else {
                throw APIError(
                    .userMismatch,
                    "the body's 'user_id' '\(bodyUser)' is not the routed user '\(routedUser)'"
                )
            }
            return bytes
        case nil, .null?:
            object["user_id"] = .string(routedUser)
            return JSONWriter.bytes(.object(object))
        default:
            return bytes
        }
    }
}

/// The Braze provider's sink in `--postgres` mode: keeps nothing, since the records travel in the push's
/// result and ``PostgresScaleOut`` commits them with the session.
struct AnswersOnlySink: AnalyticsSink {
    func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? { nil }
}
