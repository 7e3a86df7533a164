import ContainerKit

/// Every reporter, by identifier.
public enum LintReporters {
    /// The reporters in the order `--help` lists them; the first is the default.
    public static let all: [any LintReporter.Type] = [
        TextReporter.self, JSONReporter.self, SARIFReporter.self, GitHubReporter.self,
    ]

    /// The reporter named `identifier`, if there is one.
    public static func reporter(named identifier: String) -> (any LintReporter)? {
        all.first { $0.identifier == identifier }.map { $0.init() }
    }
}
