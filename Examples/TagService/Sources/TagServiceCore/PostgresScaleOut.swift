import ContainerKit
import ContainerKitBraze
import ContainerKitPostgres
import Foundation
import Logging
import ServiceLifecycle

/// `--postgres <url>`: records and sessions in PostgreSQL, so that several instances behind a load balancer
/// share them (Docs/Scaling.md).
///
/// Configuration only: the library's seams carry the rest. The ``SessionStore`` loads a session it does not
/// hold through ``PostgresSessionPersistence``, and commits each push with the library's ``RecordCommitter``
/// over this ``DeliveryPipeline`` on the ``PostgresRecordStore``: the push's records and the session's
/// checkpoint in one append, committed in the store's next group commit, inside the session's turn. A write
/// refused because another instance stored a newer version is pushed again on the newest session by the
/// session store itself. The controller is the same as in file mode (``EventsController``).
final class PostgresScaleOut: Sendable {
    let store: PostgresRecordStore
    let pipeline: DeliveryPipeline<PostgresRecordStore>

    /// The record store of `configuration`, or `nil` without `--postgres`.
    static func store(_ configuration: TagServiceConfiguration, logger: Logging.Logger) throws -> PostgresRecordStore? {
        guard let url = configuration.postgresURL else { return nil }
        let endpoint = try PostgresEndpoint(url: url)
        var storeConfiguration = PostgresRecordStore.Configuration(
            endpoint: endpoint,
            instanceName: configuration.instanceName
        )
        storeConfiguration.partitions = configuration.postgresPartitions
        // `--commit-delay` means what it means for the file queue: how long a busy writer lets the next group
        // gather (PostgresRecordStore.Configuration.defaultCommitDelay when the flag is absent; see
        // parseScaleOut).
        storeConfiguration.commitDelay = configuration.commitDelay
        storeConfiguration.callTimeout = configuration.postgresCallTimeout
        storeConfiguration.logger = logger
        logger.info("records and sessions go to postgresql", metadata: ["postgres": "\(endpoint)"])
        return PostgresRecordStore(configuration: storeConfiguration)
    }

    init(
        store: PostgresRecordStore,
        configuration: TagServiceConfiguration,
        diagnostics: any DiagnosticLogger,
        observer: any DeliveryObserver,
        debug: DebugHub? = nil
    ) throws {
        var destination = DebugObservedDestination.wrapping(try Self.destination(configuration), debug: debug)
        if let limit = configuration.brazeRequestsPerSecond {
            destination = SharedRateLimitDestination(destination, requestsPerSecond: limit, store: store)
        }
        var settings = DeliverySettings(logger: diagnostics)
        // Committed records are never given up on (a policy without limit: a flush also ends at a retryable
        // failure rather than wait for a destination that is down).
        settings.retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(100),
            maximumDelay: .seconds(30)
        )
        settings.maximumConcurrentDeliveries = 2
        settings.observer = observer
        settings.name = "postgres delivery"
        self.store = store
        self.pipeline = DeliveryPipeline(store: store, destination: destination, settings: settings)
    }

    /// Where delivered records go: Braze's `/users/track`, or without an endpoint the JSON-lines file.
    private static func destination(_ configuration: TagServiceConfiguration) throws -> any AnalyticsDestination {
        if let endpoint = configuration.brazeEndpoint {
            return BrazeUsersTrackDestination(
                endpoint: endpoint,
                apiKey: configuration.brazeAPIKey ?? "",
                configuration: BrazeUsersTrackDestination.Configuration(objectLimit: configuration.brazeObjectLimit)
            )
        }
        return try JSONLinesDestination(destination: .file(path: configuration.recordsFile), synchronizes: true)
    }

    /// The pipeline as a member of the application's service group: graceful shutdown drains it (within its
    /// drain timeout), cancellation stops it at once (what is committed stays in PostgreSQL).
    var services: [any Service] { [pipeline.service] }

    /// The `/metrics` lines of the store and the delivery (Prometheus text format).
    func metricsText() async -> String {
        let store = self.store.statistics
        let delivery = self.pipeline.statistics
        var lines = [
            "# TYPE containerkit_postgres_commits_total counter",
            "containerkit_postgres_commits_total \(store.commits)",
            "# TYPE containerkit_postgres_round_trips_total counter",
            "containerkit_postgres_round_trips_total \(store.roundTrips)",
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
            "# TYPE containerkit_postgres_timed_out_calls_total counter",
            "containerkit_postgres_timed_out_calls_total \(store.timedOutCalls)",
            "# TYPE containerkit_postgres_load_queries_total counter",
            "containerkit_postgres_load_queries_total \(store.loadQueries)",
            "# TYPE containerkit_postgres_loaded_users_total counter",
            "containerkit_postgres_loaded_users_total \(store.loadedUsers)",
            "# TYPE containerkit_postgres_compacted_session_rows_total counter",
            "containerkit_postgres_compacted_session_rows_total \(store.compactedSessionRows)",
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
