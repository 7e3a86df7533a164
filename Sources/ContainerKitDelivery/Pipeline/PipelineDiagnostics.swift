import ContainerKit
import Synchronization

/// Where a ``DeliveryPipeline`` reports: the logger and observer its configuration
/// names, or else those of the tag manager its provider is registered on (``AnalyticsSink/inherit(logger:observer:)``);
/// standard error and no observer until then.
///
/// It is itself the front's logger, forwarding to whichever logger applies at the time of each message.
final class PipelineDiagnostics: DiagnosticLogger {
    private let configuredLogger: (any DiagnosticLogger)?
    private let configuredObserver: (any DeliveryObserver)?
    private let inherited = Mutex<(logger: any DiagnosticLogger, observer: (any DeliveryObserver)?)>(
        (StandardErrorLogger(), nil)
    )
    /// Whether an inherited observer is set: the append path asks for the observer twice per push, and most
    /// services have none, so that answer takes one atomic load instead of the lock and an existential copy.
    private let inheritsObserver = Atomic<Bool>(false)
    /// Whether ``configuredObserver`` is set (testing the optional existential itself copies it).
    private let hasConfiguredObserver: Bool

    init(logger: (any DiagnosticLogger)?, observer: (any DeliveryObserver)?) {
        configuredLogger = logger
        configuredObserver = observer
        hasConfiguredObserver = observer != nil
    }

    /// The logger messages go to now.
    var logger: any DiagnosticLogger { configuredLogger ?? inherited.withLock { $0.logger } }

    /// The observer events go to now, if any.
    var observer: (any DeliveryObserver)? {
        if hasConfiguredObserver { return configuredObserver }
        guard inheritsObserver.load(ordering: .acquiring) else { return nil }
        return inherited.withLock { $0.observer }
    }

    /// Takes the manager's logger and observer for what the configuration left unset.
    func inherit(logger: any DiagnosticLogger, observer: (any DeliveryObserver)?) {
        inherited.withLock {
            $0 = (logger, observer)
            // Under the lock: two calls at once leave the flag and the observer from the same call.
            inheritsObserver.store(observer != nil, ordering: .releasing)
        }
    }

    var minimumLevel: LogLevel { logger.minimumLevel }

    /// Reports what one delivery did: delivered and rejected records and the backlog after it (`backlog`
    /// is read only when an observer listens) to the observer, warnings and rejections to `logs`, with
    /// `label` as their `queue` metadata.
    func report(
        _ result: DeliveryResult,
        backlog: () -> (records: Int, bytes: Int),
        logs: LogLimiter,
        label: String
    ) {
        if let observer {
            if !result.accepted.isEmpty { observer.observe(.recordsDelivered(count: result.accepted.count)) }
            for rejection in result.rejected {
                observer.observe(.recordsRejected(count: rejection.records.count, reason: rejection.error.message))
            }
            let (records, bytes) = backlog()
            observer.observe(.queueBacklog(records: records, bytes: bytes))
        }
        for warning in result.warnings {
            logs.log(
                .warning,
                key: "partial",
                "the destination took the records with a warning",
                metadata: ["queue": label, "problem": warning]
            )
        }
        for rejection in result.rejected {
            var metadata = rejection.error.logMetadata
            metadata["queue"] = label
            metadata["records"] = String(rejection.records.count)
            logs.log(.error, key: "rejected", "the destination rejected records; they are dropped", metadata: metadata)
        }
    }

    func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
        logger.write(level, message, metadata: metadata)
    }
}
