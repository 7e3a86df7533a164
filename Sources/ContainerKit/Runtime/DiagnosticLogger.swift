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

/// The structured context of a diagnostic: `container`, `session`, `tag`, `class_path`, `queue`, … →
/// value. A host's logger (swift-log through an adapter, say) keeps them as metadata.
public typealias LogMetadata = [String: String]

/// Where ContainerKit writes its diagnostics. Implementations must be safe to call from any thread.
///
/// The name is not `Logger`, so a service that imports swift-log's `Logging` beside ContainerKit names
/// both without qualification; an adapter from this protocol to swift-log is a few lines (see
/// `Examples/TagService`).
///
/// ```swift
/// struct PrintLogger: DiagnosticLogger {
///     var minimumLevel: LogLevel { .info }
///     func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
///         print("[\(level)] \(message) \(metadata)")
///     }
/// }
/// ```
public protocol DiagnosticLogger: Sendable {
    /// Messages below this level are not built or written.
    var minimumLevel: LogLevel { get }
    /// Writes one message that passed the level check, with its structured context.
    func write(_ level: LogLevel, _ message: String, metadata: LogMetadata)
}

extension DiagnosticLogger {
    /// Writes `message` if `level` passes ``minimumLevel``; the message and metadata are only built if it
    /// does.
    @inlinable
    public func log(
        _ level: LogLevel,
        _ message: @autoclosure () -> String,
        metadata: @autoclosure () -> LogMetadata = [:]
    ) {
        let minimum = minimumLevel
        if level >= minimum && minimum != .none && level != .none { write(level, message(), metadata: metadata()) }
    }

    public func verbose(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.verbose, message(), metadata: metadata())
    }
    public func debug(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.debug, message(), metadata: metadata())
    }
    public func info(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.info, message(), metadata: metadata())
    }
    public func warning(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.warning, message(), metadata: metadata())
    }
    public func error(_ message: @autoclosure () -> String, metadata: @autoclosure () -> LogMetadata = [:]) {
        log(.error, message(), metadata: metadata())
    }

    /// `key=value` pairs sorted by key, for loggers that write text.
    public static func format(_ metadata: LogMetadata) -> String {
        metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
    }
}

/// Writes messages to standard error as `containerkit: <level>: <message>`. The default logger,
/// showing warnings and errors.
public struct StandardErrorLogger: DiagnosticLogger {
    public let minimumLevel: LogLevel

    /// Creates a logger that writes messages at `minimumLevel` and above.
    public init(minimumLevel: LogLevel = .warning) { self.minimumLevel = minimumLevel }

    public func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
        let context = metadata.isEmpty ? "" : " [\(Self.format(metadata))]"
        let line = "containerkit: \(level): \(message)\(context)\n"
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            _ = systemWrite(2, buffer.baseAddress, buffer.count)
        }
    }
}
