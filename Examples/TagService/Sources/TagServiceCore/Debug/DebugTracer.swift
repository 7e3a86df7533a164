import ContainerKit
import ContainerKitBraze

/// Makes the debug page's trace of a push (``PushTrace``): the one place that knows where a trace comes from.
enum DebugTracer {}

extension DebugHub {
    /// Records the push of `event` (`POST /v1/events`).
    func record(_ result: PushResult, of event: EventRequest, tracing: DebugTracing) {
        record(result, event.event, event.parameters, event.eventID, user: event.userID, tracing: tracing)
    }

    /// Records the push of one event of a batch (`POST /v1/batch`).
    func record(_ result: PushResult, of request: SessionStore.PushRequest, tracing: DebugTracing) {
        record(result, request.event, request.parameters, request.eventID, user: request.userID, tracing: tracing)
    }

    private func record(
        _ result: PushResult,
        _ event: String,
        _ parameters: ValueMap,
        _ eventID: String?,
        user: String,
        tracing: DebugTracing
    ) {
        let trace = DebugTracer.trace(of: result, event: event, parameters: parameters, eventID: eventID)
        record(trace, userID: user, tracing: tracing)
    }
}

extension TagServiceApplication {
    /// The delivery pipeline's backlog (records durable and not delivered or rejected, with what a previous run
    /// left) and delivered total, for the debug page's overview.
    static func deliveryReading(queue: DurableQueue?, scaleOut: PostgresScaleOut?, metrics: ServiceMetrics)
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
