import ContainerKit
import CoreMetrics
import Metrics
import Prometheus

/// The service's metrics, made through swift-metrics and rendered by `GET /metrics` in Prometheus text
/// format.
///
/// Each service instance has its own registry (tests run several in one process); `main` also bootstraps
/// the global `MetricsSystem` with the same factory, so libraries that use it show up in the same page.
final class ServiceMetrics: Sendable {
    /// The registry `GET /metrics` renders.
    let registry: PrometheusCollectorRegistry
    /// The swift-metrics factory over ``registry``.
    let factory: PrometheusMetricsFactory

    /// Events evaluated (each event of a push, including events its tags pushed).
    let events: CoreMetrics.Counter
    /// Pushes held back because no container was live yet.
    let deferredPushes: CoreMetrics.Counter
    /// Tags fired, by outcome.
    let tagsFired: CoreMetrics.Counter
    let tagsFailed: CoreMetrics.Counter
    let tagsDropped: CoreMetrics.Counter
    /// Records in answers that were sent after the records were durable.
    let recordsAcknowledged: CoreMetrics.Counter
    /// Requests refused before any push (malformed, missing fields, too large).
    let badRequests: CoreMetrics.Counter
    /// Time from request to answer of `POST /v1/events`, including the durability wait.
    let eventLatency: CoreMetrics.Timer

    /// Records made durable, delivered downstream and refused by the queue (gauges of the queue's totals).
    let recordsDurable: CoreMetrics.Gauge
    let recordsDelivered: CoreMetrics.Gauge
    let recordsRefused: CoreMetrics.Gauge
    /// Records the destination refused for good (Braze answered a 4xx).
    let recordsRejected: CoreMetrics.Gauge
    let deliveryFailures: CoreMetrics.Gauge
    /// Records durable but not yet delivered.
    let queueBacklog: CoreMetrics.Gauge
    /// Bytes the queue's segments take.
    let queueBytes: CoreMetrics.Gauge
    /// Sessions in memory.
    let liveSessions: CoreMetrics.Gauge
    /// Containers live in the tag manager.
    let liveContainers: CoreMetrics.Gauge

    init() {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["tagservice_event_duration_seconds"] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1),
        ]
        self.registry = registry
        self.factory = factory
        events = CoreMetrics.Counter(label: "tagservice_events_total", factory: factory)
        deferredPushes = CoreMetrics.Counter(label: "tagservice_deferred_pushes_total", factory: factory)
        tagsFired = CoreMetrics.Counter(
            label: "tagservice_tags_total",
            dimensions: [("status", "fired")],
            factory: factory
        )
        tagsFailed = CoreMetrics.Counter(
            label: "tagservice_tags_total",
            dimensions: [("status", "failed")],
            factory: factory
        )
        tagsDropped = CoreMetrics.Counter(
            label: "tagservice_tags_total",
            dimensions: [("status", "dropped")],
            factory: factory
        )
        recordsAcknowledged = CoreMetrics.Counter(label: "tagservice_records_acknowledged_total", factory: factory)
        badRequests = CoreMetrics.Counter(label: "tagservice_bad_requests_total", factory: factory)
        eventLatency = CoreMetrics.Timer(label: "tagservice_event_duration_seconds", factory: factory)
        recordsDurable = CoreMetrics.Gauge(label: "tagservice_records_durable", factory: factory)
        recordsDelivered = CoreMetrics.Gauge(label: "tagservice_records_delivered", factory: factory)
        recordsRefused = CoreMetrics.Gauge(label: "tagservice_records_refused", factory: factory)
        recordsRejected = CoreMetrics.Gauge(label: "tagservice_records_rejected", factory: factory)
        deliveryFailures = CoreMetrics.Gauge(label: "tagservice_delivery_failures", factory: factory)
        queueBacklog = CoreMetrics.Gauge(label: "tagservice_queue_backlog_records", factory: factory)
        queueBytes = CoreMetrics.Gauge(label: "tagservice_queue_bytes", factory: factory)
        liveSessions = CoreMetrics.Gauge(label: "tagservice_sessions_live", factory: factory)
        liveContainers = CoreMetrics.Gauge(label: "tagservice_containers_live", factory: factory)
    }

    /// Counts what one push did.
    func record(_ result: PushResult) {
        if result.deferred { deferredPushes.increment() }
        if !result.events.isEmpty { events.increment(by: result.events.count) }
        for tag in result.fired {
            switch tag.status {
            case .ok: tagsFired.increment()
            case .dropped: tagsDropped.increment()
            default: tagsFailed.increment()
            }
        }
    }

    /// The page `GET /metrics` answers with.
    func render() -> [UInt8] { registry.emitToBuffer() }
}
