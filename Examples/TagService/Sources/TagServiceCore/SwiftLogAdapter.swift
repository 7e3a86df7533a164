import ContainerKit
import Logging

/// ContainerKit's logger protocol on top of swift-log: every message the library writes goes to the
/// service's `Logging.Logger`, at the matching level, with the logger's metadata.
///
/// This is the one place the two logging APIs meet; the rest of the service uses swift-log directly.
struct SwiftLogAdapter: ContainerKit.DiagnosticLogger {
    /// Where messages go.
    let logger: Logging.Logger

    init(_ logger: Logging.Logger) { self.logger = logger }

    /// The library's level below which nothing is built: the swift-log logger's level, mapped.
    var minimumLevel: LogLevel {
        switch logger.logLevel {
        case .trace: .verbose
        case .debug: .debug
        case .info, .notice: .info
        case .warning: .warning
        case .error, .critical: .error
        }
    }

    func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
        let metadata = Logging.Logger.Metadata(uniqueKeysWithValues: metadata.map { ($0.key, .string($0.value)) })
        switch level {
        case .verbose: logger.trace("\(message)", metadata: metadata)
        case .debug: logger.debug("\(message)", metadata: metadata)
        case .info: logger.info("\(message)", metadata: metadata)
        case .warning: logger.warning("\(message)", metadata: metadata)
        case .error: logger.error("\(message)", metadata: metadata)
        case .none: break
        }
    }
}
