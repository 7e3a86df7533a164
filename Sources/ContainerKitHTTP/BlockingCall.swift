import Dispatch

/// Runs calls into FoundationNetworking that may wait a long time (`dataTask`, `resume`, `cancel`, a session's
/// invalidation: each waits for the session's work queue, which libcurl holds while any session reads an endless
/// or inflating answer) on a thread that is not one of the cooperative pool's.
///
/// `DispatchQueue.global()` is not such a thread on Linux: Swift's global executor runs its jobs on the same
/// Dispatch root queue, whose width is the number of cores, and a worker blocked in a wait holds its place until
/// Dispatch's monitor adds a thread, slowly. Measured on a 2-core machine: with 2 global workers blocked, 8 small
/// tasks waited 0.8 s to run; with 4, 2.8 s; with 16, 13.8 s; with 64, 62 s — every task of the process stalled, the
/// HTTP client's deadlines and a service's requests with them. A serial queue of its own targets Dispatch's
/// *overcommit* root queue instead, which gives a blocked item a thread of its own (16 blocked: the tasks ran
/// within 7 ms); one queue per call, so that a call waiting for one session never queues another behind it.
enum BlockingCall {
    /// Runs `body` asynchronously, off the cooperative pool.
    static func run(_ body: @escaping @Sendable () -> Void) {
        DispatchQueue(label: "containerkit.foundation-networking-call").async(execute: body)
    }
}
