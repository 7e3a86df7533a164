package import ContainerKit
import Synchronization

/// Rate-limits repeated messages: the first message of each key is logged at once; later ones within
/// ``interval`` are counted, and the next one after it is logged with the count of those held back in its
/// `repeated` metadata (a periodic summary). ``flush()`` logs the counts still held (at shutdown). Messages
/// are constant sentences; what they are about travels in their metadata.
package final class LogLimiter: Sendable {
    private struct Entry {
        var lastLogged: Duration
        var suppressed = 0
        var level: LogLevel
        var lastMessage: String
        var lastMetadata: LogMetadata
        var logger: any DiagnosticLogger
    }

    let logger: any DiagnosticLogger
    let interval: Duration
    private let elapsed: @Sendable () -> Duration
    private let entries = Mutex<[String: Entry]>([:])

    package init(
        logger: any DiagnosticLogger,
        interval: Duration = .seconds(60),
        elapsed: @escaping @Sendable () -> Duration
    ) {
        self.logger = logger
        self.interval = interval
        self.elapsed = elapsed
    }

    /// Logs `message` under `key` unless a message of that key was logged less than ``interval`` ago.
    /// - Returns: whether it was written.
    @discardableResult
    package func log(
        _ level: LogLevel,
        key: String,
        _ message: @autoclosure () -> String,
        metadata: LogMetadata = [:],
        to target: (any DiagnosticLogger)? = nil
    ) -> Bool {
        let logger = target ?? self.logger
        guard level >= logger.minimumLevel, logger.minimumLevel != .none else { return false }
        let now = elapsed()
        let text = message()
        let held = entries.withLock { entries -> Int? in
            guard var entry = entries[key] else {
                entries[key] = Entry(
                    lastLogged: now,
                    level: level,
                    lastMessage: text,
                    lastMetadata: metadata,
                    logger: logger
                )
                return 0
            }
            entry.lastMessage = text
            entry.lastMetadata = metadata
            entry.logger = logger
            guard now - entry.lastLogged >= interval else {
                entry.suppressed += 1
                entries[key] = entry
                return nil
            }
            let held = entry.suppressed
            entry.suppressed = 0
            entry.lastLogged = now
            entries[key] = entry
            return held
        }
        guard let held else { return false }
        var context = metadata
        if held > 0 { context["repeated"] = String(held) }
        logger.write(level, text, metadata: context)
        return true
    }

    /// Logs, for each key with held-back messages, the last one with the count in its `repeated` metadata.
    package func flush() {
        let pending = entries.withLock { entries -> [Entry] in
            defer { for key in entries.keys { entries[key]?.suppressed = 0 } }
            return entries.values.filter { $0.suppressed > 0 }
        }
        for entry in pending {
            var context = entry.lastMetadata
            context["repeated"] = String(entry.suppressed)
            entry.logger.log(entry.level, entry.lastMessage, metadata: context)
        }
    }
}
