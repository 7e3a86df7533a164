public import ContainerKit
import ContainerKitDelivery
import ContainerKitHTTP
public import Foundation
import Synchronization

/// Delivers records to Braze's REST API, `POST <endpoint>/users/track`, authenticated with
/// `Authorization: Bearer <REST API key>`: the `/users/track` ``AnalyticsDestination``.
///
/// ```swift
/// let braze = BrazeUsersTrackDestination(endpoint: URL(string: "https://rest.iad-01.braze.com")!, apiKey: key)
/// let pipeline = DeliveryPipeline.inMemory(destination: braze)   // or .durable(directory:destination:)
/// BrazeTagProvider(sink: pipeline).register(on: tagManager)
/// try await pipeline.run()                                        // runs braze.run() too (its HTTP client)
/// ```
///
/// ## Requests
/// A batch is grouped, in order, into `attributes`, `events` and `purchases` objects (see ``ObjectLimit``;
/// at most 75 objects per request by default, or 75 of each with ``ObjectLimit/legacy``), sent one
/// request at a time. Times are ISO-8601 with milliseconds, UTC. A `change_user` record becomes an
/// attributes object `{"external_id": "<new id>"}`, which creates the identified profile. Records without
/// an identity cannot be sent: they are rejected ("without a user identity").
///
/// An `identify` record (``AnalyticsRecord/Payload/identify(externalID:aliasName:aliasLabel:)``, made by
/// the provider when a session whose records went to a user alias gets its `external_id`) is not a
/// `/users/track` object: it is sent to `POST <endpoint>/users/identify` as `{"aliases_to_identify":
/// [{"external_id", "user_alias"}], "merge_behavior": "merge"}` (at most 50 aliases a request, Braze's limit),
/// in the batch's order — after the `/users/track` request of the records before it (Braze merges what the
/// alias-only profile holds at that moment), and a retryable failure of that request holds it back with
/// it. The key then also needs the `users.identify` permission. Identifying an alias again is harmless:
/// once merged, the alias-only profile is gone, and Braze has nothing left to merge.
///
/// ## One attempt, bounded
/// Each request makes one attempt — the front in front of the destination owns retries. Each request has
/// one wall-clock deadline (``Configuration/requestTimeout``, whatever the server trickles), kept by the
/// HTTP client's I/O loop, and its answer
/// is read with a hard cap (``Configuration/maximumResponseBytes``, 64 KiB; `Accept-Encoding: identity`
/// is asked for, an encoded answer is refused and a larger or endless answer is cut off), so memory and
/// time stay bounded whatever the server sends. Requests go through the package's one bounded HTTP client
/// (ContainerKit's `HTTPClient`, the one container fetches use), and keep their connections for the
/// next request: a busy queue does not connect — or shake hands over TLS — per request.
///
/// ## Running
/// ``run()`` runs the destination's HTTP client: one I/O thread, owned by that `run()`, does the I/O of
/// every request (non-blocking sockets; no thread or timer task per request). The fronts run it beside
/// their delivery loop, so a destination given to a front needs nothing more. A ``deliver(_:)`` made while
/// it is not running still works, on a connection of its own for each request.
///
/// ## Outcomes
/// 2xx accepts the request's records (a 2xx with `errors`, a partial success, adds a warning). 429 (with
/// its `Retry-After`), 408, 5xx, timeouts, broken connections and unreadable or oversized answers make
/// the request's records — and those of the batch's later requests, which are not sent — retryable. A 400
/// (also 413 and 422: the payload itself) rejects the request's records with Braze's `message` and
/// `errors`; later requests are sent. An answer that refuses the *request* — 401 or 403 (the key), 404, a
/// redirect (never followed), any other status — drops nothing: the records stay retryable with
/// ``DeliveryError/Code-swift.struct/requestRefused`` and a pause of ``Configuration/refusedRequestPause``.
public final class BrazeUsersTrackDestination: AnalyticsDestination {
    /// How many objects one request may carry.
    public enum ObjectLimit: Sendable, Hashable {
        /// At most this many objects across `attributes`, `events` and `purchases` (Braze's rate-limit reference
        /// allows 75; contracts on Monthly Active Users CY 24-25 have limits of their own).
        case total(Int)
        /// At most this many objects in each of `attributes`, `events` and `purchases`.
        case perCategory(Int)

        /// The limit of accounts on Braze's legacy rate limits: 75 attributes, 75 events and 75 purchases per
        /// request.
        public static let legacy = ObjectLimit.perCategory(75)

        /// The largest number either limit may name: Braze refuses requests past 75 objects of a kind.
        public static let largest = 75

