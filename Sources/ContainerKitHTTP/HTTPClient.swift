import ContainerKitSupport
import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The package's HTTP client: ``BoundedHTTPRequest``s over kept connections, with all their I/O on **one
/// thread that ``run()`` owns**.
///
/// `http://` exchanges are non-blocking sockets driven by that thread's `poll` loop — connecting, sending,
/// reading the answer into an ``HTTPResponseParser`` — with each request's one deadline kept by the same
/// loop; a connection the answer leaves usable goes back to ``pool`` for the next request to the host.
/// `https://` requests go through FoundationNetworking on the pool's shared session; the loop keeps their
/// deadlines (no timer task per request).
///
/// ```swift
/// let client = HTTPClient()
/// try await withThrowingTaskGroup(of: Void.self) { group in
///     group.addTask { try await client.run() }        // the I/O thread lives as long as this task
///     let answer = try await request.send(through: client)
///     group.cancelAll()
/// }
/// ```
///
/// A request sent while no ``run()`` is running (before it starts, after it ended, or to a client nobody
/// runs) is not refused and never waits for one: it is served by a client made for it alone, whose I/O
/// thread starts at once in the caller's task and is joined when the request ends (one connection, closed
/// after the answer).
///
/// Cancelling ``run()`` stops the loop: requests in flight end with ``BoundedHTTPError/Kind/cancelled``, the
/// thread is joined, and the kept connections and the `https` session are closed before `run()` returns.
package final class HTTPClient: Sendable {
    /// How many connections are kept, and for how long.
    package typealias Configuration = HTTPConnectionPool.Configuration

    /// Where answers leave their connections and requests take them from (and the shared `https` session).
    package let pool: HTTPConnectionPool
    /// Whether answers may leave their connection for the next request (`false` for a client made for one
    /// request).
    let keepsConnections: Bool
    private let inbox = Mutex(Inbox())
    /// Whether the loop runs (the inbox's phase is `.running`), written with the phase under the inbox's lock and
    /// read without it before a request is handed over.
    private let loopRuns = Atomic<Bool>(false)
    /// The last exchange's or timer's identity.
    private let lastID = Atomic<UInt64>(0)

    /// What the loop has not yet taken, and where it is.
    private struct Inbox {
        var phase = Phase.notStarted
        var commands: [Command] = []
        var startWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private enum Phase {
        case notStarted
        /// The loop runs; writing to `wake` wakes it.
        case running(wake: Int32)
        case stopped
    }

    /// Work handed to the I/O thread.
    enum Command: Sendable {
        case exchange(id: UInt64, SocketExchange.Submission)
        /// Calls `fire` with `deadlineExceeded` at `end`, or with `cancelled` if the loop stops first.
        case timer(id: UInt64, end: ContinuousClock.Instant, fire: @Sendable (BoundedHTTPError) -> Void)
        case cancel(id: UInt64)
    }

    /// A client that keeps connections as `configuration` says (it starts nothing: see ``run()``).
    package init(configuration: Configuration = Configuration()) {
        pool = HTTPConnectionPool(configuration: configuration)
        keepsConnections = true
    }

    /// A client for one request (``withClientForOneRequest(_:)`` starts and stops its loop): it keeps no
    /// connection.
    private init(forOneRequest: Void) {
        pool = HTTPConnectionPool()
        keepsConnections = false
    }

    /// Counters of the kept connections.
    package var statistics: HTTPConnectionPool.Statistics { pool.statistics }

    /// Idle `http` connections kept now.
    package var idleCount: Int { pool.idleCount }

    // MARK: Running

    /// Runs the client's I/O thread until the calling task is cancelled; then ends the requests in flight
    /// (`cancelled`), joins the thread, and closes the kept connections and the `https` session. Returns at
    /// once when the client already runs or ran.
    /// - Throws: when the loop's wake-up pipe cannot be made.
    package func run() async throws {
        guard let loop = try startLoop() else { return }
        await untilCancelled()
        await stop(loop)
    }

    /// The I/O thread of a started loop and its wake-up pipe.
    private struct RunningLoop: Sendable {
        var thread: OwnedThread
        var read: Int32
        var write: Int32
    }

    /// Starts the I/O thread at once, on the calling thread; `nil` when the client already runs or ran.
    private func startLoop() throws(BoundedHTTPError) -> RunningLoop? {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else {
            let failure = BoundedHTTPError(.connectionFailed, "pipe failed: errno \(errno)")
            stop(failing: failure)
            throw failure
        }
        for fd in fds {
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        }
        let (read, write) = (fds[0], fds[1])
        let waiters = inbox.withLock { inbox -> [CheckedContinuation<Void, Never>]? in
            guard case .notStarted = inbox.phase else { return nil }
            inbox.phase = .running(wake: write)
            loopRuns.store(true, ordering: .releasing)
            defer { inbox.startWaiters = [] }
            return inbox.startWaiters
        }
        guard let waiters else {
            close(read)
            close(write)
            return nil
        }
        for waiter in waiters { waiter.resume() }
        let thread = OwnedThread.start(name: "containerkit.http-client") { [self] in
            HTTPClientLoop(client: self, wake: read).run()
        }
        return RunningLoop(thread: thread, read: read, write: write)
    }

    /// Stops the loop: requests in flight end `cancelled`, the thread is joined, then the wake-up pipe, the
    /// kept connections and the `https` session are closed.
    private func stop(_ loop: RunningLoop) async {
        inbox.withLock {
            $0.phase = .stopped
            loopRuns.store(false, ordering: .releasing)
        }
        wakeLoop(loop.write)
        await loop.thread.join()
        close(loop.read)
        close(loop.write)
        pool.close()
    }

    /// Returns once ``run()`` started (or the client stopped, or the calling task is cancelled).
    package func started() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = inbox.withLock { inbox -> Bool in
                guard case .notStarted = inbox.phase else { return true }
                inbox.startWaiters.append(continuation)
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Marks the client stopped without a loop and fails what was queued.
    private func stop(failing failure: BoundedHTTPError) {
        let (commands, waiters) = inbox.withLock { inbox in
            inbox.phase = .stopped
            loopRuns.store(false, ordering: .releasing)
            defer {
                inbox.commands = []
                inbox.startWaiters = []
            }
            return (inbox.commands, inbox.startWaiters)
        }
        for waiter in waiters { waiter.resume() }
        for command in commands {
            switch command {
            case .exchange(_, let submission): submission.resume(.failure(failure))
            case .timer(_, _, let fire): fire(failure)
            case .cancel: break
            }
        }
    }

    /// The commands handed over since the last call, and whether the loop is to stop.
    func takeCommands() -> (commands: [Command], stop: Bool) {
        inbox.withLock { inbox in
            defer { inbox.commands.removeAll(keepingCapacity: true) }
            if case .stopped = inbox.phase { return (inbox.commands, true) }
            return (inbox.commands, false)
        }
    }

    /// Hands `command` to the loop; `false` when the client does not run.
    private func submit(_ command: Command) -> Bool {
        inbox.withLock { inbox in
            switch inbox.phase {
            case .running(let wake):
                inbox.commands.append(command)
                // One wake-up byte per batch of commands: the loop drains the pipe when it takes them. Written
                // under the lock (a non-blocking pipe: it never waits): ``stop(_:)`` marks the client stopped
                // under it before it closes the pipe, so the byte never goes to a descriptor number the process
                // has reused for another file since.
                if inbox.commands.count == 1 { wakeLoop(wake) }
                return true
            case .notStarted, .stopped:
                return false
            }
        }
    }

    private func makeID() -> UInt64 {
        lastID.wrappingAdd(1, ordering: .relaxed).newValue
    }

    /// Whether requests are served by this client's loop now (a loop that stops right after is answered by
    /// ``submit(_:)``'s refusal).
    private var accepts: Bool { loopRuns.load(ordering: .acquiring) }

    // MARK: Sending

    /// Sends `request` within its limits and its one deadline (see ``BoundedHTTPRequest``).
    package func send(_ request: BoundedHTTPRequest) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        try await Self.keepingDeadline(of: request) { end throws(BoundedHTTPError) in
            try await self.exchange(request, end: end)
        }
    }

    /// Runs `body` within `request`'s one deadline: on the monotonic clock `body` gets the instant, for the
    /// loop to keep; on a ``BoundedHTTPRequest/DeadlineClock`` it gets `nil`, and a child task sleeping on
    /// that clock ends it (cancelled, reported as `deadlineExceeded`) when the sleep ends first.
    static func keepingDeadline(
        of request: BoundedHTTPRequest,
        _ body: @escaping @Sendable (ContinuousClock.Instant?) async throws(BoundedHTTPError) -> BoundedHTTPResponse
    ) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        guard let clock = request.deadlineClock else { return try await body(.now + request.deadline) }
        let outcome = await withTaskGroup(of: SocketExchange.Outcome?.self) { group in
            group.addTask {
                do throws(BoundedHTTPError) {
                    return .success(try await body(nil))
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                do { try await clock.sleep(request.deadline) } catch { return nil }
                return .failure(BoundedHTTPError(.deadlineExceeded))
            }
            var first: SocketExchange.Outcome?
            while let next = await group.next() {
                guard first == nil, let next else { continue }
                first = next
                group.cancelAll()
            }
            return first ?? .failure(BoundedHTTPError(.cancelled))
        }
        return try outcome.get()
    }

    /// One exchange on this client's loop (or on a client made for it when this one does not run), ended by
    /// the loop at `end` when given.
    private func exchange(
        _ request: BoundedHTTPRequest,
        end: ContinuousClock.Instant?
    ) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        guard accepts else {
            // A client made for one request whose loop did not start (or stopped) fails at once.
            guard keepsConnections else { throw BoundedHTTPError(.cancelled, "the http client stopped") }
            return try await Self.sendAlone(request, end: end)
        }
        if request.url.scheme?.lowercased() == "https" {
            return try await URLSessionHTTPTransport.send(request, end: end, client: self)
        }
        let id = makeID()
        let keep = keepsConnections
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<SocketExchange.Outcome, Never>) in
                let submission = SocketExchange.Submission(request: request, end: end, keep: keep) {
                    continuation.resume(returning: $0)
                }
                guard submit(.exchange(id: id, submission)) else {
                    continuation.resume(returning: .failure(BoundedHTTPError(.cancelled, "the http client stopped")))
                    return
                }
                if Task.isCancelled { _ = submit(.cancel(id: id)) }
            }
        } onCancel: {
            _ = submit(.cancel(id: id))
        }
        return try outcome.get()
    }

    /// Calls `fire` on the loop with `deadlineExceeded` at `end`, or with `cancelled` when the loop stops
    /// first; `nil` when the client does not run. Cancel it with ``cancelTimer(_:)``.
    func schedule(at end: ContinuousClock.Instant, _ fire: @escaping @Sendable (BoundedHTTPError) -> Void) -> UInt64? {
        let id = makeID()
        return submit(.timer(id: id, end: end, fire: fire)) ? id : nil
    }

    /// Drops a timer that has not fired.
    func cancelTimer(_ id: UInt64) { _ = submit(.cancel(id: id)) }

    /// Serves `request` with a client of its own, run for the request's duration in the caller's task.
    static func sendAlone(_ request: BoundedHTTPRequest) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        try await keepingDeadline(of: request) { end throws(BoundedHTTPError) in
            try await sendAlone(request, end: end)
        }
    }

    private static func sendAlone(
        _ request: BoundedHTTPRequest,
        end: ContinuousClock.Instant?
    ) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        let outcome = await withClientForOneRequest { client -> SocketExchange.Outcome in
            do throws(BoundedHTTPError) {
                return .success(try await client.exchange(request, end: end))
            } catch {
                return .failure(error)
            }
        }
        return try outcome.get()
    }

    /// Runs `body` with a client that keeps no connection and whose I/O thread lasts as long as `body`: the
    /// thread starts at once on the calling thread — a request's I/O never waits for a thread of the
    /// cooperative pool, which CPU-bound work may hold while the request's deadline runs — and is joined
    /// before the result is returned.
    package static func withClientForOneRequest<T>(_ body: (HTTPClient) async -> T) async -> T {
        let client = HTTPClient(forOneRequest: ())
        // Without its loop (no pipe), the client fails what it was given: `body` gets typed failures.
        let loop = try? client.startLoop()
        let result = await body(client)
        if let loop { await client.stop(loop) }
        return result
    }
}

