import ContainerKit
import ContainerKitDelivery
import ContainerKitPostgres
import Foundation
import Logging
import PostgresNIO
import PostgresTestHarness
import Synchronization

/// One PostgreSQL cluster for the tests that do not stop their server; each test takes a fresh database of it.
/// The cluster is removed when the test process exits.
enum SharedCluster {
    private static let cluster = Mutex<Task<PostgresTestCluster, any Error>?>(nil)

    /// A fresh database's endpoint on the shared cluster.
    static func freshDatabase() async throws -> PostgresEndpoint {
        let task = cluster.withLock { slot in
            if let slot { return slot }
            let task = Task { () async throws -> PostgresTestCluster in
                let started = try await PostgresTestCluster.start()
                Remover.shared.add(started)
                return started
            }
            slot = task
            return task
        }
        let url = try await task.value.createDatabase()
        return try PostgresEndpoint(url: url)
    }
}

/// Removes clusters at process exit (Swift Testing has no suite-wide teardown).
final class Remover: Sendable {
    static let shared = Remover()
    private let clusters = Mutex<[PostgresTestCluster]>([])

    func add(_ cluster: PostgresTestCluster) {
        let first = clusters.withLock { list -> Bool in
            list.append(cluster)
            return list.count == 1
        }
        if first { atexit { Remover.shared.removeAll() } }
    }

    func removeAll() {
        for cluster in clusters.withLock({ $0 }) { cluster.remove() }
    }
}

/// A destination that keeps what it accepted and reports each delivered batch.
final class RecordingDestination: AnalyticsDestination {
    private let accepted = Mutex<[AnalyticsRecord]>([])
    let preferredBatchSize: Int
    /// Every delivered batch, in order.
    let batches = Reports<[AnalyticsRecord]>()

    init(batchSize: Int = 50) { preferredBatchSize = batchSize }

    var records: [AnalyticsRecord] { accepted.withLock { $0 } }

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        accepted.withLock { $0.append(contentsOf: records) }
        batches.report(records)
        return .accepted(records)
    }

    /// Waits until the records of `ids` were all delivered (at least once).
    func waitForDelivery(of ids: Set<String>) async {
        var delivered = Set(records.map(\.id))
        while !ids.isSubset(of: delivered) {
            delivered.formUnion(await batches.next().map(\.id))
        }
    }
}

/// One service instance: a PostgreSQL record store and the delivery pipeline that runs it.
struct Instance: Sendable {
    let store: PostgresRecordStore
    let pipeline: DeliveryPipeline<PostgresRecordStore>

    init(
        _ endpoint: PostgresEndpoint,
        name: String = "a",
        destination: any AnalyticsDestination = RecordingDestination(),
        concurrentDeliveries: Int = 1,
        configure: (inout PostgresRecordStore.Configuration) -> Void = { _ in }
    ) {
        var configuration = PostgresRecordStore.Configuration(endpoint: endpoint, instanceName: name)
        configuration.partitions = 4
        configuration.pollInterval = .milliseconds(20)
        configuration.leaseInterval = .milliseconds(200)
        configuration.reconnectDelay = .milliseconds(200)
        configuration.logger = testLogger
        configure(&configuration)
        store = PostgresRecordStore(configuration: configuration)
        var settings = DeliverySettings(logger: QuietLogger())
        settings.retry = DeliveryRetryPolicy(
            maximumAttempts: .max,
            baseDelay: .milliseconds(20),
            maximumDelay: .milliseconds(200)
        )
        settings.maximumConcurrentDeliveries = concurrentDeliveries
        pipeline = DeliveryPipeline(store: store, destination: destination, settings: settings)
    }

    /// Appends `records` and `sessions` (whole snapshots) and returns once they are committed together.
    func commit(_ records: [AnalyticsRecord], sessions: [StoredSession] = []) async throws {
        try await commit(records, checkpoints: sessions.map(SessionCheckpoint.init))
    }

    /// Appends `records` and `checkpoints` and returns once they are committed together.
    func commit(_ records: [AnalyticsRecord], checkpoints: [SessionCheckpoint]) async throws {
        let token = try pipeline.append(EncodedRecords(records, sessions: checkpoints))
        try await pipeline.waitUntilDurable(ticket: token.ticket)
    }