        /// Reads a limit as a command line gives it: `<n>` for ``total(_:)`` (`50`), `<n>-each` for
        /// ``perCategory(_:)`` (`75-each`, Braze's legacy limit of 75 attributes, 75 events and 75 purchases),
        /// with `n` from 1 to 75.
        /// - Throws: ``ContainerError`` with ``ContainerError/Code/invalidObjectLimit`` saying what is wrong.
        public init(parsing text: String) throws(ContainerError) {
            let each = text.hasSuffix("-each")
            let digits = each ? text.dropLast(5) : Substring(text)
            guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let count = Int(digits),
                (1...Self.largest).contains(count)
            else {
                throw ContainerError(
                    .invalidObjectLimit,
                    "'\(text)' is not an object limit: give 1 to \(Self.largest) objects per request (as in '50'), "
                        + "or per kind of object (as in '75-each')"
                )
            }
            self = each ? .perCategory(count) : .total(count)
        }

        /// The most records one request can carry.
        var maximumRecords: Int {
            switch self {
            case .total(let n): return max(1, n)
            case .perCategory(let n): return max(1, n) * 3
            }
        }
    }

    /// Tunables of the destination.
    public struct Configuration: Sendable {
        /// Objects per request (`.total(75)`).
        public var objectLimit: ObjectLimit = .total(75)
        /// The wall-clock deadline of one request, from sending to the last byte of the answer (30 s).
        public var requestTimeout: Duration = .seconds(30)
        /// The most bytes of an answer read (64 KiB); a longer answer fails the request (retryable).
        public var maximumResponseBytes = 64 << 10
        /// Add `"_update_existing_only": false` to objects identified by a user alias, so Braze creates
        /// alias-only profiles (Braze otherwise only updates existing ones) (`true`).
        public var createsAliasOnlyProfiles = true
        /// How long delivery pauses after Braze refused a request (401, 403, 404, a redirect) before it
        /// tries again (60 s): the records are kept; only a change of key, permission or endpoint helps.
        public var refusedRequestPause: Duration = .seconds(60)

        /// The defaults, with any of the common settings changed.
        public init(objectLimit: ObjectLimit = .total(75), requestTimeout: Duration = .seconds(30)) {
            self.objectLimit = objectLimit
            self.requestTimeout = requestTimeout
        }
    }

    /// Counters for monitoring and tests.
    public struct Statistics: Sendable, Hashable {
        /// HTTP requests made.
        public var requests = 0
        /// Requests Braze accepted (2xx).
        public var acceptedRequests = 0
        /// Objects in accepted requests (a `/users/identify` request's aliases included).
        public var acceptedObjects = 0
        /// `/users/identify` requests Braze accepted.
        public var acceptedIdentifyRequests = 0
        /// Records rejected: refused by Braze, or without an identity.
        public var rejectedRecords = 0
        /// Requests that failed in a retryable way.
        public var failedRequests = 0
        /// Requests Braze refused as requests (401, 403, 404, a redirect): their records were kept.
        public var refusedRequests = 0
    }

    /// Braze's REST endpoint (for example `https://rest.iad-01.braze.com`); requests go to
    /// `<endpoint>/users/track` (``usersTrackURL``). Read one a person typed with ``restEndpoint(parsing:)``.
    public let endpoint: URL
    /// Where the `/users/track` requests go.
    public var usersTrackURL: URL { url }
    /// The destination's tunables.
    public let configuration: Configuration
    private let apiKey: String
    private let url: URL
    private let identifyURL: URL
    private let batcher: BrazeUsersTrackBatcher
    private let counters = Mutex(Statistics())
    /// ``Statistics/requests``, counted as each request goes out without taking the counters' lock (which its
    /// outcome takes).
    private let requestCount = Atomic<Int>(0)
    /// The HTTP client: its I/O thread (run by ``run()``) and the connections requests keep for the next one.
    private let client = HTTPClient()

    /// The clock of request deadlines when it is not the monotonic one the HTTP client's loop keeps.
    private let deadlineClock: BoundedHTTPRequest.DeadlineClock?

    /// Creates a destination (it starts nothing: ``run()`` runs its HTTP client, ``deliver(_:)`` sends).
    /// - Parameters:
    ///   - endpoint: Braze's REST endpoint for the workspace.
    ///   - apiKey: a REST API key with the `users.track` permission.
    ///   - configuration: request limits.
    public convenience init(endpoint: URL, apiKey: String, configuration: Configuration = Configuration()) {
        self.init(endpoint: endpoint, apiKey: apiKey, configuration: configuration, deadlineClock: nil)
    }

