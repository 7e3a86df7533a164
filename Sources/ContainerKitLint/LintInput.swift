public import ContainerKit

/// Everything a rule may look at for one file: the document the loader read, the container it compiled
/// (when it did), the errors that stopped either step, and the configuration in force.
///
/// Nothing is parsed twice: the linter reads each file once with the core loader (recording positions)
/// and compiles the document once; rules share the results.
public struct LintInput: Sendable {
    /// The file being linted, as it will be reported.
    public let file: String
    /// The parsed document, when the file could be read.
    public let document: SourceDocument?
    /// Why the file could not be read or parsed (syntax, size, legacy binary, …), if it could not.
    public let readError: ContainerError?
    /// The compiled container, when the document compiled.
    public let container: Container?
    /// Why the document did not compile, if it did not.
    public let compileError: ContainerError?
    /// The configuration in force for this file.
    public let configuration: LintConfiguration
    /// Whether the bytes look like a legacy v3/v4 binary (protobuf) container.
    let looksLikeLegacyBinary: Bool
    /// The raw document seen as one of the container formats.
    package let source: RawContainer

    init(
        file: String,
        document: SourceDocument?,
        readError: ContainerError?,
        container: Container?,
        compileError: ContainerError?,
        configuration: LintConfiguration,
        looksLikeLegacyBinary: Bool = false
    ) {
        self.file = file
        self.document = document
        self.readError = readError
        self.container = container
        self.compileError = compileError
        self.configuration = configuration
        self.looksLikeLegacyBinary = looksLikeLegacyBinary
        self.source = document.map { RawContainer($0.value) } ?? RawContainer(.undefined)
    }

    /// The compiled program, when the document compiled.
    package var program: Program? { container?.program }

    /// The line and column of the value at `pointer`, when the document has positions.
    public func location(of pointer: String) -> SourceLocation? {
        document?.locate(pointer)
    }

    /// A finding of `rule` at `pointer`, with the rule's default severity and the pointer's location.
    public func finding(_ rule: RuleDescription, _ message: String, at pointer: String) -> LintFinding {
        LintFinding(
            ruleID: rule.id,
            severity: rule.severity,
            message: message,
            file: file,
            pointer: pointer,
            location: location(of: pointer)
        )
    }

    /// A finding for a loader or compiler error, at the error's pointer and location.
    func finding(_ rule: RuleDescription, for error: ContainerError) -> LintFinding {
        LintFinding(
            ruleID: rule.id,
            severity: rule.severity,
            message: error.message,
            file: file,
            pointer: error.pointer,
            location: error.location ?? location(of: error.pointer)
        )
    }
}
