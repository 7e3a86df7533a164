public import Foundation

/// The one retry policy of the delivery pipeline (``DeliveryPipeline``), applied to what a destination
/// reports as retryable; destinations never retry themselves.
///
/// Server errors (5xx, 408), timeouts and connection failures are retried after an exponential backoff
/// with full jitter: attempt *n*'s delay is a uniformly random fraction of
/// `min(maximumDelay, baseDelay × 2^(n−1))`. A 429 waits for its `Retry-After` (seconds or an HTTP
/// date, at most ``maximumRetryAfter``), or the backoff when it has none. Rejections (other 4xx) are
/// dropped at once.
///
/// ```swift
/// var retry = DeliveryRetryPolicy()
/// retry.maximumAttempts = 8
/// let pipeline = DeliveryPipeline.inMemory(destination: braze, settings: DeliverySettings(retry: retry))
/// ```
public struct DeliveryRetryPolicy: Sendable, Hashable {
    /// Attempts per batch, the first included (5); then the records are dropped with an error. A durable
    /// store's default policy (``unlimited``) never gives up: durable records are never dropped.
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
    public init(
        maximumAttempts: Int,
        baseDelay: Duration,
        maximumDelay: Duration,
        maximumRetryAfter: Duration = .seconds(300)
    ) {
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

    /// The delay before the next attempt after failed attempt `attempt` (1-based) failed with `error`:
    /// its `Retry-After` (capped at ``maximumRetryAfter``) when it has one, else the jittered backoff.
    public func delay(afterAttempt attempt: Int, error: DeliveryError?, random: Double) -> Duration {
        if let wait = error?.retryAfter {
            return wait > maximumRetryAfter ? maximumRetryAfter : max(wait, .zero)
        }
        return backoff(afterAttempt: attempt, random: random)
    }

    /// A `Retry-After` header's delay in seconds: a number of seconds, or an HTTP date (IMF-fixdate)
    /// counted from `now`; `nil` when it is neither.
    public static func retryAfterSeconds(_ header: String, now: Date = Date()) -> Double? {
        let text = header.trimmingSpaces
        if let seconds = Double(text), seconds.isFinite { return max(seconds, 0) }
        // "Sun, 06 Nov 1994 08:49:37 GMT"
        let parts = text.split(separator: " ")
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]),
            let month = months.firstIndex(of: String(parts[2])), let year = Int(parts[3])
        else { return nil }
        let clock = parts[4].split(separator: ":")
        guard clock.count == 3 else { return nil }
        func padded(_ n: Int, _ width: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let iso = "\(padded(year, 4))-\(padded(month + 1, 2))-\(padded(day, 2))T\(clock[0]):\(clock[1]):\(clock[2])Z"
        guard let date = ISO8601Timestamp.date(from: iso) else { return nil }
        return max(date.timeIntervalSince(now), 0)
    }
}
