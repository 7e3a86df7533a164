import ContainerKit

/// Files over the configured size limit, which the linter (and the runtime) will not read.
struct FileTooLargeRule: LintRule {
    static let description = RuleDescription(
        id: "file_too_large",
        name: "File Too Large",
        description: "The file is larger than the size limit (`max_file_size`, 16 MiB by default) and is not read.",
        severity: .error,
        triggeringExamples: [
            LintExample(#"{"DEFAULT_TITLE": "a title longer than the limit"}"#, configuration: .smallFileLimit)
        ],
        nonTriggeringExamples: [
            LintExample(#"{"A": "b"}"#, configuration: .smallFileLimit)
        ]
    )

    func check(_ input: LintInput) -> [LintFinding] {
        guard let error = input.readError, error.code == .fileTooLarge else { return [] }
        return [input.finding(Self.description, for: error)]
    }
}

extension LintConfiguration {
    /// A configuration with a 16-byte file limit, for examples.
    static var smallFileLimit: LintConfiguration {
        var configuration = LintConfiguration()
        configuration.maximumFileSize = 16
        return configuration
    }
}
