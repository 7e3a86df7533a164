/// When and how long ``BrazeUsersTrackSink`` retries a request.
///
/// 5xx answers, 408, timeouts and connection failures are retried after an exponential backoff with
/// full jitter: attempt *n*'s delay is a uniformly random fraction of
/// `min(maximumDelay, baseDelay × 2^(n−1))`. A 429 waits for its `Retry-After` (seconds or an HTTP
/// date, at most ``maximumRetryAfter``), or the backoff when it has none. Other 4xx are not retried.
///
/// ```swift
/// var retry = BrazeRetryPolicy()
/// retry.maximumAttempts = 8
/// let sink = BrazeUsersTrackSink(endpoint: url, apiKey: key, configuration: .init(retry: retry))
/// ```
public struct BrazeRetryPolicy: Sendable, Hashable {
    /// Attempts per request, the first included (5).
    public var maximumAttempts = 5
    /// The backoff's starting delay (0.5 s).
    public var baseDelay: Duration = .milliseconds(500)
    /// The backoff's cap (30 s).
    public var maximumDelay: Duration = .seconds(30)
    /// The longest `Retry-After` honoured (300 s); longer ones wait this long.
    public var maximumRetryAfter: Duration = .seconds(300)

    /// The defaults.
    public init() {}

    /// Creates a policy.
    public init(maximumAttempts: Int, baseDelay: Duration, maximumDelay: Duration, maximumRetryAfter: Duration = .seconds(300)) {
        self.maximumAttempts = maximumAttempts
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The delay after failed attempt `attempt` (1-based), given a random number in `0..<1`.
    public func backoff(afterAttempt attempt: Int, random: Double) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        var ceiling = baseDelay * (1 << exponent)
        if ceiling > maximumDelay || ceiling < .zero { ceiling = maximumDelay }
        return ceiling * min(max(random, 0), 1)
    }
}
