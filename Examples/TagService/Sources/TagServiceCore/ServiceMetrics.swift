import ContainerKit
import ContainerKitBraze
import CoreMetrics
import Foundation
import Metrics
import Prometheus
import Synchronization

/// The service's metrics: ContainerKit's ``RuntimeObserver`` and ``DeliveryObserver`` hooks mapped onto
/// swift-metrics, rendered by `GET /metrics` in Prometheus text format.
///
/// The tag manager reports evaluated events and fired tags, the durable queue reports records enqueued,
/// durable, delivered and rejected, its backlog and failed deliveries; each report increments a counter
/// or sets a gauge made once here (an observer runs on the push's thread and must be cheap). What the
/// library keeps as state rather than reports — live sessions, live containers — is read when the page is
/// rendered.
///
/// Each service instance has its own registry (tests run several in one process); `main` also bootstraps
/// the global `MetricsSystem` with the same factory, so libraries that use it (Hummingbird's
/// `MetricsMiddleware`, for one) show up in the same page.
final class ServiceMetrics: RuntimeObserver, DeliveryObserver, Sendable {
    /// The registry `GET /metrics` renders.
    let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory over ``registry``.
    let factory: PrometheusMetricsFactory

    /// Events evaluated (one per event and live container, including events that tags pushed).
    let events: CoreMetrics.Counter
    /// Tags fired, by outcome: `fired` (the handler ran), `failed`, `dropped` (a Braze rule refused the
    /// call), `pending` (a Braze tag in a session without a user: its records wait in the session),
    /// `unhandled`, `unsupported`.
    private let tags: [String: CoreMetrics.Counter]
    /// Records taken by the durable queue (in memory or on their way to disk).
    let recordsEnqueued: CoreMetrics.Counter
    /// Records written and `fsync`ed by the durable queue.
    let recordsDurable: CoreMetrics.Counter
    /// Records Braze (or the records file) accepted.
    let recordsDelivered: CoreMetrics.Counter
    /// Records refused by the queue (full, shut down, failed commit) or rejected by Braze for good.
    let recordsRejected: CoreMetrics.Counter
    /// Deliveries that failed and will be retried.
    let deliveryFailures: CoreMetrics.Counter
    /// Records made durable and not yet delivered or rejected.
    let queueBacklog: CoreMetrics.Gauge
    /// Bytes the queue's segments and pending lines take.
    let queueBytes: CoreMetrics.Gauge
    /// Sessions in memory, read from the session store when the page is rendered.
    let liveSessions: CoreMetrics.Gauge
    /// Sessions created and evicted since start, read from the session store when the page is rendered.
    let sessionsCreated: CoreMetrics.Gauge
    let sessionsEvicted: CoreMetrics.Gauge
    /// Sessions loaded from the queue's log (or PostgreSQL) on a miss, session versions the store's own saves
    /// wrote (snapshots of evicted sessions, removals), saves that failed (their changes are kept and saved
    /// again), and changes waiting for the next save.
    let sessionsLoaded: CoreMetrics.Gauge
    let sessionsSaved: CoreMetrics.Gauge
    let sessionSaveFailures: CoreMetrics.Gauge
    let sessionsUnsaved: CoreMetrics.Gauge
    /// Containers live in the tag manager, read when the page is rendered.
    let liveContainers: CoreMetrics.Gauge
    /// The Braze provider's pending records (``BrazeTagProvider/pendingStatistics``), read when the page is
    /// rendered: those held now (this instance's view: held here, not yet released or dropped here), and since
    /// start those held, released for their user, and dropped past a bound (`reason`: `age`, or `size` for the
    /// count or bytes a session may hold).
    let brazePending: CoreMetrics.Gauge
    let brazePendingHeld: CoreMetrics.Gauge
    let brazePendingReleased: CoreMetrics.Gauge
    let brazePendingExpired: (age: CoreMetrics.Gauge, size: CoreMetrics.Gauge)

