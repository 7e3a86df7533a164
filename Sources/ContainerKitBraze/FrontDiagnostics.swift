import ContainerKit
import Synchronization

/// Where a front (``InMemoryQueue``, ``DurableQueue``) reports: the logger and observer its configuration
/// names, or else those of the tag manager its provider is registered on (``AnalyticsSink/inherit(logger:observer:)``);
/// standard error and no observer until then.
///
/// It is itself the front's logger, forwarding to whichever logger applies at the time of each message.
final class FrontDiagnostics: DiagnosticLogger {
    private let configuredLogger: (any DiagnosticLogger)?
    private let configuredObserver: (any RuntimeObserver)?
    private let inherited = Mutex<(logger: any DiagnosticLogger, observer: (any RuntimeObserver)?)>(
        (StandardErrorLogger(), nil)
    )

    init(logger: (any DiagnosticLogger)?, observer: (any RuntimeObserver)?) {
        configuredLogger = logger
        configuredObserver = observer
    }

    /// The logger messages go to now.
    var logger: any DiagnosticLogger { configuredLogger ?? inherited.withLock { $0.logger } }

    /// The observer events go to now, if any.
    var observer: (any RuntimeObserver)? {
        if let configuredObserver { return configuredObserver }
        return inherited.withLock { $0.observer }
    }

    /// Takes the manager's logger and observer for what the configuration left unset.
    func inherit(logger: any DiagnosticLogger, observer: (any RuntimeObserver)?) {
        inherited.withLock { $0 = (logger, observer) }
    }

    var minimumLevel: LogLevel { logger.minimumLevel }

    func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
        logger.write(level, message, metadata: metadata)
    }
}