    /// Creates a destination whose request deadlines run on `clock` (a test's manual clock passes them
    /// without waiting); each request's one deadline is then a sleep on `clock` in the delivering task
    /// instead of the HTTP client's loop. `ContinuousClock` is the default behaviour.
    /// - Parameters:
    ///   - endpoint: Braze's REST endpoint for the workspace.
    ///   - apiKey: a REST API key with the `users.track` permission.
    ///   - configuration: request limits.
    ///   - clock: the clock of ``Configuration/requestTimeout``.
    public convenience init<C: Clock>(
        endpoint: URL,
        apiKey: String,
        configuration: Configuration = Configuration(),
        clock: C
    ) where C.Duration == Duration {
        self.init(
            endpoint: endpoint,
            apiKey: apiKey,
            configuration: configuration,
            deadlineClock: clock is ContinuousClock ? nil : BoundedHTTPRequest.DeadlineClock(clock)
        )
    }

    private init(
        endpoint: URL,
        apiKey: String,
        configuration: Configuration,
        deadlineClock: BoundedHTTPRequest.DeadlineClock?
    ) {
        self.endpoint = endpoint
        self.apiKey = apiKey
        self.configuration = configuration
        self.url = Self.apiURL("users/track", under: endpoint)
        self.identifyURL = Self.apiURL("users/identify", under: endpoint)
        self.batcher = BrazeUsersTrackBatcher(
            limit: configuration.objectLimit,
            createsAliasOnlyProfiles: configuration.createsAliasOnlyProfiles
        )
        self.deadlineClock = deadlineClock
    }

    /// Runs the destination's HTTP client — its one I/O thread — until the calling task is cancelled; then
    /// requests in flight end (retryable, `shutDown`) and the kept connections close. The fronts run it.
    public func run() async throws {
        try await client.run()
    }

    /// Returns once ``run()`` started its HTTP client (or the client stopped, or the calling task is
    /// cancelled): from then on requests share its kept connections.
    package func started() async {
        await client.started()
    }

    /// Counters for monitoring and tests.
    public var statistics: Statistics {
        var statistics = counters.withLock { $0 }
        statistics.requests = requestCount.load(ordering: .relaxed)
        return statistics
    }

    /// One request's worth of records, so a front repeats as little as possible after a failure.
    public var preferredBatchSize: Int { configuration.objectLimit.maximumRecords }

