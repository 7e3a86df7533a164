import Logging
import Synchronization
import Testing

@testable import TagServiceCore

@Suite struct SafeLogHandlerTests {
    /// Where ``Capture`` keeps the lines.
    final class Lines: Sendable {
        let mutex = Mutex<[(String, Logger.Metadata)]>([])
        func withLock<R>(_ body: (inout [(String, Logger.Metadata)]) -> R) -> R { mutex.withLock { body(&$0) } }
    }

    /// A handler that keeps what reaches it.
    struct Capture: LogHandler {
        let lines: Lines
        var logLevel: Logger.Level = .trace
        var metadata: Logger.Metadata = [:]
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) { lines.withLock { $0.append((event.message.description, event.metadata ?? [:])) } }
    }

    static func logger(secrets: [String] = []) -> (Logger, Lines) {
        let lines = Lines()
        let handler = SafeLogHandler(wrapping: Capture(lines: lines), secrets: secrets, repeatInterval: .seconds(3600))
        return (Logger(label: "test") { _ in handler }, lines)
    }

    @Test func controlCharactersCannotForgeALine() {
        let (logger, lines) = Self.logger()
        logger.info("user \u{1B}[31mred\nINFO forged", metadata: ["user_id": "a\nb\r\u{7}"])
        let (message, metadata) = lines.withLock { $0[0] }
        #expect(message == #"user \u{1B}[31mred\nINFO forged"#)
        #expect(metadata["user_id"] == .string(#"a\nb\r\u{7}"#))
    }

    @Test func theAPIKeyBearerTokensAndURLPasswordsAreRedacted() {
        let (logger, lines) = Self.logger(secrets: ["sk-live-1234567890"])
        logger.error(
            "braze answered 500: {\"echo\": \"Authorization: Bearer sk-live-1234567890\"}",
            metadata: ["endpoint": "https://ops:hunter2@rest.example.com/users/track", "proxy": "Bearer abc.def"]
        )
        let (message, metadata) = lines.withLock { $0[0] }
        #expect(!message.contains("sk-live") && message.contains("[redacted]"))
        #expect(metadata["endpoint"] == "https://ops:***@rest.example.com/users/track")
        #expect(metadata["proxy"] == "Bearer [redacted]")
    }

    @Test func writeKeysAndBasicCredentialsAreRedacted() {
        let (logger, lines) = Self.logger(secrets: ["wk-live-0123456789abcdef"])
        logger.warning(
            "proxy echoed the request",
            metadata: [
                "headers": "Authorization: Basic d2stbGl2ZS0wMTIzNDU2Nzg5YWJjZGVmOg==",
                "key": "wk-live-0123456789abcdef",
            ]
        )
        let (_, metadata) = lines.withLock { $0[0] }
        #expect(metadata["headers"] == "Authorization: Basic [redacted]")
        #expect(metadata["key"] == "[redacted]")
    }

    @Test func repeatedErrorsAreCountedNotWritten() {
        let (logger, lines) = Self.logger()
        for _ in 0..<1000 { logger.error("records not durable") }
        logger.info("an info line is never limited")
        logger.info("an info line is never limited")
        #expect(lines.withLock { $0.count } == 3)
    }
}
