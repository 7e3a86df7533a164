import ContainerKit

/// How serious a lint finding is. `error` fails a lint run (exit code 2); `warning` and `note` do not,
/// unless `--strict` turns warnings into errors.
public enum LintSeverity: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// Something informative: worth knowing, never a failure.
    case note
    /// Probably a mistake, or a part ContainerKit cannot run.
    case warning
    /// The container is broken or cannot be read.
    case error

    public static func < (lhs: LintSeverity, rhs: LintSeverity) -> Bool { lhs.rank < rhs.rank }

    public var description: String { rawValue }

    private var rank: Int {
        switch self {
        case .note: return 0
        case .warning: return 1
        case .error: return 2
        }
    }
}
