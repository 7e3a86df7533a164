package import Foundation

/// One HTTP request whose cost is bounded whatever the server does: the answer's body may hold at most
/// ``maximumResponseBytes`` bytes (the memory it takes stays near that), and the whole exchange — name
/// lookup aside, connecting, sending, waiting and reading — ends by ``deadline``.
///
/// Answers are asked for and accepted only without a content encoding (`Accept-Encoding: identity`): an
/// answer with `Content-Encoding: gzip` (or any encoding but `identity`) is refused before its body is read,
/// so a small compressed body can never inflate to gigabytes. Redirects are never followed (a 3xx answer is
/// returned as it is), nothing is cached, and no cookies are kept.
///
/// `http://` URLs are served by a small HTTP/1.1 client (``HTTPClient``: non-blocking sockets on one I/O
/// thread its `run()` owns) that reads the body in 16 KiB steps and stops at the limit (it never reads more
/// than the limit plus one step). `https://` URLs go through
/// FoundationNetworking, with the same encoding refusal, limit and deadline: the body it keeps never exceeds
/// the limit (the block that would pass it is dropped and the transfer cancelled at once), but blocks that
/// libcurl has already read and queued for delivery before the cancellation takes effect (16 KiB each) are
/// held by FoundationNetworking until they are dropped; see `URLSessionHTTPTransport`.
///
/// The container sources use it, and a delivery sink can:
///
/// ```swift
/// var request = BoundedHTTPRequest(url: url, maximumResponseBytes: 64 * 1024, deadline: .seconds(10))
/// request.method = "POST"
/// request.headers = [("Content-Type", "application/json"), ("Authorization", "Bearer \(key)")]
/// request.body = Array(json.utf8)
/// let response = try await request.send()   // throws BoundedHTTPError
/// ```
package struct BoundedHTTPRequest: Sendable {
    /// `GET` (the default), `POST`, ….
    package var method: String = "GET"
    /// An `http` or `https` URL with a host.
    package var url: URL
    /// Header fields to send. `Host`, `Content-Length`, `Connection` and `Accept-Encoding` are set by the
    /// client and ignored here.
    package var headers: [(name: String, value: String)] = []
    /// The request body (sent with a `Content-Length`; empty sends none for `GET`).
    package var body: [UInt8] = []
    /// The most body bytes accepted; a larger answer (declared or sent) fails with
    /// ``BoundedHTTPError/Kind/tooLarge(declared:)``.
    package var maximumResponseBytes: Int
    /// The longest the whole exchange may take; when it passes the request fails with
    /// ``BoundedHTTPError/Kind/deadlineExceeded``.
    package var deadline: Duration
    /// The clock ``deadline`` runs on; `nil`, the default, is the monotonic clock, kept by the I/O loop of the
    /// ``HTTPClient`` that serves the request (no timer task). A test gives its manual clock here and passes
    /// the deadline without waiting: the request then waits on that clock alone (see ``DeadlineClock``).
    package var deadlineClock: DeadlineClock?

    /// The clock a request's one deadline runs on when it is not the monotonic one: the caller's task
    /// sleeps on it beside the exchange (a child task of that request, ended with it), and the exchange is
    /// ended when the sleep ends first; the I/O loop then keeps no deadline for the request.
    package struct DeadlineClock: Sendable {
        /// Sleeps `duration` on the clock; throws when the calling task is cancelled.
        let sleep: @Sendable (Duration) async throws -> Void

        /// Deadlines on `clock`.
        package init<C: Clock>(_ clock: C) where C.Duration == Duration {
            sleep = { duration in try await clock.sleep(until: clock.now.advanced(by: duration), tolerance: nil) }
        }
    }

    /// A `GET` of `url`.
    package init(url: URL, maximumResponseBytes: Int, deadline: Duration) {
        self.url = url
        self.maximumResponseBytes = maximumResponseBytes
        self.deadline = deadline
    }

    /// Sends the request and reads the whole answer within the limits and its one deadline. Cancelling the
    /// calling task ends the exchange with ``BoundedHTTPError/Kind/cancelled``.
    ///
    /// - Parameter client: the running ``HTTPClient`` whose I/O thread and kept connections serve the
    ///   request; `nil`, the default (or a client whose `run()` is not running), serves it with a client of
    ///   its own for this request alone (its own connection, closed after the answer).
    package func send(through client: HTTPClient? = nil) async throws(BoundedHTTPError) -> BoundedHTTPResponse {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = url.host, !host.isEmpty
        else { throw BoundedHTTPError(.invalidURL, "not an http or https url with a host") }
        guard maximumResponseBytes >= 0, deadline > .zero else {
            throw BoundedHTTPError(.deadlineExceeded, "no time left")
        }
        guard let client else { return try await HTTPClient.sendAlone(self) }
        return try await client.send(self)
    }

    /// The header fields this client sends, with the ones it owns removed.
    var callerHeaders: [(name: String, value: String)] {
        let owned: Set<String> = ["host", "content-length", "connection", "accept-encoding", "transfer-encoding"]
        return headers.filter { !owned.contains($0.name.lowercased()) }
    }
}

/// A complete answer to a ``BoundedHTTPRequest``.
package struct BoundedHTTPResponse: Sendable {
    /// The status code (a 3xx is returned as it is: redirects are not followed).
    package var status: Int
    /// The header fields, names lower-cased; repeated fields are joined with `, `.
    package var headers: [String: String]
    /// The body, at most the request's ``BoundedHTTPRequest/maximumResponseBytes``.
    package var body: [UInt8]

    /// The value of header `name` (any case).
    package func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Why a ``BoundedHTTPRequest`` failed. ``detail`` says more (an errno or URL error code) and never holds
/// the URL, so callers can show their own redacted form of it.
package struct BoundedHTTPError: Error, Sendable, Equatable {
    /// What went wrong.
    package enum Kind: Sendable, Equatable {
        /// The URL is not `http`/`https` with a host.
        case invalidURL
        /// The host could not be found or reached (nothing was sent).
        case cannotConnect
        /// The connection failed part way (reset, closed early, TLS failure).
        case connectionFailed
        /// The body ended before its declared length.
        case truncated(received: Int, expected: Int)
        /// The body is larger than the limit; `declared` is the `Content-Length` when that said so.
        case tooLarge(declared: Int64?)
        /// The answer has a content or transfer encoding this client refuses (named in lower case).
        case unsupportedEncoding(String)
        /// The deadline passed before the answer was complete.
        case deadlineExceeded
        /// What the server sent is not an HTTP answer.
        case badResponse
        /// The calling task was cancelled.
        case cancelled
    }

    /// What went wrong.
    package var kind: Kind
    /// A short lowercase detail, without the URL (for example `errno 111`).
    package var detail: String

    /// Creates an error.
    package init(_ kind: Kind, _ detail: String = "") {
        self.kind = kind
        self.detail = detail
    }
}
