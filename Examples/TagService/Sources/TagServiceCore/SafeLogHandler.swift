import Foundation
import Logging
import Synchronization

/// A swift-log handler in front of another that makes every line safe to write to a log an operator reads
/// and ships:
///
/// - **No forged lines, no terminal escapes.** Control characters in the message, the metadata keys and
///   values (a `\n` in a user ID, an ANSI escape in a value a Braze rule warning quotes) are written as
///   escapes (`\n`, `\u{1B}`), so one call is one line.
/// - **No secrets.** Each of `secrets` (the Braze REST API key, the write keys, the metrics token) is
///   replaced by `[redacted]` wherever it appears — also inside an error body a server or proxy echoed back
///   with the request's headers — and so are the credentials of any `Bearer …` or `Basic …` text; a URL's
///   password (`https://user:password@host`) is replaced by `***`.
/// - **No floods.** A warning or error whose message was already written within `repeatInterval` is
///   counted instead of written; the next one written after the interval carries `repeated=<count>`.
///   (A full disk made every request log the same error: tens of thousands of lines a second.)
public struct SafeLogHandler: LogHandler {
    private var wrapped: any LogHandler
    private let secrets: [String]
    private let limiter: RepeatLimiter

    /// Wraps `handler`; `secrets` are redacted from every line.
    public init(wrapping handler: any LogHandler, secrets: [String] = [], repeatInterval: Duration = .seconds(10)) {
        self.wrapped = handler
        self.secrets = secrets.filter { $0.count >= 4 }
        self.limiter = RepeatLimiter(interval: repeatInterval)
    }

    public var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    public var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    public func log(event: LogEvent) {
        let text = clean(event.message.description)
        var metadata: Logger.Metadata = [:]
        for (key, value) in event.metadata ?? [:] { metadata[clean(key)] = clean(value) }
        if event.level >= .warning {
            guard let repeated = limiter.admit(text) else { return }
            if repeated > 0 { metadata["repeated"] = "\(repeated)" }
        }
        var cleaned = event
        cleaned.message = "\(text)"
        cleaned.metadata = metadata.isEmpty ? nil : metadata
        wrapped.log(event: cleaned)
    }

    private func clean(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
        switch value {
        case .string(let text): .string(clean(text))
        case .stringConvertible(let convertible): .string(clean(convertible.description))
        case .array(let values): .array(values.map(clean))
        case .dictionary(let map):
            .dictionary(Dictionary(uniqueKeysWithValues: map.map { (clean($0.key), clean($0.value)) }))
        }
    }

    /// `text` with secrets redacted, URL passwords hidden and control characters escaped.
    func clean(_ text: String) -> String {
        var text = text
        for secret in secrets where text.contains(secret) {
            text = text.replacingOccurrences(of: secret, with: "[redacted]")
        }
        text = Self.redactCredentials(text, scheme: "bearer ", options: .caseInsensitive)
        text = Self.redactCredentials(text, scheme: "Basic ")
        text = Self.hideURLPasswords(text)
        return Self.escapeControlCharacters(text)
    }

    /// `Bearer <token>` → `Bearer [redacted]` (`scheme`: `"bearer "` in any case, or `"Basic "` as HTTP writes
    /// it — Basic credentials hold a write key — without taking every "basic " of a message for a scheme).
    static func redactCredentials(_ text: String, scheme: String, options: String.CompareOptions = []) -> String {
        guard text.range(of: scheme, options: options) != nil else { return text }
        var out = ""
        var rest = Substring(text)
        while let range = rest.range(of: scheme, options: options) {
            out += rest[..<range.upperBound]
            rest = rest[range.upperBound...]
            let token = rest.prefix { !$0.isWhitespace && $0 != "\"" && $0 != "'" && $0 != "," && $0 != "\\" }
            if !token.isEmpty && token != "[redacted]" {
                out += "[redacted]"
                rest = rest[token.endIndex...]
            }
        }
        return out + rest
    }

    /// `scheme://user:password@host` → `scheme://user:***@host`.
    static func hideURLPasswords(_ text: String) -> String {
        guard text.contains("://"), text.contains("@") else { return text }
        var out = ""
        var rest = Substring(text)
        while let scheme = rest.range(of: "://") {
            out += rest[..<scheme.upperBound]
            rest = rest[scheme.upperBound...]
            let authority = rest.prefix { !"/?# \"'".contains($0) }
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                out += authority[..<colon] + ":***"
                rest = rest[at...]
            }
        }
        return out + rest
    }

    /// Control characters (C0, DEL, C1) as escapes; `\` itself is left alone.
    static func escapeControlCharacters(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where isControl(scalar): out += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) || scalar.value == 0x2028 || scalar.value == 0x2029
    }
}

/// Decides which repeats of a message are written: the first, then one per interval with the count of
/// those not written in between.
final class RepeatLimiter: Sendable {
    private let interval: Duration
    private let clock = ContinuousClock()
    private let seen = Mutex<[String: (last: ContinuousClock.Instant, suppressed: Int)]>([:])

    init(interval: Duration) { self.interval = interval }

    /// `nil`: do not write; otherwise write, noting this many repeats were not written.
    func admit(_ message: String) -> Int? {
        let now = clock.now
        return seen.withLock { seen -> Int? in
            if let entry = seen[message], now - entry.last < interval {
                seen[message]!.suppressed += 1
                return nil
            }
            let suppressed = seen[message]?.suppressed ?? 0
            if seen.count > 1000 { seen = seen.filter { now - $0.value.last < interval } }
            seen[message] = (now, 0)
            return suppressed
        }
    }
}
