import CoreMetrics
import Hummingbird
import Synchronization

/// Counts the answers of every route by status and times them, into the service's metrics:
/// `tagservice_requests_total{route, status}` and `tagservice_request_duration_seconds{route}`. The route
/// handlers count nothing themselves.
struct RequestMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let counters: RequestCounters

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let start = ContinuousClock.now
        let status: HTTPResponse.Status
        do {
            let response = try await next(request, context)
            status = response.status
            counters.count(route: context.endpointPath ?? "unmatched", status: status, since: start)
            return response
        } catch {
            status = (error as? any HTTPResponseError)?.status ?? .internalServerError
            counters.count(route: context.endpointPath ?? "unmatched", status: status, since: start)
            throw error
        }
    }
}

/// The counters and timers of ``RequestMetricsMiddleware``, made once per route and status.
final class RequestCounters: Sendable {
    private let factory: any MetricsFactory
    private let made = Mutex<[String: (CoreMetrics.Counter, CoreMetrics.Timer)]>([:])

    init(factory: any MetricsFactory) { self.factory = factory }

    /// Counts one answer of `route` with `status` that took the time since `start`.
    func count(route: String, status: HTTPResponse.Status, since start: ContinuousClock.Instant) {
        let key = "\(status.code) \(route)"
        let (counter, timer) = made.withLock { made in
            if let pair = made[key] { return pair }
            let pair = (
                CoreMetrics.Counter(
                    label: "tagservice_requests_total",
                    dimensions: [("route", route), ("status", "\(status.code)")],
                    factory: factory
                ),
                CoreMetrics.Timer(
                    label: "tagservice_request_duration_seconds",
                    dimensions: [("route", route), ("status", "\(status.code)")],
                    factory: factory
                )
            )
            made[key] = pair
            return pair
        }
        counter.increment()
        let (seconds, attoseconds) = (ContinuousClock.now - start).components
        timer.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
