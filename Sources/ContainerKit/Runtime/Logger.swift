import Synchronization

#if canImport(Glibc)
    import Glibc
    // write(2) under one name on both platforms.
    private let systemWrite = Glibc.write
#elseif canImport(Darwin)
    import Darwin
    private let systemWrite = Darwin.write
#endif

/// How important a log message is. Ordered from most verbose to `none`.
public enum LogLevel: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    case verbose, debug, info, warning, error
    /// Logs nothing when used as a minimum level.
    case none

    public static func < (lhs: LogLevel, rhs: LogLevel) -> Bool { lhs.rawValue < rhs.rawValue }

    public var description: String {
        switch self {
        case .verbose: return "verbose"
        case .debug: return "debug"
        case .info: return "info"
        case .warning: return "warning"
        case .error: return "error"
        case .none: return "none"
        }
    }

    /// Parses `verbose`, `debug`, `info`, `warning`, `error` or `none`.
    public init?(name: String) {
        guard let level = LogLevel.allCases.first(where: { $0.description == name.lowercased() }) else { return nil }
        self = level
    }
}

/// Where ContainerKit writes its diagnostics. Implementations must be safe to call from any thread.
///
/// ```swift
/// struct PrintLogger: Logger {
///     var minimumLevel: LogLevel { .info }
///     func write(_ level: LogLevel, _ message: String) { print("[\(level)] \(message)") }
/// }
/// ```
public protocol Logger: Sendable {
    /// Messages below this level are not built or written.
    var minimumLevel: LogLevel { get }
    /// Writes one message that passed the level check.
    func write(_ level: LogLevel, _ message: String)
}

extension Logger {
    /// Writes `message` if `level` passes ``minimumLevel``; the message is only built if it does.
    @inlinable
    public func log(_ level: LogLevel, _ message: @autoclosure () -> String) {
        let minimum = minimumLevel
        if level >= minimum && minimum != .none && level != .none { write(level, message()) }
    }

    public func verbose(_ message: @autoclosure () -> String) { log(.verbose, message()) }
    public func debug(_ message: @autoclosure () -> String) { log(.debug, message()) }
    public func info(_ message: @autoclosure () -> String) { log(.info, message()) }
    public func warning(_ message: @autoclosure () -> String) { log(.warning, message()) }
    public func error(_ message: @autoclosure () -> String) { log(.error, message()) }
}

/// Writes messages to standard error as `containerkit: <level>: <message>`. The default logger,
/// showing warnings and errors.
public struct StandardErrorLogger: Logger {
    public let minimumLevel: LogLevel

    /// Creates a logger that writes messages at `minimumLevel` and above.
    public init(minimumLevel: LogLevel = .warning) { self.minimumLevel = minimumLevel }

    public func write(_ level: LogLevel, _ message: String) {
        let line = "containerkit: \(level): \(message)\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            _ = systemWrite(2, buffer.baseAddress, buffer.count)
        }
    }
}

/// Keeps messages in memory, for tests and for callers that show diagnostics themselves.
public final class InMemoryLogger: Logger {
    /// One logged message.
    public struct Entry: Sendable, Hashable {
        public var level: LogLevel
        public var message: String
    }

    public let minimumLevel: LogLevel
    private let storage = Mutex<[Entry]>([])

    /// Creates a logger that keeps messages at `minimumLevel` and above.
    public init(minimumLevel: LogLevel = .verbose) { self.minimumLevel = minimumLevel }

    public func write(_ level: LogLevel, _ message: String) {
        storage.withLock { $0.append(Entry(level: level, message: message)) }
    }

    /// The messages kept so far, oldest first.
    public var entries: [Entry] { storage.withLock { $0 } }

    /// The messages at `level`.
    public func messages(at level: LogLevel) -> [String] {
        entries.filter { $0.level == level }.map(\.message)
    }

    /// Forgets every kept message.
    public func clear() { storage.withLock { $0.removeAll() } }
}
