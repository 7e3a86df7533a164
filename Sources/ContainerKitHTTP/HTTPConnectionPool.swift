import ContainerKitSupport
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The connections an ``HTTPClient`` keeps open for the next request to the same host: a client that sends
/// to one server again and again (a delivery destination) pays for a connection — and for `https`, a TLS
/// handshake — once, not per request.
///
/// - `http://`: after an answer that leaves the connection usable (HTTP/1.1, no `Connection: close`, a
///   body delimited by its `Content-Length` or chunks and read to its end, nothing after it), the socket is
///   kept idle here, at most ``Configuration/maximumIdlePerHost`` per host and port and for at most
///   ``Configuration/idleTimeout``. The next request takes the most recently used one; a socket the server
///   closed meanwhile (readable while idle) is dropped unused. A request whose first write finds its
///   reused socket closed is sent again on a new connection — nothing of it reached the server; any later
///   failure is the request's (the caller's retry policy decides, as for a new connection).
/// - `https://`: the requests share one FoundationNetworking session (made at the first such request),
///   whose connection cache does the same.
///
/// The pool starts nothing: it holds what requests leave behind; its client's I/O thread takes and keeps
/// connections (never waiting: the idle check is a zero-timeout `poll`). ``close()`` (run when the client's
/// `run()` ends, and when the pool is released) closes every idle socket and ends the session. It is safe
/// to use from many threads at once.
package final class HTTPConnectionPool: Sendable {
    /// How many connections are kept, and for how long.
    package struct Configuration: Sendable {
        /// Idle `http` connections kept per host and port (4); more are closed when their request ends.
        package var maximumIdlePerHost = 4
        /// How long an idle connection is kept (4 s), well under the usual server keep-alive timeouts so that
        /// a server rarely closes one just as it is reused.
        package var idleTimeout: Duration = .seconds(4)

        /// The defaults.
        package init() {}
    }

    /// Counters for tests and monitoring.
    package struct Statistics: Sendable, Hashable {
        /// Sockets connected for `http` requests.
        package var connectionsOpened = 0
        /// Requests sent on a kept connection.
        package var connectionsReused = 0
        /// Kept connections dropped unused: expired, or closed by the server while idle.
        package var idleConnectionsDropped = 0
    }

    private struct Idle {
        var socket: Int32
        var since: ContinuousClock.Instant
    }

    private struct State {
        var idle: [String: [Idle]] = [:]
        var statistics = Statistics()
        var session: PooledURLSession?
        var closed = false
    }

    /// The pool's limits.
    package let configuration: Configuration
    private let state = Mutex(State())
    /// ``Statistics/connectionsReused``, counted without the lock once a taken connection proved live.
    private let reused = Atomic<Int>(0)

    /// An empty pool.
    package init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    deinit {
        close()
    }

    /// Counters for tests and monitoring.
    package var statistics: Statistics {
        var statistics = state.withLock { $0.statistics }
        statistics.connectionsReused += reused.load(ordering: .relaxed)
        return statistics
    }

    /// Idle `http` connections kept now.
    package var idleCount: Int { state.withLock { $0.idle.values.reduce(0) { $0 + $1.count } } }

    /// Closes every idle connection and ends the `https` session; later requests through the pool connect
    /// anew and close their connections after them.
    package func close() {
        let (sockets, session) = state.withLock { state -> ([Int32], PooledURLSession?) in
            state.closed = true
            let sockets = state.idle.values.flatMap { $0.map(\.socket) }
            state.idle = [:]
            defer { state.session = nil }
            return (sockets, state.session)
        }
        for socket in sockets { closeSocket(socket) }
        session?.invalidate()
    }

    // MARK: http

    /// A live idle connection to `key` (`host:port`), or `nil`: expired ones and ones the server has closed
    /// (or written to unasked) are closed on the way.
    func takeIdle(for key: String) -> Int32? {
        let now = ContinuousClock.now
        var dropped: [Int32] = []
        defer { for socket in dropped { closeSocket(socket) } }
        while true {
            let candidate = state.withLock { state -> Int32? in
                while let last = state.idle[key]?.popLast() {
                    if now - last.since < configuration.idleTimeout { return last.socket }
                    dropped.append(last.socket)
                    state.statistics.idleConnectionsDropped += 1
                }
                return nil
            }
            guard let socket = candidate else { return nil }
            if Self.isQuiet(socket) {
                reused.add(1, ordering: .relaxed)
                return socket
            }
            dropped.append(socket)
            state.withLock { $0.statistics.idleConnectionsDropped += 1 }
        }
    }

    /// Keeps `socket` for the next request to `key`, or closes it when the pool is closed or full. Kept
    /// connections of `key` that have expired are closed first: requests take the most recent one, so the
    /// oldest would otherwise stay open unused while traffic goes on.
    func keepIdle(_ socket: Int32, for key: String) {
        let now = ContinuousClock.now
        var closing: [Int32] = []
        state.withLock { state in
            var idle = state.idle.removeValue(forKey: key) ?? []
            let expired = idle.prefix { now - $0.since >= configuration.idleTimeout }.count
            closing = idle.prefix(expired).map(\.socket)
            idle.removeFirst(expired)
            state.statistics.idleConnectionsDropped += expired
            if !state.closed, idle.count < configuration.maximumIdlePerHost {
                idle.append(Idle(socket: socket, since: now))
            } else {
                closing.append(socket)
            }
            if !idle.isEmpty { state.idle[key] = idle }
        }
        for socket in closing { closeSocket(socket) }
    }

    /// Counts a new `http` connection.
    func countOpened() { state.withLock { $0.statistics.connectionsOpened += 1 } }

    /// An idle HTTP/1.1 connection has nothing to read: readable means the server closed it (or broke the
    /// protocol), and it cannot carry another request.
    private static func isQuiet(_ socket: Int32) -> Bool {
        var entry = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, 0) == 0
    }

    // MARK: https

    /// The shared FoundationNetworking session, made at the first `https` request (`nil` once closed).
    func urlSession() -> PooledURLSession? {
        state.withLock { state in
            guard !state.closed else { return nil }
            if let session = state.session { return session }
            let session = PooledURLSession()
            state.session = session
            return session
        }
    }
}

