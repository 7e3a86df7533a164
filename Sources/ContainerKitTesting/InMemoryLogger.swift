public import ContainerKit

/// Keeps messages in memory, for tests: what was logged, and a wait (without polling) until a message
/// arrives.
///
/// ```swift
/// let logger = InMemoryLogger()
/// let manager = TagManager(logger: logger)
/// // … start something that logs from another task …
/// await logger.waitForEntry { $0.level == .error && $0.message.contains("timed out") }
/// #expect(logger.messages(at: .warning).isEmpty)
/// ```
public final class InMemoryLogger: DiagnosticLogger {
    /// One logged message.
    public struct Entry: Sendable, Hashable {
        /// The message's level.
        public var level: LogLevel
        /// The message.
        public var message: String
        /// The message's structured context.
        public var metadata: LogMetadata = [:]
    }

    /// Messages below this level are not kept.
    public let minimumLevel: LogLevel
    private let storage = AwaitableState<[Entry]>([])

    /// Creates a logger that keeps messages at `minimumLevel` and above.
    public init(minimumLevel: LogLevel = .verbose) { self.minimumLevel = minimumLevel }

    /// Keeps the message.
    public func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
        storage.update { $0.append(Entry(level: level, message: message, metadata: metadata)) }
    }

    /// The messages kept so far, oldest first.
    public var entries: [Entry] { storage.value }

    /// The messages at `level`.
    public func messages(at level: LogLevel) -> [String] {
        entries.filter { $0.level == level }.map(\.message)
    }

    /// Forgets every kept message.
    public func clear() { storage.update { $0.removeAll() } }

    /// Returns once a kept message (logged before or after the call) matches `match`, or when the calling task
    /// is cancelled.
    public func waitForEntry(where match: @escaping @Sendable (Entry) -> Bool) async {
        await storage.wait { $0.contains(where: match) }
    }

    /// Returns once a message at `level` containing `text` was kept, or when the calling task is cancelled.
    public func waitForMessage(at level: LogLevel, containing text: String) async {
        await waitForEntry { $0.level == level && $0.message.contains(text) }
    }
}
