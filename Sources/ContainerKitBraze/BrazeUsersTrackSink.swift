import ContainerKit
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Delivers records to Braze's REST API, `POST <endpoint>/users/track`, authenticated with
/// `Authorization: Bearer <REST API key>`.
///
/// ```swift
/// let sink = BrazeUsersTrackSink(endpoint: URL(string: "https://rest.iad-01.braze.com")!, apiKey: key)
/// BrazeTagProvider(sink: sink).register(on: tagManager)
/// …
/// await sink.shutdown()   // sends what is buffered
/// ```
///
/// ## Batching
/// Records are grouped, in order, into `attributes`, `events` and `purchases` objects (see
/// ``ObjectLimit``; at most 75 objects per request by default, or 75 of each with ``ObjectLimit/legacy``).
/// Times are ISO-8601 with milliseconds, UTC. A `change_user` record becomes an attributes object
/// `{"external_id": "<new id>"}`, which creates the identified profile; every later record of the session
/// already carries the new `external_id`. Records without an identity cannot be sent: they are dropped
/// with a warning.
///
/// ## Flushing
/// ``receive(_:)`` only buffers. A background task sends when ``Configuration/flushCount`` records are
/// buffered, every ``Configuration/flushInterval``, on ``flush()`` and on ``shutdown()`` (which drains
/// the buffer, then stops). Requests are sent one at a time, in order.
///
/// ## Failures
/// Retries follow ``BrazeRetryPolicy`` (5xx, 408, 429 with `Retry-After`, timeouts and connection
/// failures). Any other 4xx drops the request's records and logs an error quoting Braze's `message` and
/// `errors`; a 2xx with `errors` (partial success) logs a warning. Buffered records whose retries run out
/// are dropped with an error; put a ``DurableQueueSink`` in front for at-least-once delivery (it calls
/// ``deliver(_:)``, which throws instead, so the queue keeps the records).
public final class BrazeUsersTrackSink: AnalyticsSink, AcknowledgingSink {
    /// How many objects one request may carry.
    public enum ObjectLimit: Sendable, Hashable {
        /// At most this many objects across `attributes`, `events` and `purchases` (Braze's current limit
        /// is 75).
        case total(Int)
        /// At most this many objects in each of `attributes`, `events` and `purchases`.
        case perCategory(Int)

        /// Braze's legacy limit: 75 attributes, 75 events and 75 purchases per request.
        public static let legacy = ObjectLimit.perCategory(75)

        /// The most records one request can carry.
        var maximumRecords: Int {
            switch self {
            case .total(let n): return max(1, n)
            case .perCategory(let n): return max(1, n) * 3
            }
        }
    }

    /// Tunables of the sink.
    public struct Configuration: Sendable {
        /// Objects per request (`.total(75)`).
        public var objectLimit: ObjectLimit = .total(75)
        /// Send once this many records are buffered (75).
        public var flushCount = 75
        /// Send whatever is buffered this often (10 s, like Braze's SDKs).
        public var flushInterval: Duration = .seconds(10)
        /// The most records buffered; more are dropped with an error (50,000).
        public var maximumBufferedRecords = 50_000
        /// When and how to retry.
        public var retry = BrazeRetryPolicy()
        /// How long one request may wait for data before it counts as timed out (30 s). Whole seconds,
        /// at least 1: FoundationNetworking on Linux drops fractions.
        public var requestTimeout: Duration = .seconds(30)
        /// Add `"_update_existing_only": false` to objects identified by a user alias, so Braze creates
        /// alias-only profiles (Braze otherwise only updates existing ones) (`true`).
        public var createsAliasOnlyProfiles = true
        /// How retries wait (injectable so tests need not wait).
        public var sleep: @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
        /// Random numbers in `0..<1` for jitter (injectable for tests).
        public var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
        /// Where drops, rejections and partial successes are reported.
        public var logger: any Logger = StandardErrorLogger()

        /// The defaults, with any of the common settings changed.
        public init(
            objectLimit: ObjectLimit = .total(75),
            flushCount: Int = 75,
            flushInterval: Duration = .seconds(10),
            retry: BrazeRetryPolicy = BrazeRetryPolicy(),
            logger: any Logger = StandardErrorLogger()
        ) {
            self.objectLimit = objectLimit
            self.flushCount = flushCount
            self.flushInterval = flushInterval
            self.retry = retry
            self.logger = logger
        }
    }

