import ContainerKitSupport
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `https://` for ``BoundedHTTPRequest``, through FoundationNetworking: no redirects, no cache, no cookies;
/// an answer with a content encoding is refused when its header arrives (FoundationNetworking holds the
/// transfer until the delegate decides, so no compressed byte is inflated); a declared length over the limit
/// is refused before any body byte; the body is kept up to the limit and the transfer cancelled the moment a
/// block would pass it; the ``HTTPClient``'s I/O loop fails it at its deadline (no timer task per request).
///
/// What is bounded, exactly (see ``BoundedHTTPDelegate``): the body this client keeps never exceeds
/// ``BoundedHTTPRequest/maximumResponseBytes`` — the block that would pass the limit is dropped, not
/// appended, what was kept is released at once, and every later block is dropped as it is delivered. What
/// FoundationNetworking has read from the socket but not yet handed to the delegate is outside its reach:
/// libcurl reads in blocks of its buffer size (16 KiB) and queues each on the session's delegate queue
/// without waiting, so between the block that passes the limit and the cancellation taking effect a few more
/// blocks may be read and queued (they are freed as they are dropped). `http://` has no such slack: its
/// socket client reads nothing past the limit but the last 16 KiB step.
enum URLSessionHTTPTransport {
    /// Sends `request` with its deadline kept by `client`'s loop from now.
    static func send(
        _ request: BoundedHTTPRequest,
        client: HTTPClient
    ) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        try await send(request, end: .now + request.deadline, client: client)
    }

    /// Sends `request`, on the shared session of `client`'s pool when the client keeps connections,
    /// otherwise on a session of its own; `client`'s loop keeps the deadline at `end` (`nil`: the caller keeps
    /// it on the request's clock and cancels the task).
    static func send(
        _ request: BoundedHTTPRequest,
        end: ContinuousClock.Instant?,
        client: HTTPClient
    ) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        // FoundationNetworking counts its own (idle) timeouts in whole seconds; the deadline below is exact.
        let seconds = Double(request.deadline.components.seconds) + 1
        var urlRequest = URLRequest(
            url: request.url,
            cachePolicy: .reloadIgnoringLocalCacheData,
            timeoutInterval: seconds
        )
        urlRequest.httpMethod = request.method
        for field in request.callerHeaders { urlRequest.setValue(field.value, forHTTPHeaderField: field.name) }
        urlRequest.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        if !request.body.isEmpty || request.method != "GET" { urlRequest.httpBody = Data(request.body) }
        let delegate = BoundedHTTPDelegate(maximumBytes: request.maximumResponseBytes)
        let timer = Mutex<UInt64?>(nil)
        let prepared = urlRequest
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                // FoundationNetworking's calls (`dataTask`, `resume`, `cancel`) wait for its work queue, which
                // libcurl can hold for as long as some server keeps a socket of any session readable (an
                // endless or inflating answer): made off the cooperative pool (see `BlockingCall`).
                BlockingCall.run {
                    let task: URLSessionDataTask
                    if client.keepsConnections, let shared = client.pool.urlSession() {
                        task = shared.dataTask(with: prepared, delegate: delegate)
                    } else {
                        let session = URLSession(
                            configuration: configuration(timeout: seconds),
                            delegate: delegate,
                            delegateQueue: nil
                        )
                        task = session.dataTask(with: prepared)
                        // Lets the task finish, then releases the session.
                        session.finishTasksAndInvalidate()
                    }
                    if let end {
                        guard let id = client.schedule(at: end, { delegate.fail($0) }) else {
                            delegate.fail(BoundedHTTPError(.cancelled, "the http client stopped"))
                            delegate.start(task, continuation: continuation)
                            return
                        }
                        timer.withLock { $0 = id }
                    }
                    delegate.start(task, continuation: continuation)
                }
            }
        } onCancel: {
            delegate.fail(BoundedHTTPError(.cancelled))
        }
        if let id = timer.withLock({ $0 }) { client.cancelTimer(id) }
        return try outcome.get()
    }

    /// A session configuration without cache or cookies; `timeout` (seconds) bounds a request and the whole
    /// transfer when given (a shared session leaves them to each request and its deadline).
    static func configuration(timeout: Double? = nil) -> URLSessionConfiguration {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        if let timeout {
            configuration.timeoutIntervalForRequest = timeout
            configuration.timeoutIntervalForResource = timeout
        }
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        return configuration
    }
}

/// Collects one task's answer within the limits: it keeps at most `maximumBytes` body bytes at any time.
/// The first block that would pass the limit fails the exchange at once (`tooLarge`):
/// the block is dropped, the bytes kept so far are released, the task is cancelled, and every block still
/// delivered afterwards is dropped unread.
final class BoundedHTTPDelegate: NSObject, URLSessionDataDelegate, Sendable {
    typealias Outcome = Result<BoundedHTTPResponse, BoundedHTTPError>

    private struct State {
        var body: [UInt8] = []
        /// The most body bytes held at once.
        var peak = 0
        var status = 0
        var headers: [String: String] = [:]
        var expectedLength: Int64 = -1
        var failure: BoundedHTTPError?
        var continuation: CheckedContinuation<Outcome, Never>?
        var finished: Outcome?
        /// Whether the task's cancellation was asked for (once is enough).
        var cancelRequested = false
        /// The task, once started.
        var task: URLSessionTask?
    }

    private let maximumBytes: Int
    private let state = Mutex(State())

    init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    /// The body bytes held now.
    var bufferedByteCount: Int { state.withLock { $0.body.count } }

