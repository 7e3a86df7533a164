import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One HTTP GET with a size limit, no redirects and no caching, mapped to ``ContainerFetchError``s whose
/// messages show `shownURL` (a form of the URL without secrets), never Foundation's own descriptions.
struct HTTPFetch: Sendable {
    /// What the server answered.
    struct Answer: Sendable {
        var status: Int
        var body: [UInt8]
        var etag: String?
    }

    var url: URL
    /// The URL as messages show it (auth token redacted).
    var shownURL: String
    var headers: [String: String]
    var maximumBytes: Int
    var timeout: TimeInterval

    func run() async throws(ContainerFetchError) -> Answer {
        // FoundationNetworking counts request timeouts in whole seconds (0.5 would mean no wait at all).
        let timeout = max(1, self.timeout.rounded(.up))
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "GET"
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let configuration = URLSessionConfiguration.ephemeral
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        let delegate = HTTPFetchDelegate(maximumBytes: maximumBytes, shownURL: shownURL)
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request)
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                delegate.start(task, continuation: continuation)
            }
        } onCancel: {
            task.cancel()
        }
        return try outcome.get()
    }
}

/// Collects one task's answer, enforcing the size limit and refusing redirects.
private final class HTTPFetchDelegate: NSObject, URLSessionDataDelegate, Sendable {
    typealias Outcome = Result<HTTPFetch.Answer, ContainerFetchError>

    private struct State {
        var body: [UInt8] = []
        var status = 0
        var etag: String?
        var expectedLength: Int64 = -1
        var failure: ContainerFetchError?
        var continuation: CheckedContinuation<Outcome, Never>?
        var finished: Outcome?
    }

    private let maximumBytes: Int
    private let shownURL: String
    private let state = Mutex(State())

    init(maximumBytes: Int, shownURL: String) {
        self.maximumBytes = maximumBytes
        self.shownURL = shownURL
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

    private func finish(_ outcome: Outcome) {
        let continuation = state.withLock { state -> CheckedContinuation<Outcome, Never>? in
            guard state.finished == nil else { return nil }
            state.finished = outcome
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume(returning: outcome)
    }

    private func fail(_ error: ContainerFetchError, cancelling task: URLSessionTask) {
        state.withLock { state in
            if state.failure == nil { state.failure = error }
        }
        task.cancel()
    }

    func urlSession(
        _ session: URLSession,
        dataTask: URLSessionDataTask,
        didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        guard let http = response as? HTTPURLResponse else {
            fail(ContainerFetchError(.badResponse, "'\(shownURL)' did not answer with http"), cancelling: dataTask)
            completionHandler(.cancel)
            return
        }
        let expected = response.expectedContentLength
        if expected > Int64(maximumBytes) {
            fail(tooLarge("declares \(expected) bytes"), cancelling: dataTask)
            completionHandler(.cancel)
            return
        }
        // With a content encoding, Content-Length counts compressed bytes and says nothing about truncation.
        let encoding = http.value(forHTTPHeaderField: "Content-Encoding")?.lowercased() ?? "identity"
        state.withLock { state in
            state.status = http.statusCode
            state.etag = http.value(forHTTPHeaderField: "ETag")
            state.expectedLength = encoding == "identity" ? expected : -1
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let overLimit = state.withLock { state -> Bool in
            guard state.failure == nil else { return false }
            guard state.body.count + data.count <= maximumBytes else { return true }
            state.body.append(contentsOf: data)
            return false
        }
        if overLimit { fail(tooLarge("sent more"), cancelling: dataTask) }
    }

    func urlSession(
        _ session: URLSession,
        task: URLSessionTask,
        willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest,
        completionHandler: @escaping (URLRequest?) -> Void
    ) {
        // Never follow a redirect: the configured host is the only one contacted. The 3xx answer itself
        // completes the task and is reported as an unexpected status.
        completionHandler(nil)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let outcome = state.withLock { state -> Outcome in
            if let failure = state.failure { return .failure(failure) }
            // A body shorter than its Content-Length is a truncated answer, whatever error libcurl gave.
            if state.status != 0 && state.expectedLength >= 0 && Int64(state.body.count) < state.expectedLength {
                return .failure(
                    ContainerFetchError(
                        .networkError,
                        "'\(shownURL)' sent \(state.body.count) of \(state.expectedLength) bytes"
                    )
                )
            }
            if let error { return .failure(HTTPFetchDelegate.map(error, shownURL: shownURL)) }
            return .success(HTTPFetch.Answer(status: state.status, body: state.body, etag: state.etag))
        }
        finish(outcome)
    }

    private func tooLarge(_ what: String) -> ContainerFetchError {
        ContainerFetchError(.tooLarge, "'\(shownURL)' \(what) than the limit of \(maximumBytes) bytes")
    }

    /// Maps Foundation's error to ours by code only: Foundation's descriptions may contain the URL.
    static func map(_ error: any Error, shownURL: String) -> ContainerFetchError {
        let code = (error as? URLError)?.code.rawValue ?? (error as NSError).code
        switch URLError.Code(rawValue: code) {
        case .cannotConnectToHost, .cannotFindHost, .dnsLookupFailed, .notConnectedToInternet,
            .internationalRoamingOff, .dataNotAllowed, .callIsActive:
            return ContainerFetchError(.noNetwork, "cannot connect to '\(shownURL)' (url error \(code))")
        case .timedOut:
            return ContainerFetchError(.networkError, "'\(shownURL)' timed out")
        case .networkConnectionLost, .resourceUnavailable, .secureConnectionFailed, .serverCertificateUntrusted,
            .serverCertificateHasBadDate, .serverCertificateHasUnknownRoot, .serverCertificateNotYetValid:
            return ContainerFetchError(.networkError, "the connection to '\(shownURL)' failed (url error \(code))")
        case .badServerResponse, .cannotParseResponse, .cannotDecodeRawData, .cannotDecodeContentData,
            .zeroByteResource, .unsupportedURL:
            return ContainerFetchError(
                .badResponse,
                "'\(shownURL)' sent an answer that is not http (url error \(code))"
            )
        case .cancelled:
            return ContainerFetchError(.networkError, "the request to '\(shownURL)' was cancelled")
        default:
            return ContainerFetchError(.unknown, "the request to '\(shownURL)' failed (url error \(code))")
        }
    }
}