    /// Requests answered, by route and status (counted by ``RequestMetricsMiddleware``).
    let requestCounters: RequestCounters
    /// Events refused before they were pushed, by reason (`no_container`, `sessions_unavailable`).
    private let refusedEvents: [String: CoreMetrics.Counter]
    /// Events not pushed again because their session had seen their `message_id` (answered as duplicates).
    let duplicateEvents: CoreMetrics.Counter
    /// How long before it arrived each event with a `timestamp` happened (its time after the `sent_at` correction;
    /// an event from the future counts as none): how late clients send, and how wrong their clocks are.
    let eventDelay: CoreMetrics.Timer
    /// Connections closed by the service's bounds (``BoundedHTTP1Channel``), by reason (`request_timeout`,
    /// `shutdown`).
    private let cutConnections: [String: CoreMetrics.Counter]

    init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["tagservice_request_duration_seconds"] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
        ]
        factory.durationHistogramBuckets["tagservice_event_delay_seconds"] = [
            .seconds(1), .seconds(10), .seconds(60), .seconds(600), .seconds(3600), .seconds(6 * 3600),
            .seconds(86_400), .seconds(7 * 86_400),
        ]
        self.registry = registry
        self.factory = factory
        events = CoreMetrics.Counter(label: "tagservice_events_total", factory: factory)
        var tags: [String: CoreMetrics.Counter] = [:]
        for status in ["fired", "failed", "dropped", "pending", "unhandled", "unsupported"] {
            tags[status] = CoreMetrics.Counter(
                label: "tagservice_tags_total",
                dimensions: [("status", status)],
                factory: factory
            )
        }
        self.tags = tags
        recordsEnqueued = CoreMetrics.Counter(label: "tagservice_records_enqueued_total", factory: factory)
        recordsDurable = CoreMetrics.Counter(label: "tagservice_records_durable_total", factory: factory)
        recordsDelivered = CoreMetrics.Counter(label: "tagservice_records_delivered_total", factory: factory)
        recordsRejected = CoreMetrics.Counter(label: "tagservice_records_rejected_total", factory: factory)
        deliveryFailures = CoreMetrics.Counter(label: "tagservice_delivery_failures_total", factory: factory)
        queueBacklog = CoreMetrics.Gauge(label: "tagservice_queue_backlog_records", factory: factory)
        queueBytes = CoreMetrics.Gauge(label: "tagservice_queue_bytes", factory: factory)
        liveSessions = CoreMetrics.Gauge(label: "tagservice_sessions_live", factory: factory)
        sessionsCreated = CoreMetrics.Gauge(label: "tagservice_sessions_created", factory: factory)
        sessionsEvicted = CoreMetrics.Gauge(label: "tagservice_sessions_evicted", factory: factory)
        sessionsLoaded = CoreMetrics.Gauge(label: "tagservice_sessions_loaded", factory: factory)
        sessionsSaved = CoreMetrics.Gauge(label: "tagservice_sessions_saved", factory: factory)
        sessionSaveFailures = CoreMetrics.Gauge(label: "tagservice_session_save_failures", factory: factory)
        sessionsUnsaved = CoreMetrics.Gauge(label: "tagservice_sessions_unsaved", factory: factory)
        liveContainers = CoreMetrics.Gauge(label: "tagservice_containers_live", factory: factory)
        brazePending = CoreMetrics.Gauge(label: "tagservice_braze_pending_records", factory: factory)
        brazePendingHeld = CoreMetrics.Gauge(label: "tagservice_braze_pending_held", factory: factory)
        brazePendingReleased = CoreMetrics.Gauge(label: "tagservice_braze_pending_released", factory: factory)
        brazePendingExpired = (
            CoreMetrics.Gauge(
                label: "tagservice_braze_pending_expired",
                dimensions: [("reason", "age")],
                factory: factory
            ),
            CoreMetrics.Gauge(
                label: "tagservice_braze_pending_expired",
                dimensions: [("reason", "size")],
                factory: factory
            )
        )
        requestCounters = RequestCounters(factory: factory)
        duplicateEvents = CoreMetrics.Counter(label: "tagservice_events_duplicate_total", factory: factory)
        eventDelay = CoreMetrics.Timer(label: "tagservice_event_delay_seconds", factory: factory)
        refusedEvents = ["no_container", "sessions_unavailable"].reduce(into: [:]) { counters, reason in
            counters[reason] = CoreMetrics.Counter(
                label: "tagservice_events_refused_total",
                dimensions: [("reason", reason)],
                factory: factory
            )
        }
        cutConnections = [BoundedHTTP1Channel.Cut.requestTimeout, .shutdown].reduce(into: [:]) { counters, reason in
            counters[reason.rawValue] = CoreMetrics.Counter(
                label: "tagservice_connections_cut_total",
                dimensions: [("reason", reason.rawValue)],
                factory: factory
            )
        }
    }

    /// Counts a connection the service closed (`tagservice_connections_cut_total{reason}`).
    func cutConnection(_ reason: BoundedHTTP1Channel.Cut) { cutConnections[reason.rawValue]?.increment() }

    /// Counts an event refused before it was pushed (`tagservice_events_refused_total{reason}`).
    func refusedEvent(reason: String) { refusedEvents[reason]?.increment() }

    /// Maps one report of the runtime onto the metrics.
    func observe(_ event: RuntimeEvent) {
        switch event {
        case .eventEvaluated: events.increment()
        case .tagFired(_, _, _, _, let status):
            let name = status == .ok ? "fired" : status.name
            tags[name]?.increment()
        case .tagBlocked: break
        }
    }

    /// Maps one report of the delivery pipeline onto the metrics.
    func observe(_ event: DeliveryEvent) {
        switch event {
        case .recordsEnqueued(let count): recordsEnqueued.increment(by: count)
        case .recordsDurable(let count): recordsDurable.increment(by: count)
        case .recordsDelivered(let count): recordsDelivered.increment(by: count)
        case .recordsRejected(let count, _): recordsRejected.increment(by: count)
        case .queueBacklog(let records, let bytes):
            queueBacklog.record(records)
            queueBytes.record(bytes)
        case .deliveryFailed: deliveryFailures.increment()
        }
    }

    /// Records a previous run left in the queue (read at start).
    private let startBacklog = Mutex(0)
    var backlogAtStart: Int {
        get { startBacklog.withLock { $0 } }
        set { startBacklog.withLock { $0 = newValue } }
    }

    /// The queue's backlog: what a previous run left plus what this run made durable, less what was
    /// delivered or rejected. (The queue's own backlog report counts this run's records only.)
    func update(queue: DeliveryStatistics) {
        let records = backlogAtStart + queue.durableRecords - queue.deliveredRecords - queue.rejectedRecords
        queueBacklog.record(max(0, records))
    }

    /// Copies what the library keeps as state into the gauges.
    func update(sessions: SessionStore.Statistics, containers: Int) {
        liveSessions.record(sessions.live)
        sessionsCreated.record(sessions.created)
        sessionsEvicted.record(sessions.evicted)
        sessionsLoaded.record(sessions.loaded)
        sessionsSaved.record(sessions.saved)
        sessionSaveFailures.record(sessions.saveFailures)
        sessionsUnsaved.record(sessions.unsaved)
        liveContainers.record(containers)
    }

    /// Copies the Braze provider's pending-record counts into the gauges.
    func update(braze: BrazeTagProvider.PendingStatistics) {
        brazePending.record(braze.pending)
        brazePendingHeld.record(braze.held)
        brazePendingReleased.record(braze.released)
        brazePendingExpired.age.record(braze.expired)
        brazePendingExpired.size.record(braze.overflowed)
    }

    /// The page `GET /metrics` answers with.
    func render() -> [UInt8] { registry.emitToBuffer() }
}

extension ServiceMetrics {
    /// Counts how long before `receivedAt` an event that said when it happened (`eventTime`) happened; nothing
    /// for an event without a time.
    func noteEventTime(_ eventTime: Date?, receivedAt: Date) {
        guard let eventTime else { return }
        let delay = max(0, receivedAt.timeIntervalSince(eventTime))
        eventDelay.recordNanoseconds(Int64(min(delay, 9e9) * 1e9))
    }
}