    /// The most body bytes held at any time so far.
    var peakBufferedByteCount: Int { state.withLock { $0.peak } }

    /// Whether the task's cancellation was asked for.
    var cancellationRequested: Bool { state.withLock { $0.cancelRequested } }

    /// The outcome, once there is one.
    var outcome: Outcome? { state.withLock { $0.finished } }

    /// Starts `task` for `continuation`, unless the exchange already failed: then the task is cancelled
    /// unstarted and `continuation` gets the failure. Called off the cooperative pool (it may wait for
    /// FoundationNetworking).
    func start(_ task: URLSessionDataTask, continuation: CheckedContinuation<Outcome, Never>) {
        let finished = state.withLock { state -> Outcome? in
            state.task = task
            if let finished = state.finished { return finished }
            state.continuation = continuation
            return nil
        }
        if let finished {
            continuation.resume(returning: finished)
            cancelOnce(task)
        } else {
            task.resume()
        }
    }

    /// Records the first failure, answers at once and cancels the task once it is started (see
    /// ``fail(_:cancelling:)``).
    func fail(_ error: BoundedHTTPError) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
        finish(.failure(error))
        // A task started by now is cancelled here; one started later finds the outcome and `start` cancels it.
        if let task = state.withLock({ $0.task }) { cancelOnce(task) }
    }

    /// Records the first failure, cancels the task and answers at once (the delegate queue may still hold
    /// data callbacks; they are ignored).
    ///
    /// The answer comes first and the cancellation after it, off the calling thread: `URLSessionTask.cancel()`
    /// waits for the session's work queue, which libcurl can hold for as long as a server keeps the socket
    /// readable (an endless or inflating answer). Cancelling inline would hold the caller — the delegate
    /// queue, the deadline timer — that long, past the deadline, while undelivered blocks pile up.
    func fail(_ error: BoundedHTTPError, cancelling task: URLSessionTask) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
        finish(.failure(error))
        cancelOnce(task)
    }

    /// Cancels `task` off the cooperative pool (``BlockingCall``), once.
    private func cancelOnce(_ task: URLSessionTask) {
        let cancelled = state.withLock { state -> Bool in
            defer { state.cancelRequested = true }
            return state.cancelRequested
        }
        guard !cancelled else { return }
        BlockingCall.run { task.cancel() }
    }

    private func finish(_ outcome: Outcome) {
        let continuation = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            guard state.finished == nil else { return nil }
            state.finished = outcome
            state.body = []
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: outcome)
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let http = response as? HTTPURLResponse else {
            fail(BoundedHTTPError(.badResponse, "not http"), cancelling: dataTask)
            completionHandler(.cancel)
            return
        }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        if let encoding = headers["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased(),
            !encoding.isEmpty, encoding != "identity"
        {
            fail(BoundedHTTPError(.unsupportedEncoding(encoding)), cancelling: dataTask)
            completionHandler(.cancel)
            return
        }
        let expected = response.expectedContentLength
        if expected > Int64(maximumBytes) {
            fail(BoundedHTTPError(.tooLarge(declared: expected)), cancelling: dataTask)
            completionHandler(.cancel)
            return
        }
        state.withLock { state in
            state.status = http.statusCode
            state.headers = headers
            state.expectedLength = expected
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let overLimit = state.withLock { state -> Bool in
            // After a failure or the outcome, blocks still queued by FoundationNetworking are dropped.
            guard state.failure == nil, state.finished == nil else { return false }
            guard data.count <= maximumBytes - state.body.count else {
                // Never append past the limit: record the failure and release what was kept, in one step.
                state.failure = BoundedHTTPError(.tooLarge(declared: nil))
                state.body = []
                return true
            }
            state.body.append(contentsOf: data)
            state.peak = max(state.peak, state.body.count)
            return false
        }
        if overLimit { fail(BoundedHTTPError(.tooLarge(declared: nil)), cancelling: dataTask) }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // Never follow a redirect: the 3xx answer itself completes the task.
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        let outcome = state.withLock { state -> Outcome in
            if let failure = state.failure { return .failure(failure) }
            // A body shorter than its Content-Length is a truncated answer, whatever error libcurl gave.
            if state.status != 0 && state.expectedLength >= 0 && Int64(state.body.count) < state.expectedLength {
                return .failure(
                    BoundedHTTPError(.truncated(received: state.body.count, expected: Int(state.expectedLength)))
                )
            }
            if let error { return .failure(BoundedHTTPDelegate.map(error)) }
            return .success(BoundedHTTPResponse(status: state.status, headers: state.headers, body: state.body))
        }
        finish(outcome)
    }

    /// Maps Foundation's error by code only: Foundation's descriptions may contain the URL.
    static func map(_ error: any Error) -> BoundedHTTPError {
        let code = (error as? URLError)?.code.rawValue ?? (error as NSError).code
        let detail = "url error \(code)"
        switch URLError.Code(rawValue: code) {
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet,
            .internationalRoamingOff, .dataNotAllowed, .callIsActive:
            return BoundedHTTPError(.cannotConnect, detail)
        case .timedOut:
            return BoundedHTTPError(.deadlineExceeded, detail)
        case .badServerResponse, .cannotParseResponse, .cannotDecodeRawData, .cannotDecodeContentData,
            .zeroByteResource, .unsupportedURL:
            return BoundedHTTPError(.badResponse, detail)
        case .cancelled:
            return BoundedHTTPError(.cancelled, detail)
        default:
            return BoundedHTTPError(.connectionFailed, detail)
        }
    }
}
