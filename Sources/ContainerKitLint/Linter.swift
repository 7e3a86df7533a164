public import ContainerKit

/// Lints container files: reads each one once with the core loader (recording positions), compiles it
/// once, runs every enabled rule over the result and returns the findings in report order.
///
/// The linter knows its ``builtInRules``, which name no vendor. A module with rules of its own (such as
/// `ContainerKitBrazeLint`) offers them as a list, and whoever runs the linter registers them by passing
/// a catalog:
///
/// ```swift
/// let catalog = Linter.builtInRules + BrazeLintRules.all
/// let configuration = try LintConfiguration.load(path: ".containerkit-lint.json", catalog: catalog)
/// let linter = Linter(configuration: configuration, catalog: catalog)
/// for finding in try linter.lint(path: "Containers/GTM-5HM9ZRX.json") { print(finding) }
/// ```
public struct Linter: Sendable {
    /// The rules that ship with the linter, in catalog order.
    public static let builtInRules: [any LintRule.Type] = [
        SyntaxErrorRule.self,
        FileTooLargeRule.self,
        LegacyBinaryRule.self,
        UnknownFormatRule.self,
        InvalidStructureRule.self,
        ContainerIDRule.self,
        EmptyContainerRule.self,
        DuplicateKeyRule.self,
        DanglingReferenceRule.self,
        DuplicateIDRule.self,
        DuplicateNameRule.self,
        VariableCycleRule.self,
        InvalidRegexRule.self,
        UnsupportedRegexRule.self,
        RegexBacktrackingRule.self,
        LargeRegexProgramRule.self,
        RegexTableAlternationRule.self,
        NonNumericComparisonRule.self,
        TagNeverFiresRule.self,
        UnusedVariableRule.self,
        UnusedTriggerRule.self,
        UnusedPredicateRule.self,
        MissingClassPathRule.self,
        UnsupportedTemplateRule.self,
        PausedTagRule.self,
        ConsentImplicitDefaultRule.self,
    ]

    /// The rule with identifier `id` in `catalog`, if there is one.
    public static func rule(id: String, in catalog: [any LintRule.Type] = builtInRules) -> (any LintRule.Type)? {
        catalog.first { $0.description.id == id }
    }

    /// The configuration in force.
    public let configuration: LintConfiguration
    private let rules: [any LintRule]

    /// Creates a linter that runs the rules of `catalog` that `configuration` enables, or exactly `rules` when
    /// given.
    /// - Parameters:
    ///   - configuration: which rules run, at which severity.
    ///   - rules: the rules to run, whatever the configuration enables.
    ///   - catalog: every rule the linter knows: ``builtInRules`` and the rules other modules register.
    public init(
        configuration: LintConfiguration = LintConfiguration(),
        rules: [any LintRule.Type]? = nil,
        catalog: [any LintRule.Type] = Linter.builtInRules
    ) {
        self.configuration = configuration
        let selected = rules ?? catalog.filter { configuration.isEnabled($0.description) }
        self.rules = selected.map { $0.init() }
    }

    /// The identifiers of the rules this linter runs.
    public var ruleIDs: [String] { rules.map { type(of: $0).description.id } }

    /// Lints the file at `path`.
    /// - Throws: ``ContainerError`` with code `io_error` only when the file cannot be read at all; every
    ///   problem with its content (size, syntax, format, …) is a finding instead.
    public func lint(path: String) throws(ContainerError) -> [LintFinding] {
        let bytes: [UInt8]
        do {
            bytes = try ContainerLoader.readFile(path, limit: configuration.maximumFileSize)
        } catch  where error.code == .fileTooLarge {
            return run(
                LintInput(
                    file: path,
                    document: nil,
                    readError: error,
                    container: nil,
                    compileError: nil,
                    configuration: configuration
                )
            )
        }
        return lint(bytes: bytes, file: path)
    }

    /// Lints a file's bytes already in memory; `file` names it in findings (and may carry its container ID).
    public func lint(bytes: [UInt8], file: String) -> [LintFinding] {
        run(input(bytes: bytes, file: file))
    }

    /// Reads and compiles the bytes once, for every rule to share.
    func input(bytes: [UInt8], file: String) -> LintInput {
        let loader = ContainerLoader(
            options: LoadOptions(maximumFileSize: configuration.maximumFileSize, recordPositions: true)
        )
        var document: SourceDocument?
        var readError: ContainerError?
        var container: Container?
        var compileError: ContainerError?
        do { document = try loader.readDocument(bytes: bytes, file: file) } catch { readError = error }
        if let document {
            do { container = try loader.compile(document) } catch { compileError = error }
        }
        return LintInput(
            file: file,
            document: document,
            readError: readError,
            container: container,
            compileError: compileError,
            configuration: configuration,
            looksLikeLegacyBinary: readError != nil && Linter.looksLikeLegacyBinary(bytes)
        )
    }

    /// The rules that still run on a document the compiler refused by name (a server-side export, an export
    /// 1.x, an AMP configuration): the refusal is the finding, not the contents of a container nothing runs.
    static let refusalRuleIDs: Set<String> = ["syntax_error", "file_too_large", "legacy_binary", "unknown_format"]

    func run(_ input: LintInput) -> [LintFinding] {
        var findings: [LintFinding] = []
        let refused = input.compileError?.code == .unknownFormat
        for rule in rules {
            let description = type(of: rule).description
            if refused, !Linter.refusalRuleIDs.contains(description.id) { continue }
            let severity = configuration.severity(of: description)
            for var finding in rule.check(input) {
                finding.severity = severity
                findings.append(finding)
            }
        }
        return findings.sorted(by: LintFinding.reportOrder)
    }

    /// Whether bytes that failed to parse look like a legacy v3/v4 binary container: a protobuf message
    /// whose first field is the length-delimited key-string table (`0x0A`, then a short length), with
    /// control bytes that no text file has.
    static func looksLikeLegacyBinary(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 4, bytes[0] == 0x0A, bytes[1] < 0x80, !bytes.starts(with: Array("bplist".utf8)) else {
            return false
        }
        return bytes.prefix(256).contains { $0 < 0x09 || (0x0E..<0x20).contains($0) }
    }
}