    /// The pipeline's run, for ``withRunning(_:_:)``.
    var run: @Sendable () async throws -> Void { { [pipeline] in try await pipeline.run() } }
}

/// A diagnostic logger that drops everything.
struct QuietLogger: DiagnosticLogger {
    var minimumLevel: LogLevel { .error }
    func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {}
}

/// A session snapshot of `userID` at `event` events, stored as `version`.
func stored(_ userID: String, event: Int = 1, version: Int64) -> StoredSession {
    StoredSession(snapshot: SessionSnapshot(sessionID: userID, eventNumber: event), version: version)
}

/// Values a callback reports, awaited by a test in the order they came.
final class Reports<Value: Sendable>: Sendable {
    private struct State {
        var buffer: [Value] = []
        var waiter: CheckedContinuation<Value, Never>?
    }
    private let state = Mutex(State())

    func report(_ value: Value) {
        let waiter = state.withLock { state -> CheckedContinuation<Value, Never>? in
            guard let waiter = state.waiter else {
                state.buffer.append(value)
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume(returning: value)
    }

    /// The next reported value (one reported earlier and not yet taken comes first).
    func next() async -> Value {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Value? in
                if !state.buffer.isEmpty { return state.buffer.removeFirst() }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Takes values until one satisfies `condition`, and returns it.
    func first(where condition: (Value) -> Bool) async -> Value? {
        while true {
            let value = await next()
            if condition(value) { return value }
        }
    }
}

func makeRecord(user: String, event: String = "played") -> AnalyticsRecord {
    AnalyticsRecord(user: .externalID(user), payload: .customEvent(name: event, properties: ValueMap()))
}

/// Runs `body` with `services` running in the background; cancels them afterwards.
func withRunning<T: Sendable>(
    _ services: [@Sendable () async throws -> Void],
    _ body: () async throws -> T
) async throws -> T {
    let tasks = services.map { service in Task { try await service() } }
    defer { for task in tasks { task.cancel() } }
    let result = try await body()
    for task in tasks {
        task.cancel()
        _ = await task.result
    }
    return result
}

/// A logger that stays quiet, or with `CKPG_TEST_LOG=debug` (any level) writes to standard error.
let testLogger: Logger = {
    guard let level = ProcessInfo.processInfo.environment["CKPG_TEST_LOG"].flatMap({ Logger.Level(rawValue: $0) })
    else {
        return Logger(label: "test") { _ in SwiftLogNoOpLogHandler() }
    }
    var logger = Logger(label: "test") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = level
    return logger
}()

/// Compactions (`ck_compact_sessions`, as the stores' maintenance runs them) until no snapshot is left unread: the
/// session rows that newer snapshots supersede are deleted.
func compactSessions(_ endpoint: PostgresEndpoint) async throws {
    let call = "SELECT more FROM ck_compact_sessions(\(PostgresSchema.defaultLockNamespace), 2000)"
    while try await query(endpoint, call, as: Bool.self) == [true] {}
}

/// One query's rows through a short-lived connection.
func query<T: Sendable>(_ endpoint: PostgresEndpoint, _ sql: String, as type: T.Type) async throws -> [T]
where T: PostgresDecodable {
    let connection = try await PostgresConnection.connect(
        configuration: try endpoint.connectionConfiguration,
        id: 1,
        logger: testLogger
    )
    defer { Task { try? await connection.close() } }
    var values: [T] = []
    for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: testLogger).decode(T.self)
    {
        values.append(value)
    }
    return values
}

/// A connection of its own (named `id` in the server's log) with a transaction begun, for a test to hold locks or an
/// old transaction open; the test ends it (`ROLLBACK`) and closes the connection.
func beginTransaction(_ endpoint: PostgresEndpoint, id: Int) async throws -> PostgresConnection {
    let connection = try await PostgresConnection.connect(
        configuration: try endpoint.connectionConfiguration,
        id: id,
        logger: testLogger
    )
    try await connection.query("BEGIN", logger: testLogger)
    return connection
}

/// Runs one statement that returns no rows through a short-lived connection.
func execute(_ endpoint: PostgresEndpoint, _ sql: String) async throws {
    _ = try await query(endpoint, sql, as: Int64.self)
}