/// Writes one byte to the loop's wake-up pipe.
private func wakeLoop(_ fd: Int32) {
    var byte: UInt8 = 1
    _ = write(fd, &byte, 1)
}

/// The client's I/O thread: a `poll` loop over the wake-up pipe and the sockets of the exchanges in
/// flight, keeping their deadlines and the `https` timers. Confined to that thread.
private final class HTTPClientLoop {
    private struct Timer {
        var end: ContinuousClock.Instant
        var fire: @Sendable (BoundedHTTPError) -> Void
    }

    private let client: HTTPClient
    private let wake: Int32
    private var exchanges: [UInt64: SocketExchange] = [:]
    private var timers: [UInt64: Timer] = [:]
    private var buffer = [UInt8](repeating: 0, count: SocketExchange.step)

    init(client: HTTPClient, wake: Int32) {
        self.client = client
        self.wake = wake
    }

    func run() {
        while true {
            let (commands, stop) = client.takeCommands()
            for command in commands { apply(command) }
            if stop { break }
            expire()
            var fds = [pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
            var ids: [UInt64] = []
            for (id, exchange) in exchanges where exchange.descriptor >= 0 {
                fds.append(pollfd(fd: exchange.descriptor, events: exchange.events, revents: 0))
                ids.append(id)
            }
            let n = poll(&fds, nfds_t(fds.count), timeout())
            if n < 0 {
                guard errno == EINTR else { break }
                continue
            }
            if fds[0].revents != 0 { drainWake() }
            for (index, id) in ids.enumerated() where fds[index + 1].revents != 0 {
                guard let exchange = exchanges[id] else { continue }
                if let outcome = exchange.ready(buffer: &buffer) { finish(id, outcome) }
            }
        }
        let stopped = BoundedHTTPError(.cancelled, "the http client stopped")
        for (id, exchange) in exchanges {
            exchange.abandon()
            finish(id, .failure(stopped))
        }
        for timer in timers.values { timer.fire(stopped) }
        timers = [:]
        // Commands handed over after the last take are failed the same way.
        for command in client.takeCommands().commands {
            switch command {
            case .exchange(_, let submission): submission.resume(.failure(stopped))
            case .timer(_, _, let fire): fire(stopped)
            case .cancel: break
            }
        }
    }

    private func apply(_ command: HTTPClient.Command) {
        switch command {
        case .exchange(let id, let submission):
            let exchange = SocketExchange(submission, pool: client.pool)
            exchanges[id] = exchange
            if let outcome = exchange.start(buffer: &buffer) { finish(id, outcome) }
        case .timer(let id, let end, let fire):
            timers[id] = Timer(end: end, fire: fire)
        case .cancel(let id):
            timers[id] = nil
            if let exchange = exchanges[id] {
                exchange.abandon()
                finish(id, .failure(BoundedHTTPError(.cancelled)))
            }
        }
    }

    private func finish(_ id: UInt64, _ outcome: SocketExchange.Outcome) {
        guard let exchange = exchanges.removeValue(forKey: id) else { return }
        exchange.submission.resume(outcome)
    }

    /// Ends the exchanges whose deadline passed and fires the due timers.
    private func expire() {
        let now = ContinuousClock.now
        for (id, exchange) in exchanges where exchange.submission.end.map({ $0 <= now }) ?? false {
            exchange.abandon()
            finish(id, .failure(BoundedHTTPError(.deadlineExceeded)))
        }
        for (id, timer) in timers where timer.end <= now {
            timers[id] = nil
            timer.fire(BoundedHTTPError(.deadlineExceeded))
        }
    }

    /// Milliseconds until the next deadline (rounded up), or -1 without one.
    private func timeout() -> Int32 {
        var next: ContinuousClock.Instant?
        for end in exchanges.values.compactMap(\.submission.end) { next = min(next ?? end, end) }
        for timer in timers.values { next = min(next ?? timer.end, timer.end) }
        guard let next else { return -1 }
        let left = next - .now
        guard left > .zero else { return 0 }
        let (seconds, attoseconds) = left.components
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: max(1, milliseconds))
    }

    private func drainWake() {
        var bytes = [UInt8](repeating: 0, count: 64)
        while bytes.withUnsafeMutableBytes({ read(wake, $0.baseAddress, $0.count) }) > 0 {}
    }
}