    /// Counters for monitoring and tests.
    public struct Statistics: Sendable, Hashable {
        /// HTTP requests made, retries included.
        public var requests = 0
        /// Requests Braze accepted (2xx).
        public var acceptedRequests = 0
        /// Objects in accepted requests.
        public var acceptedObjects = 0
        /// Attempts that were retried.
        public var retries = 0
        /// Records dropped: rejected by Braze, retries exhausted, no identity, buffer full or shut down.
        public var droppedRecords = 0
    }

    private struct Entry {
        var record: AnalyticsRecord
        var sequence: UInt64
    }

    private struct FlushWaiter {
        var target: UInt64
        var error: (any Error)?
        var continuation: CheckedContinuation<(any Error)?, Never>
    }

    private enum Job {
        case exit
        case wait
        case send([Entry])
    }

    private struct State {
        var buffer: [Entry] = []
        var head = 0
        var lastSequence: UInt64 = 0
        var settledThrough: UInt64 = 0
        var drainRequested = false
        var flushWaiters: [FlushWaiter] = []
        var workerWaiter: CheckedContinuation<Void, Never>?
        var signalled = false
        var closed = false
        var worker: Task<Void, Never>?
        var ticker: Task<Void, Never>?
        var shutdownTask: Task<Void, Never>?
        var sessionInvalidated = false
        var statistics = Statistics()

        var available: Int { buffer.count - head }
    }

    /// Braze's REST endpoint (for example `https://rest.iad-01.braze.com`); requests go to
    /// `<endpoint>/users/track`.
    public let endpoint: URL
    /// The sink's tunables.
    public let configuration: Configuration
    private let apiKey: String
    private let url: URL
    private let session: URLSession
    private let batcher: BrazeUsersTrackBatcher
    private let state = Mutex(State())

    /// Creates a sink and starts its background sender.
    /// - Parameters:
    ///   - endpoint: Braze's REST endpoint for the workspace.
    ///   - apiKey: a REST API key with the `users.track` permission.
    ///   - configuration: batching, flushing and retry settings.
    public init(endpoint: URL, apiKey: String, configuration: Configuration = Configuration()) {
        self.endpoint = endpoint
        self.apiKey = apiKey
        self.configuration = configuration
        self.url = endpoint.appendingPathComponent("users/track")
        self.batcher = BrazeUsersTrackBatcher(
            limit: configuration.objectLimit,
            createsAliasOnlyProfiles: configuration.createsAliasOnlyProfiles
        )
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        // FoundationNetworking counts timeouts in whole seconds (0.3 s times out at once): use at least 1 s.
        let timeout = Double(max(configuration.requestTimeout.components.seconds, 1))
        sessionConfiguration.timeoutIntervalForRequest = timeout
        sessionConfiguration.timeoutIntervalForResource = timeout * 2
        sessionConfiguration.urlCache = nil
        self.session = URLSession(configuration: sessionConfiguration)
        let interval = configuration.flushInterval
        state.withLock { state in
            state.worker = Task { [self] in await workerLoop() }
            state.ticker = Task { [weak self] in
                while !Task.isCancelled {
                    do {
                        try await Task.sleep(for: interval)
                    } catch {
                        return
                    }
                    guard let self else { return }
                    self.requestDrain(onlyIfBuffered: true)
                }
            }
        }
    }

    /// Counters for monitoring and tests.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// One request's worth of records, so a ``DurableQueueSink`` in front repeats as little as possible
    /// after a failure.
    public var preferredBatchSize: Int { configuration.objectLimit.maximumRecords }

    // MARK: Buffering