    /// Sends `records` in as many requests as the object limit needs, one attempt each; stops at the first
    /// retryable failure (that request's records and the rest are retryable).
    public func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        await deliver(records, json: nil)
    }

    /// Like ``deliver(_:)``; a custom event's object is copied from its JSON in `json` (the bytes its
    /// front encoded when it was enqueued) instead of being encoded again.
    public func deliver(_ records: [AnalyticsRecord], json: RecordsJSON?) async -> DeliveryResult {
        let (requests, skipped) = batcher.requests(for: records, json: json)
        var result = DeliveryResult()
        if !skipped.isEmpty {
            counters.withLock { $0.rejectedRecords += skipped.count }
            let ids = skipped.prefix(3).map { "'\($0.id)'" }.joined(separator: ", ")
            result.rejected.append(
                .init(
                    records: skipped,
                    error: DeliveryError(
                        .rejected,
                        "\(skipped.count) records without a user identity (\(ids)); "
                            + "set one with BrazeTagProvider.setUser"
                    )
                )
            )
        }
        for (index, request) in requests.enumerated() {
            let outcome = await send(request)
            result.merge(outcome)
            if outcome.retryError != nil {
                for later in requests[(index + 1)...] { result.retryable += later.records }
                break
            }
        }
        return result
    }

    private func send(_ request: BrazeUsersTrackBatcher.Request) async -> DeliveryResult {
        var http = BoundedHTTPRequest(
            url: request.endpoint == .identify ? identifyURL : url,
            maximumResponseBytes: max(0, configuration.maximumResponseBytes),
            deadline: configuration.requestTimeout
        )
        http.deadlineClock = deadlineClock
        http.method = "POST"
        http.headers = [
            ("Content-Type", "application/json"), ("Accept", "application/json"), ("Authorization", "Bearer \(apiKey)"),
        ]
        http.body = request.body
        requestCount.add(1, ordering: .relaxed)
        let response: BoundedHTTPResponse
        switch await exchange(http) {
        case .success(let answer):
            response = answer
        case .failure(let error):
            counters.withLock { $0.failedRequests += 1 }
            return .retry(request.records, error)
        }
        let body = response.body
        let status = response.status
        let answer = Self.parseAnswer(body)
        switch status {
        case 200..<300:
            counters.withLock {
                $0.acceptedRequests += 1
                $0.acceptedObjects += request.objectCount
                if request.endpoint == .identify { $0.acceptedIdentifyRequests += 1 }
            }
            var result = DeliveryResult.accepted(request.records)
            if !answer.errors.isEmpty {
                result.warnings.append(
                    "braze accepted \(request.objectCount) objects with errors: "
                        + answer.errors.joined(separator: ", ")
                )
            }
            return result
        case 429:
            counters.withLock { $0.failedRequests += 1 }
            let header = response.header("Retry-After")
            let retryAfter = header.flatMap { DeliveryRetryPolicy.retryAfterSeconds($0, now: Date()) }.map {
                Duration.milliseconds(Int64((min($0, 86_400) * 1000).rounded(.up)))
            }
            return .retry(
                request.records,
                DeliveryError(
                    .rateLimited,
                    "braze rate-limited the request (http 429): '\(answer.message)'",
                    status: status,
                    errors: answer.errors,
                    retryAfter: retryAfter
                )
            )
        case 408, 500..<600:
            counters.withLock { $0.failedRequests += 1 }
            return .retry(
                request.records,
                DeliveryError(
                    .serverError,
                    "braze answered http \(status): '\(answer.message)'",
                    status: status,
                    errors: answer.errors
                )
            )
        case 400, 413, 422:
            counters.withLock { $0.rejectedRecords += request.records.count }
            let details = answer.errors.isEmpty ? "" : "; errors: " + answer.errors.joined(separator: ", ")
            return .rejected(
                request.records,
                DeliveryError(
                    .rejected,
                    "braze rejected \(request.objectCount) objects (http \(status)): '\(answer.message)'\(details)",
                    status: status,
                    errors: answer.errors
                )
            )
        default:
            // 401, 403 (the key), 404 and redirects (the endpoint): nothing is wrong with the records.
            counters.withLock { $0.refusedRequests += 1 }
            let location = response.header("Location").map { " to '\($0)'" } ?? ""
            let reason: String
            switch status {
            case 401, 403:
                reason =
                    "check the rest api key and its \(request.endpoint == .identify ? "users.identify" : "users.track") permission"
            case 300..<400: reason = "a redirect\(location) is never followed: fix the endpoint"
            default: reason = "check the endpoint"
            }
            return .retry(
                request.records,
                DeliveryError(
                    .requestRefused,
                    "braze refused the request (http \(status)): '\(answer.message)'; \(reason); "
                        + "the records are kept and delivery pauses",
                    status: status,
                    errors: answer.errors,
                    retryAfter: configuration.refusedRequestPause
                )
            )
        }
    }

    /// Sends one request: the client bounds the answer's size and keeps the request's one deadline.
    private func exchange(_ http: BoundedHTTPRequest) async -> Result<BoundedHTTPResponse, DeliveryError> {
        do throws(BoundedHTTPError) {
            return .success(try await http.send(through: client))
        } catch {
            return .failure(Self.deliveryError(error, limit: http.maximumResponseBytes, deadline: http.deadline))
        }
    }

    /// The pipeline's reading of a client failure: a timeout, a cancellation (shutdown) or a transport
    /// failure (retryable).
    static func deliveryError(_ error: BoundedHTTPError, limit: Int, deadline: Duration) -> DeliveryError {
        let detail = error.detail.isEmpty ? "" : " (\(error.detail))"
        switch error.kind {
        case .deadlineExceeded:
            return DeliveryError(.timeout, "no complete answer within the \(deadline) deadline")
        case .cancelled:
            return DeliveryError(.shutDown, "braze request cancelled")
        case .tooLarge(let declared?):
            return DeliveryError(
                .transport,
                "the answer declares \(declared) bytes, larger than \(limit) bytes; it was not read"
            )
        case .tooLarge(nil):
            return DeliveryError(.transport, "the answer is larger than \(limit) bytes; it was cut off")
        case .unsupportedEncoding(let encoding):
            return DeliveryError(
                .transport,
                "the answer is '\(encoding)' encoded; only unencoded answers are accepted"
            )
        case .truncated(let received, let expected):
            return DeliveryError(.transport, "the answer ended after \(received) of \(expected) bytes")
        case .badResponse:
            return DeliveryError(.transport, "the server sent no http answer\(detail)")
        case .cannotConnect:
            return DeliveryError(.transport, "cannot connect to braze\(detail)")
        case .connectionFailed:
            return DeliveryError(.transport, "the connection to braze failed\(detail)")
        case .invalidURL:
            return DeliveryError(.transport, "the endpoint is not an http or https url with a host")
        }
    }

    /// Braze's `message` and `errors` (each as compact JSON, or a string as itself).
    private static func parseAnswer(_ data: [UInt8]) -> (message: String, errors: [String]) {
        guard case .object(let map)? = try? Value(jsonBytes: data, maximumDepth: 64) else {
            return (String(decoding: data.prefix(200), as: UTF8.self), [])
        }
        let message = map["message"].map { $0.stringValue ?? $0.description } ?? ""
        var errors: [String] = []
        if case .array(let list)? = map["errors"] {
            errors = list.map { $0.stringValue ?? $0.description }
        }
        return (message, errors)
    }
}