/// Closes a socket (outside the pool, whose `close()` would shadow the system call).
private func closeSocket(_ socket: Int32) { _ = close(socket) }

/// One FoundationNetworking session for the `https` requests of an ``HTTPConnectionPool``: its delegate
/// hands each task's callbacks to that task's own ``BoundedHTTPDelegate``, so every request keeps its
/// limits while they share connections.
final class PooledURLSession: Sendable {
    let session: URLSession
    private let router: TaskDelegateRouter

    init() {
        router = TaskDelegateRouter()
        // Timeouts are each request's own (its `timeoutInterval` and deadline), not the session's.
        session = URLSession(
            configuration: URLSessionHTTPTransport.configuration(),
            delegate: router,
            delegateQueue: nil
        )
    }

    /// A data task whose callbacks go to `delegate` (until it completes).
    func dataTask(with request: URLRequest, delegate: BoundedHTTPDelegate) -> URLSessionDataTask {
        let task = session.dataTask(with: request)
        router.register(delegate, for: task.taskIdentifier)
        return task
    }

    /// Lets the tasks finish, then ends the session (off the cooperative pool, ``BlockingCall``:
    /// FoundationNetworking may wait for its work queue).
    func invalidate() {
        let session = self.session
        BlockingCall.run { session.finishTasksAndInvalidate() }
    }
}

/// A session delegate that forwards each task's callbacks to the delegate registered for it
/// (FoundationNetworking on Linux does not call `URLSessionTask.delegate`, so one session delegate routes).
final class TaskDelegateRouter: NSObject, URLSessionDataDelegate, Sendable {
    private let delegates = Mutex<[Int: BoundedHTTPDelegate]>([:])

    func register(_ delegate: BoundedHTTPDelegate, for task: Int) {
        delegates.withLock { $0[task] = delegate }
    }

    private func delegate(of task: URLSessionTask, removing: Bool = false) -> BoundedHTTPDelegate? {
        delegates.withLock { removing ? $0.removeValue(forKey: task.taskIdentifier) : $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let delegate = delegate(of: dataTask) else { return completionHandler(.cancel) }
        delegate.urlSession(session, dataTask: dataTask, didReceive: response, completionHandler: completionHandler)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        delegate(of: dataTask)?.urlSession(session, dataTask: dataTask, didReceive: data)
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // The task's own delegate decides (it never follows a redirect); without one, nothing is followed.
        guard let delegate = delegate(of: task) else { return completionHandler(nil) }
        delegate.urlSession(
            session,
            task: task,
            willPerformHTTPRedirection: response,
            newRequest: request,
            completionHandler: completionHandler
        )
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        delegate(of: task, removing: true)?.urlSession(session, task: task, didCompleteWithError: error)
    }
}