    /// Buffers `records`; wakes the sender once ``Configuration/flushCount`` are buffered.
    public func receive(_ records: [AnalyticsRecord]) {
        guard !records.isEmpty else { return }
        let maximum = configuration.maximumBufferedRecords
        let flushCount = configuration.flushCount
        let (accepted, wake) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard !state.closed, state.available + records.count <= maximum else {
                state.statistics.droppedRecords += records.count
                return (false, nil)
            }
            for record in records {
                state.lastSequence += 1
                state.buffer.append(Entry(record: record, sequence: state.lastSequence))
            }
            guard state.available >= flushCount else { return (true, nil) }
            return (true, Self.takeWaiter(&state))
        }
        if !accepted {
            configuration.logger.error("braze sink: dropped \(records.count) records: the sink is full or shut down")
        }
        wake?.resume()
    }

    private static func takeWaiter(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        guard let waiter = state.workerWaiter else {
            state.signalled = true
            return nil
        }
        state.workerWaiter = nil
        return waiter
    }

    private func requestDrain(onlyIfBuffered: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if onlyIfBuffered && state.available == 0 { return nil }
            state.drainRequested = true
            return Self.takeWaiter(&state)
        }
        waiter?.resume()
    }

    /// Sends everything received so far and returns when it is settled.
    /// - Throws: ``BrazeDeliveryError`` if some of it was rejected or ran out of retries (it is dropped).
    public func flush() async throws {
        let error: (any Error)? = await withCheckedContinuation { continuation in
            let (done, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
                if state.lastSequence <= state.settledThrough { return (true, nil) }
                state.flushWaiters.append(FlushWaiter(target: state.lastSequence, continuation: continuation))
                state.drainRequested = true
                return (false, Self.takeWaiter(&state))
            }
            waiter?.resume()
            if done { continuation.resume(returning: nil) }
        }
        if let error { throw error }
    }

    /// Drains the buffer (with retries), stops the sender and closes the HTTP session. Records received
    /// afterwards are dropped with an error. Safe to call twice.
    public func shutdown() async {
        let task = state.withLock { state -> Task<Void, Never> in
            if let task = state.shutdownTask { return task }
            state.closed = true
            state.drainRequested = true
            let worker = state.worker
            let ticker = state.ticker
            let waiter = Self.takeWaiter(&state)
            let task = Task { [self] in
                waiter?.resume()
                await worker?.value
                ticker?.cancel()
                await ticker?.value
                self.state.withLock { $0.sessionInvalidated = true }
                self.session.finishTasksAndInvalidate()
            }
            state.shutdownTask = task
            return task
        }
        await task.value
    }

    // MARK: Sending

    private func workerLoop() async {
        let perRequest = configuration.objectLimit.maximumRecords
        let flushCount = configuration.flushCount
        while true {
            let job = state.withLock { state -> Job in
                let available = state.available
                if available == 0 {
                    state.drainRequested = false
                    state.buffer.removeAll(keepingCapacity: true)
                    state.head = 0
                    return state.closed ? .exit : .wait
                }
                guard state.drainRequested || state.closed || available >= flushCount else { return .wait }
                let end = state.head + min(available, perRequest)
                let entries = Array(state.buffer[state.head..<end])
                state.head = end
                if state.head > 4096 && state.head * 2 > state.buffer.count {
                    state.buffer.removeFirst(state.head)
                    state.head = 0
                }
                return .send(entries)
            }
            switch job {
            case .exit:
                return
            case .wait:
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let resumeNow = state.withLock { state -> Bool in
                        if state.signalled {
                            state.signalled = false
                            return true
                        }
                        state.workerWaiter = continuation
                        return false
                    }
                    if resumeNow { continuation.resume() }
                }
            case .send(let entries):
                var failure: (any Error)?
                do {
                    try await send(entries.map(\.record))
                } catch {
                    failure = error
                    configuration.logger.error("braze sink: dropped \(entries.count) records: \(error)")
                }
                settle(entries, failure: failure)
            }
        }
    }

    private func settle(_ entries: [Entry], failure: (any Error)?) {
        guard let first = entries.first?.sequence, let last = entries.last?.sequence else { return }
        let ready = state.withLock { state -> [(CheckedContinuation<(any Error)?, Never>, (any Error)?)] in
            if failure != nil { state.statistics.droppedRecords += entries.count }
            state.settledThrough = max(state.settledThrough, last)
            var ready: [(CheckedContinuation<(any Error)?, Never>, (any Error)?)] = []
            var waiting: [FlushWaiter] = []
            for var waiter in state.flushWaiters {
                if let failure, waiter.error == nil, waiter.target >= first { waiter.error = failure }
                if waiter.target <= state.settledThrough {
                    ready.append((waiter.continuation, waiter.error))
                } else {
                    waiting.append(waiter)
                }
            }
            state.flushWaiters = waiting
            return ready
        }
        for (continuation, error) in ready { continuation.resume(returning: error) }
    }

    /// Sends `records` now, bypassing the buffer; returns once each is accepted or dropped (rejected by
    /// Braze, or without an identity — both logged).
    /// - Throws: ``BrazeDeliveryError`` when retries ran out (or the sink is shut down), so the caller
    ///   can offer the records again.
    public func deliver(_ records: [AnalyticsRecord]) async throws {
        if state.withLock({ $0.sessionInvalidated }) {
            throw BrazeDeliveryError(.shutDown, "braze sink is shut down")
        }
        do {
            try await send(records)
        } catch let error as BrazeDeliveryError where error.code == .rejected {
            state.withLock { $0.statistics.droppedRecords += records.count }
            configuration.logger.error("braze sink: dropped \(records.count) records: \(error)")
        }
    }

    /// Sends `records` in as many requests as the object limit needs. Throws on the first request that
    /// fails; earlier requests stay sent.
    private func send(_ records: [AnalyticsRecord]) async throws {
        let (requests, skipped) = batcher.requests(for: records)
        if !skipped.isEmpty {
            state.withLock { $0.statistics.droppedRecords += skipped.count }
            let ids = skipped.prefix(3).map { "'\($0.id)'" }.joined(separator: ", ")
            configuration.logger.warning(
                "braze sink: dropped \(skipped.count) records without a user identity (\(ids)); "
                    + "set one with BrazeTagProvider.setUser"
            )
        }
        for request in requests {
            try await send(request)
        }
    }

    private func send(_ request: BrazeUsersTrackBatcher.Request) async throws {
        var urlRequest = URLRequest(url: url)
        urlRequest.httpMethod = "POST"
        urlRequest.setValue("application/json", forHTTPHeaderField: "Content-Type")
        urlRequest.setValue("application/json", forHTTPHeaderField: "Accept")
        urlRequest.setValue("Bearer \(apiKey)", forHTTPHeaderField: "Authorization")
        urlRequest.httpBody = Data(request.body)
        let policy = configuration.retry
        var attempt = 0
        while true {
            attempt += 1
            state.withLock { $0.statistics.requests += 1 }
            let delay: Duration
            let lastError: BrazeDeliveryError
            do {
                let (data, response) = try await session.data(for: urlRequest)
                let status = (response as? HTTPURLResponse)?.statusCode ?? 0
                let answer = Self.parseAnswer(data)
                switch status {
                case 200..<300:
                    state.withLock {
                        $0.statistics.acceptedRequests += 1
                        $0.statistics.acceptedObjects += request.objectCount
                    }
                    if !answer.errors.isEmpty {
                        configuration.logger.warning(
                            "braze accepted \(request.objectCount) objects with errors: "
                                + answer.errors.joined(separator: ", ")
                        )
                    }
                    return
                case 429:
                    lastError = BrazeDeliveryError(
                        .retriesExhausted,
                        "braze rate-limited the request (http 429): '\(answer.message)'",
                        status: status,
                        errors: answer.errors
                    )
                    let header = (response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Retry-After")
                    if let seconds = header.flatMap({ BrazeRetryPolicy.retryAfterSeconds($0, now: Date()) }) {
                        let wait = Duration.milliseconds(Int64((seconds * 1000).rounded(.up)))
                        delay = wait > policy.maximumRetryAfter ? policy.maximumRetryAfter : wait
                    } else {
                        delay = policy.backoff(afterAttempt: attempt, random: configuration.random())
                    }
                case 408, 500..<600:
                    lastError = BrazeDeliveryError(
                        .retriesExhausted,
                        "braze answered http \(status): '\(answer.message)'",
                        status: status,
                        errors: answer.errors
                    )
                    delay = policy.backoff(afterAttempt: attempt, random: configuration.random())
                default:
                    let details = answer.errors.isEmpty ? "" : "; errors: " + answer.errors.joined(separator: ", ")
                    throw BrazeDeliveryError(
                        .rejected,
                        "braze rejected \(request.objectCount) objects (http \(status)): '\(answer.message)'\(details)",
                        status: status,
                        errors: answer.errors
                    )
                }
            } catch let error as BrazeDeliveryError {
                throw error
            } catch is CancellationError {
                throw BrazeDeliveryError(.shutDown, "braze request cancelled")
            } catch let error as URLError where error.code == .cancelled {
                throw BrazeDeliveryError(.shutDown, "braze request cancelled")
            } catch {
                lastError = BrazeDeliveryError(
                    .retriesExhausted,
                    "braze request to '\(url.absoluteString)' failed: \(error.localizedDescription.lowercased())"
                )
                delay = policy.backoff(afterAttempt: attempt, random: configuration.random())
            }
            guard attempt < policy.maximumAttempts else {
                var error = lastError
                error.message += " after \(attempt) attempts"
                throw error
            }
            state.withLock { $0.statistics.retries += 1 }
            try await configuration.sleep(delay)
        }
    }

    /// Braze's `message` and `errors` (each as compact JSON, or a string as itself).
    private static func parseAnswer(_ data: Data) -> (message: String, errors: [String]) {
        guard case .object(let map)? = try? Value(jsonBytes: [UInt8](data), maximumDepth: 64) else {
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
