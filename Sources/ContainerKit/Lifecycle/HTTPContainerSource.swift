import ContainerKitHTTP
public import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Fetches containers over HTTP(S): `{base}/r?id=<ID>` like GTM's container server, or a URL template
/// such as `https://cdn.example.com/gtm/{id}.json`.
///
/// Requests send `If-None-Match` when a cached version's entity tag is known and accept `304 Not Modified`.
/// Answers larger than ``maximumBytes`` are cut off and refused, answers with a content encoding (gzip, …)
/// are refused before their body is read, every request ends within ``timeout``; redirects are never followed, so the
/// configured host is the only one contacted. As a ``PreviewSource`` it fetches drafts from
/// `{base}/r?id=<ID>&gtm_auth=<token>&gtm_preview=<n>` (a template gets the two parameters appended).
///
/// ```swift
/// let source = try HTTPContainerSource(base: URL(string: "https://www.googletagmanager.com")!)
/// let result = try await source.fetch(id: "GTM-XXXX", ifNoneMatch: nil)
/// ```
public struct HTTPContainerSource: ContainerSource, PreviewSource, CustomStringConvertible {
    /// The answer size limit (default 8 MiB).
    public var maximumBytes: Int
    /// How long a request may take in all, from connecting to the last byte (default 30 seconds). A
    /// server that sends its answer a byte at a time is cut off when it passes.
    public var timeout: Duration

    private enum Endpoint: Sendable {
        case base(URL)
        case template(String)
    }

    private let endpoint: Endpoint
    /// The clock of ``timeout`` when it is not the monotonic one the HTTP client's loop keeps.
    private let deadlineClock: BoundedHTTPRequest.DeadlineClock?

    /// A source that fetches `{base}/r?id=<ID>`.
    /// - Parameters:
    ///   - base: the server, such as `https://www.googletagmanager.com`.
    ///   - maximumBytes: the answer size limit.
    ///   - timeout: how long a request may take in all.
    ///   - clock: the clock of `timeout`: the monotonic clock by default, kept by the HTTP client's loop; any
    ///     other (a test's `ManualClock`, which passes the deadline without waiting) is slept on beside each
    ///     request, in the fetching task.
    /// - Throws: ``ContainerFetchError/Code/invalidURL`` unless `base` is an http or https URL with a host
    ///   and without a query or fragment.
    public init<C: Clock>(
        base: URL,
        maximumBytes: Int = 8 * 1024 * 1024,
        timeout: Duration = .seconds(30),
        clock: C = ContinuousClock()
    ) throws(ContainerFetchError) where C.Duration == Duration {
        try HTTPContainerSource.check(base, shown: base.absoluteString)
        guard base.query == nil, base.fragment == nil else {
            throw ContainerFetchError(.invalidURL, "base url '\(base.absoluteString)' must not have a query")
        }
        self.endpoint = .base(base)
        self.maximumBytes = maximumBytes
        self.timeout = timeout
        self.deadlineClock = Self.deadlineClock(clock)
    }

    /// A source that fetches `template` with `{id}` replaced by the container ID.
    /// - Parameters:
    ///   - template: an http or https URL holding `{id}`.
    ///   - maximumBytes: the answer size limit.
    ///   - timeout: how long a request may take in all.
    ///   - clock: the clock of `timeout` (see ``init(base:maximumBytes:timeout:clock:)``).
    /// - Throws: ``ContainerFetchError/Code/invalidURL`` unless `template` holds `{id}` and makes an http or
    ///   https URL with a host.
    public init<C: Clock>(
        template: String,
        maximumBytes: Int = 8 * 1024 * 1024,
        timeout: Duration = .seconds(30),
        clock: C = ContinuousClock()
    ) throws(ContainerFetchError) where C.Duration == Duration {
        guard template.contains("{id}") else {
            throw ContainerFetchError(.invalidURL, "url template '\(template)' has no '{id}'")
        }
        let sample = template.replacingAll("{id}", with: "GTM-TEMPLATE")
        guard let url = URL(string: sample) else {
            throw ContainerFetchError(.invalidURL, "url template '\(template)' does not make a url")
        }
        try HTTPContainerSource.check(url, shown: template)
        self.endpoint = .template(template)
        self.maximumBytes = maximumBytes
        self.timeout = timeout
        self.deadlineClock = Self.deadlineClock(clock)
    }

