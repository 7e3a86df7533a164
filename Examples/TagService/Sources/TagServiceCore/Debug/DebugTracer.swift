import ContainerKit
import ContainerKitBraze

extension DebugHub {
    /// Records the push of `event` (`POST /v1/events`), pushed with `tracing: true`: its ``PushResult/trace``.
    func record(_ result: PushResult, of event: EventRequest, tracing: DebugTracing) {
        guard let trace = result.trace else { return }
        record(trace, userID: event.userID, tracing: tracing)
    }

    /// Records the push of one event of a batch (`POST /v1/batch`), pushed with `tracing: true`.
    func record(_ result: PushResult, of request: SessionStore.PushRequest, tracing: DebugTracing) {
        guard let trace = result.trace else { return }
        record(trace, userID: request.userID, tracing: tracing)
    }
}

/// The tag manager's observer while the debug page is on: the metrics' observer, and the overview's counts of every
/// push's tags (``DebugOverview/count(_:)``). With the page off the tag manager's observer is the metrics alone.
/// A class: the tag manager copies its observer for each push, and a copy of a class is one reference count.
final class DebugRuntimeObserver: RuntimeObserver, DeliveryObserver {
    let metrics: ServiceMetrics
    let overview: DebugOverview

    init(metrics: ServiceMetrics, overview: DebugOverview) {
        self.metrics = metrics
        self.overview = overview
    }

    func observe(_ event: RuntimeEvent) {
        metrics.observe(event)
        overview.count(event)
    }

    func observe(_ event: DeliveryEvent) { metrics.observe(event) }
}

extension TagServiceApplication {
    /// The tag manager's observer: the metrics, and with the debug page on (`debug`) its overview's counts too.
    static func runtimeObserver(metrics: ServiceMetrics, debug: DebugHub?) -> any RuntimeObserver {
        guard let debug else { return metrics }
        return DebugRuntimeObserver(metrics: metrics, overview: debug.overview)
    }

    /// The delivery pipeline's backlog (records durable and not delivered or rejected, with what a previous run
    /// left) and delivered total, for the debug page's overview.
    static func deliveryReading(
        queue: DeliveryPipeline<SegmentRecordStore>?,
        scaleOut: PostgresScaleOut?,
        metrics: ServiceMetrics
    )
        -> (backlog: Int, delivered: Int)?
    {
        let statistics: DeliveryStatistics
        var backlog = 0
        if let queue {
            statistics = queue.statistics
            backlog = metrics.backlogAtStart
        } else if let scaleOut {
            statistics = scaleOut.pipeline.statistics
        } else {
            return nil
        }
        backlog += statistics.durableRecords - statistics.deliveredRecords - statistics.rejectedRecords
        return (max(0, backlog), statistics.deliveredRecords)
    }
}
