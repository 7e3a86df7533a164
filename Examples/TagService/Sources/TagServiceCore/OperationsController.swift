import ContainerKit
import Hummingbird

/// `GET /health`, `GET /ready` and `GET /metrics`.
struct OperationsController: Sendable {
    let manager: TagManager
    let sessions: UserSessions
    let pipeline: RecordPipeline
    let metrics: ServiceMetrics

    func register(on router: Router<BasicRequestContext>) {
        router.get("health") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(staticString: #"{"status":"ok"}"#))
            )
        }
        router.get("ready") { _, _ in self.readiness() }
        router.get("metrics") { _, _ in
            self.updateGauges()
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: self.metrics.render()))
            )
        }
    }

    /// 200 when a container is live and the queue is writable; 503 naming what is missing otherwise.
    func readiness() -> Response {
        let containers = manager.containers.map(\.id)
        let writable = pipeline.isWritable
        var body = ValueMap()
        body["ready"] = .bool(!containers.isEmpty && writable)
        body["containers"] = .array(containers.map(Value.string))
        body["queue_writable"] = .bool(writable)
        return Response.json(body, status: !containers.isEmpty && writable ? .ok : .serviceUnavailable)
    }

    private func updateGauges() {
        pipeline.update(metrics)
        metrics.liveSessions.record(sessions.count)
        metrics.liveContainers.record(manager.containers.count)
    }
}
