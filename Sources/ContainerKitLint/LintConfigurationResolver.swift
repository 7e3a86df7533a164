public import ContainerKit
import Foundation

/// Finds the configuration for each file by walking up from its directory, reading each
/// `.containerkit-lint.json` once. Not thread-safe: use one per lint run.
public final class LintConfigurationResolver {
    private let fixed: LintConfiguration?
    private let catalog: [any LintRule.Type]
    private var byDirectory: [String: LintConfiguration] = [:]

    /// Creates a resolver. With `fixed`, every file gets that configuration (the `--config` case); files it
    /// reads judge rule ids against `catalog`.
    public init(fixed: LintConfiguration? = nil, catalog: [any LintRule.Type] = Linter.builtInRules) {
        self.fixed = fixed
        self.catalog = catalog
    }

    /// The configuration for `file`: the nearest `.containerkit-lint.json` above it, else the defaults.
    /// - Throws: ``ContainerError`` when a configuration file exists but is invalid.
    public func configuration(for file: String) throws(ContainerError) -> LintConfiguration {
        if let fixed { return fixed }
        return try configuration(inDirectory: LintPaths.directory(of: LintPaths.absolute(file)))
    }

    private func configuration(inDirectory directory: String) throws(ContainerError) -> LintConfiguration {
        if let cached = byDirectory[directory] { return cached }
        let candidate =
            directory == "/" ? "/" + LintConfiguration.fileName : directory + "/" + LintConfiguration.fileName
        let found: LintConfiguration
        if FileManager.default.fileExists(atPath: candidate) {
            found = try LintConfiguration.load(path: candidate, catalog: catalog)
        } else if directory == "/" || directory.isEmpty {
            found = LintConfiguration()
        } else {
            found = try configuration(inDirectory: LintPaths.directory(of: directory))
        }
        byDirectory[directory] = found
        return found
    }
}