    private static func deadlineClock<C: Clock>(_ clock: C) -> BoundedHTTPRequest.DeadlineClock?
    where C.Duration == Duration {
        clock is ContinuousClock ? nil : BoundedHTTPRequest.DeadlineClock(clock)
    }

    private static func check(_ url: URL, shown: String) throws(ContainerFetchError) {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw ContainerFetchError(.invalidURL, "url '\(shown)' is not http or https")
        }
        guard let host = url.host, !host.isEmpty else {
            throw ContainerFetchError(.invalidURL, "url '\(shown)' has no host")
        }
    }

    /// The base URL or template.
    public var description: String {
        switch endpoint {
        case .base(let url): return url.absoluteString
        case .template(let template): return template
        }
    }

    // MARK: Fetching

    public func fetch(id: String, ifNoneMatch etag: String?) async throws(ContainerFetchError)
        -> ContainerFetchResult
    {
        let url = try makeURL(id: id, preview: nil)
        var headers = ["Accept": "application/json, application/x-plist, */*"]
        if let etag { headers["If-None-Match"] = etag }
        let shown = url.absoluteString
        let answer = try await HTTPFetch(
            url: url,
            shownURL: shown,
            headers: headers,
            maximumBytes: maximumBytes,
            timeout: timeout,
            deadlineClock: deadlineClock
        ).run()
        switch answer.status {
        case 200:
            return .container(bytes: answer.body, etag: answer.etag)
        case 304 where etag != nil:
            return .notModified
        default:
            throw HTTPContainerSource.statusError(answer.status, id: id, shownURL: shown)
        }
    }

    public func fetchDraft(_ request: PreviewRequest) async throws(ContainerFetchError) -> [UInt8] {
        let url = try makeURL(id: request.containerID, preview: request)
        var placeholder = request
        placeholder.authToken = "REDACTED-TOKEN"
        let shown = try makeURL(id: request.containerID, preview: placeholder).absoluteString
            .replacingAll("REDACTED-TOKEN", with: "<redacted>")
        let answer = try await HTTPFetch(
            url: url,
            shownURL: shown,
            headers: ["Accept": "application/json, application/x-plist, */*"],
            maximumBytes: maximumBytes,
            timeout: timeout,
            deadlineClock: deadlineClock
        ).run()
        guard answer.status == 200 else {
            throw HTTPContainerSource.statusError(answer.status, id: request.containerID, shownURL: shown)
        }
        return answer.body
    }

    /// The URL for `id`, with the preview's `gtm_auth` and `gtm_preview` when given (and `gtm_debug=x` in
    /// debug mode, as GTM's server expects it).
    func makeURL(id: String, preview: PreviewRequest?) throws(ContainerFetchError) -> URL {
        guard ContainerLoader.isContainerID(id) else {
            throw ContainerFetchError(.invalidContainerID, "'\(id)' is not a container id (GTM-XXXX)")
        }
        var items: [URLQueryItem] = []
        var components: URLComponents?
        switch endpoint {
        case .base(let base):
            components = URLComponents(url: base, resolvingAgainstBaseURL: false)
            var path = components?.path ?? ""
            while path.hasSuffix("/") { path.removeLast() }
            components?.path = path + "/r"
            items.append(URLQueryItem(name: "id", value: id))
        case .template(let template):
            components = URLComponents(string: template.replacingAll("{id}", with: id))
            items = components?.queryItems ?? []
        }
        if let preview {
            items.append(URLQueryItem(name: "gtm_auth", value: preview.authToken))
            items.append(URLQueryItem(name: "gtm_preview", value: preview.previewNumber))
            if preview.debug { items.append(URLQueryItem(name: "gtm_debug", value: "x")) }
        }
        if !items.isEmpty { components?.queryItems = items }
        guard let url = components?.url else {
            throw ContainerFetchError(.invalidURL, "cannot build a url for '\(id)' from '\(description)'")
        }
        return url
    }

    static func statusError(_ status: Int, id: String, shownURL: String) -> ContainerFetchError {
        let hint: String
        switch status {
        case 404: hint = "; make sure the container id '\(id)' is correct"
        case 401, 403: hint = "; the server refused the request"
        case 300..<400: hint = "; redirects are not followed"
        case 304: hint = " to a request that was not conditional"
        default: hint = ""
        }
        return ContainerFetchError(.httpStatus, "'\(shownURL)' answered \(status)\(hint)", status: status)
    }
}
