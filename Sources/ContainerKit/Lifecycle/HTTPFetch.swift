import ContainerKitHTTP
import Foundation

/// One container GET through ``BoundedHTTPRequest`` (size limit, overall deadline, no content encodings, no
/// redirects), mapped to ``ContainerFetchError``s whose messages show `shownURL` (a form of the URL without
/// secrets), never the transport's own descriptions.
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
    /// The longest the whole request may take.
    var timeout: Duration
    /// The clock of ``timeout`` when it is not the monotonic one the HTTP client's loop keeps.
    var deadlineClock: BoundedHTTPRequest.DeadlineClock?

    func run() async throws(ContainerFetchError) -> Answer {
        var request = BoundedHTTPRequest(
            url: url,
            maximumResponseBytes: maximumBytes,
            deadline: max(.milliseconds(1), timeout)
        )
        request.headers = headers.sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) }
        request.deadlineClock = deadlineClock
        do throws(BoundedHTTPError) {
            let response = try await request.send()
            return Answer(status: response.status, body: response.body, etag: response.header("ETag"))
        } catch {
            throw map(error)
        }
    }

    func map(_ error: BoundedHTTPError) -> ContainerFetchError {
        let detail = error.detail.isEmpty ? "" : " (\(error.detail))"
        switch error.kind {
        case .invalidURL:
            return ContainerFetchError(.invalidURL, "url '\(shownURL)' is not http or https with a host")
        case .cannotConnect:
            return ContainerFetchError(.noNetwork, "cannot connect to '\(shownURL)'\(detail)")
        case .connectionFailed:
            return ContainerFetchError(.networkError, "the connection to '\(shownURL)' failed\(detail)")
        case .truncated(let received, let expected):
            return ContainerFetchError(.networkError, "'\(shownURL)' sent \(received) of \(expected) bytes")
        case .tooLarge(let declared?):
            return ContainerFetchError(
                .tooLarge,
                "'\(shownURL)' declares \(declared) bytes, more than the limit of \(maximumBytes) bytes"
            )
        case .tooLarge(nil):
            return ContainerFetchError(.tooLarge, "'\(shownURL)' sent more than the limit of \(maximumBytes) bytes")
        case .unsupportedEncoding(let encoding):
            return ContainerFetchError(
                .badResponse,
                "'\(shownURL)' sent a '\(encoding)' encoded answer; only unencoded answers are accepted"
            )
        case .deadlineExceeded:
            return ContainerFetchError(
                .networkError,
                "'\(shownURL)' did not answer in full within \(Self.seconds(timeout.seconds)) seconds"
            )
        case .badResponse:
            return ContainerFetchError(.badResponse, "'\(shownURL)' sent an answer that is not http\(detail)")
        case .cancelled:
            return ContainerFetchError(.networkError, "the request to '\(shownURL)' was cancelled")
        }
    }

    /// `30`, `0.25`.
    static func seconds(_ value: TimeInterval) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
