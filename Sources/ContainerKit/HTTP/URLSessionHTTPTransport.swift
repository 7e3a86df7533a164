import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `https://` for ``BoundedHTTPRequest``, through FoundationNetworking: no redirects, no cache, no cookies;
/// an answer with a content encoding is refused when its header arrives (FoundationNetworking holds the
/// transfer until the delegate decides, so no compressed byte is inflated); the body is cut at the limit and
/// the transfer cancelled; a timer cancels it at the deadline.
enum URLSessionHTTPTransport {
    static func send(_ request: BoundedHTTPRequest) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
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
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = seconds
        configuration.timeoutIntervalForResource = seconds
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        let delegate = BoundedHTTPDelegate(maximumBytes: request.maximumResponseBytes)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: urlRequest)
        let deadline = request.deadline
        let timer = Task {
            try await Task.sleep(for: deadline)
            delegate.fail(BoundedHTTPError(.deadlineExceeded), cancelling: task)
        }
        defer { timer.cancel() }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                delegate.start(task, continuation: continuation)
            }
        } onCancel: {
            delegate.fail(BoundedHTTPError(.cancelled), cancelling: task)
        }
        return try outcome.get()
    }
}

/// Collects one task's answer within the limits.
private final class BoundedHTTPDelegate: NSObject, URLSessionDataDelegate, Sendable {
    typealias Outcome = Result<BoundedHTTPResponse, BoundedHTTPError>

    private struct State {
        var body: [UInt8] = []
        var status = 0
        var headers: [String: String] = [:]
        var expectedLength: Int64 = -1
        var failure: BoundedHTTPError?
        var continuation: CheckedContinuation<Outcome, Never>?
        var finished: Outcome?
    }

    private let maximumBytes: Int
    private let state = Mutex(State())

    init(maximumBytes: Int) {
        self.maximumBytes = maximumBytes
    }

    func start(_ task: URLSessionDataTask, continuation: CheckedContinuation<Outcome, Never>) {
        let finished = state.withLock { state -> Outcome? in
            if let finished = state.finished { return finished }
            state.continuation = continuation
            return nil
        }
        if let finished {
            continuation.resume(returning: finished)
        } else {
            task.resume()
        }
    }

    /// Records the first failure, cancels the task and answers at once (the delegate queue may still hold
    /// data callbacks; they are ignored).
    func fail(_ error: BoundedHTTPError, cancelling task: URLSessionTask) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
        task.cancel()
        finish(.failure(error))
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
            guard state.failure == nil, state.finished == nil else { return false }
            guard state.body.count + data.count <= maximumBytes else { return true }
            state.body.append(contentsOf: data)
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

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
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
