import ContainerKit
import ContainerKitBraze
import Foundation
import Hummingbird

/// `GET /health`, `GET /ready` and `GET /metrics`.
struct OperationsController: Sendable {
    let manager: TagManager
    let sessions: SessionStore
    /// The local record queue (`nil` with `--postgres`).
    let queue: DeliveryPipeline<SegmentRecordStore>?
    let metrics: ServiceMetrics
    let readiness: Readiness
    /// The containers `/ready` waits for (`--open` mode); empty: any live container will do.
    let requiredIDs: [String]
    /// `--postgres` mode: `/ready` also needs PostgreSQL, `/metrics` shows the store's figures.
    var scaleOut: PostgresScaleOut? = nil
    /// `--metrics-token`: `/metrics` answers only this Bearer token; `nil`: open. `/health` and `/ready` are
    /// always open (a load balancer's probes carry no credentials, and they tell nothing about the users).
    var metricsToken: String? = nil

    /// The longest `GET /ready?wait=<seconds>`.
    static let maximumReadyWait: Double = 30

    func register(on router: Router<BasicRequestContext>) {
        router.get("health") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json"],
                body: ResponseBody(byteBuffer: ByteBuffer(staticString: #"{"status":"ok"}"#))
            )
        }
        router.get("ready") { request, _ in
            let wait: Double
            do throws(APIError) {
                wait =
                    try APIError.queryParameter("wait", of: request, must: "a number of seconds from 0") {
                        Double($0).flatMap { $0 >= 0 ? $0 : nil }
                    } ?? 0
            } catch {
                return error.response
            }
            return await self.readiness(waiting: min(wait, Self.maximumReadyWait))
        }
        let metricsRoutes = router.group()
        if let metricsToken { metricsRoutes.add(middleware: MetricsTokenMiddleware(token: WriteKeys([metricsToken]))) }
        metricsRoutes.get("metrics") { _, _ in
            self.metrics.update(sessions: self.sessions.statistics, containers: self.manager.containers.count)
            if let queue = self.queue { self.metrics.update(queue: queue.statistics) }
            if let braze = self.manager.tagHandler(for: BrazeTagProvider.defaultClassPaths[0]) as? BrazeTagProvider {
                self.metrics.update(braze: braze.pendingStatistics)
            }
            var text = self.metrics.render()
            if let scaleOut = self.scaleOut { text += Array(await scaleOut.metricsText().utf8) }
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: text))
            )
        }
    }

    /// 200 when the service can do its job now: the containers are live, the record queue's `run()` is
    /// running, and the last commit of records succeeded (or, after a failed one, the queue directory takes
    /// a synced write again); 503 naming what is missing otherwise.
    ///
    /// In `--open` mode every opened ID must be live; `wait` seconds are spent in
    /// ``TagManager/waitUntilLive(id:timeout:)`` first (`GET /ready?wait=10` for a start script). With a
    /// containers directory, one live container is enough.
    func readiness(waiting wait: Double) async -> Response {
        if wait > 0 {
            for id in requiredIDs { _ = try? await manager.waitUntilLive(id: id, timeout: .seconds(wait)) }
        }
        let live = manager.containers.map(\.id)
        let missing = requiredIDs.filter { manager.container(id: $0) == nil }
        let containersReady = requiredIDs.isEmpty ? !live.isEmpty : missing.isEmpty
        let failed = readiness.lastCommitFailed
        let writable = !failed || queue.map { Readiness.probe($0.store.directory) } ?? true
        let running = queue == nil || readiness.queueRunning
        let postgres = scaleOut.map { $0.store.isAvailable }
        // A session store that cannot save or load now is not ready either.
        let sessionsHealthy = sessions.persistenceIsHealthy
        let ready = containersReady && writable && running && postgres != false && sessionsHealthy
        var body = ValueMap()
        body["ready"] = .bool(ready)
        body["containers"] = .array(live.map(Value.string))
        if !missing.isEmpty { body["missing"] = .array(missing.map(Value.string)) }
        body["queue_running"] = .bool(running)
        body["last_commit"] = .string(failed ? "failed" : "ok")
        body["queue_writable"] = .bool(writable)
        if let postgres { body["postgres_available"] = .bool(postgres) }
        // Why PostgreSQL cannot be used now, by its code only (`postgres_timeout`, …): never a URL or a statement.
        if let reason = scaleOut?.store.unavailableReason { body["postgres_error"] = .string(reason.rawValue) }
        body["sessions_healthy"] = .bool(sessionsHealthy)
        return Response.json(body, status: ready ? .ok : .serviceUnavailable)
    }
}
