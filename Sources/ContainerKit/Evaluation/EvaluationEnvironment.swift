import Synchronization

/// What an evaluation reads of its runtime, and the one place it reports to: the logger, the observer, the random
/// source, and the problems logged once per runtime. One per ``TagManager``, immutable but for its report-once set
/// and its counter; every ``TagManager/Snapshot`` carries it, so an evaluation borrows it through its session's
/// runtime holder (``SessionRuntime``) and holds no reference to the ``TagManager``.
final class EvaluationEnvironment: Sendable {
    /// Where diagnostics go (``TagManager/logger``).
    let logger: any DiagnosticLogger
    /// Where evaluated events and fired tags are reported (``TagManager/observer``).
    let observer: (any RuntimeObserver)?
    /// Where the random-number variable's values come from (``TagManager/randomSource``).
    let randomSource: RandomSource
    /// Whether a fired tag ContainerKit does not run has its fields evaluated (``TagManager/evaluatesUnsupportedTags``).
    let evaluatesUnsupportedTags: Bool
    /// The keys of the problems already logged (``reportOnce(_:level:metadata:_:)``).
    private let reported = Mutex<Set<String>>([])
    /// How many regular-expression matches ran out of their step budget.
    private let regexBudgetExceeded = Atomic<Int>(0)

    init(
        logger: any DiagnosticLogger,
        observer: (any RuntimeObserver)?,
        randomSource: RandomSource,
        evaluatesUnsupportedTags: Bool = false
    ) {
        self.logger = logger
        self.observer = observer
        self.randomSource = randomSource
        self.evaluatesUnsupportedTags = evaluatesUnsupportedTags
    }

    /// Logs a message once per runtime for `key` (repeated problems would flood a busy service's logs);
    /// the metadata is only built for the one message written.
    func reportOnce(
        _ key: String,
        level: LogLevel = .warning,
        metadata: @autoclosure () -> LogMetadata = [:],
        _ message: () -> String
    ) {
        guard level >= logger.minimumLevel, logger.minimumLevel != .none else { return }
        let first = reported.withLock { $0.insert(key).inserted }
        if first { logger.log(level, message(), metadata: metadata()) }
    }

    /// Counts a match that ran out of its step budget.
    func noteRegexBudgetExceeded() { regexBudgetExceeded.add(1, ordering: .relaxed) }

    /// How many matches ran out of their step budget since the runtime was created.
    var regexBudgetExceededCount: Int { regexBudgetExceeded.load(ordering: .relaxed) }
}

/// A logger that adds metadata bound once (the session an evaluation runs for) to every message it writes;
/// a message's own metadata wins over a bound key.
struct BoundLogger: DiagnosticLogger {
    let base: any DiagnosticLogger
    let metadata: LogMetadata

    var minimumLevel: LogLevel { base.minimumLevel }

    func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
        base.write(level, message, metadata: self.metadata.merging(metadata) { _, own in own })
    }
}
