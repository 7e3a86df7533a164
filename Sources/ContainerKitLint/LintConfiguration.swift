public import ContainerKit
import Foundation

/// What `containerkit lint` checks and how: read from `.containerkit-lint.json` (found by walking up from
/// each file) or from `--config`.
///
/// ```json
/// {
///   "disabled_rules": ["unused_variable"],
///   "opt_in_rules": ["paused_tag"],
///   "severity": {"unsupported_template": "note"},
///   "braze_class_paths": ["com.example.BrazeTagProvider"],
///   "excluded": ["Containers/old/**"]
/// }
/// ```
public struct LintConfiguration: Sendable, Hashable {
    /// The name of the configuration file that discovery looks for.
    public static let fileName = ".containerkit-lint.json"

    /// The Function Call class paths that Braze's GTM tag providers register by default.
    public static let defaultBrazeClassPaths = [
        "com.appboy.googletagmanager.BrazeGtmTagProvider",
        "BrazeGTMTagManager",
        "com.braze.googletagmanager.BrazeGtmTagProvider",
    ]

    /// Rules that do not run.
    public var disabledRules: Set<String> = []
    /// Opt-in rules that run.
    public var optInRules: Set<String> = []
    /// When not empty, exactly these rules run (opt-in or not) and the two lists above are ignored.
    public var onlyRules: Set<String> = []
    /// Severity per rule id, replacing the rule's default.
    public var severities: [String: LintSeverity] = [:]
    /// Function Call class paths whose tags are Braze provider tags.
    public var brazeClassPaths: [String] = LintConfiguration.defaultBrazeClassPaths
    /// Glob patterns (relative to ``baseDirectory``) of files and folders that directory walks skip.
    public var excluded: [String] = []
    /// Files larger than this (in bytes) are not read and get a `file_too_large` finding.
    public var maximumFileSize: Int = LoadOptions().maximumFileSize
    /// Whether `unused_variable` also reports constants (`__c`/`c`) with a name, which hosts may read
    /// through typed getters. Off by default.
    public var reportUnusedConstants = false
    /// The directory `excluded` patterns are relative to (the configuration file's directory).
    public var baseDirectory: String?
    /// The configuration file this was read from, if any.
    public var path: String?
    /// Problems that did not stop reading the file: unknown keys or rule ids, each with its place.
    public var warnings: [Warning] = []

    /// A problem of a configuration file that did not stop reading it (an unknown key or rule id): what, and where.
    public struct Warning: Sendable, Hashable, CustomStringConvertible {
        /// What is wrong: "unknown configuration key 'colour'".
        public var message: String
        /// The JSON pointer of the key or value it is about.
        public var pointer: String
        /// Its line and column in the file, when the configuration was read from text.
        public var location: SourceLocation?

        /// Creates a warning.
        public init(_ message: String, pointer: String = "", location: SourceLocation? = nil) {
            self.message = message
            self.pointer = pointer
            self.location = location
        }

        /// `"3:5: unknown configuration key 'colour'"` (the line and column when known).
        public var description: String { location.map { "\($0.line):\($0.column): \(message)" } ?? message }
    }

    /// The default configuration: every rule that is not opt-in, at its default severity.
    public init() {}

    /// Reads a configuration from JSON text. `path` names the file in errors and sets ``baseDirectory``; rule
    /// ids that `catalog` does not know are ``warnings``.
    /// - Throws: ``ContainerError`` when the text is not JSON or a key has the wrong type.
    public init(
        json text: String,
        path: String? = nil,
        catalog: [any LintRule.Type] = Linter.builtInRules
    ) throws(ContainerError) {
        try self.init(jsonBytes: Array(text.utf8), path: path, catalog: catalog)
    }

    /// Reads a configuration from a file's bytes as they are: a file in UTF-16 or with bytes that are not UTF-8 is
    /// told so, where text decoded first would have turned them into U+FFFD.
    init(jsonBytes bytes: [UInt8], path: String?, catalog: [any LintRule.Type]) throws(ContainerError) {
        self.path = path
        baseDirectory = path.map { LintPaths.directory(of: LintPaths.absolute($0)) }
        let document: SourceDocument
        do {
            document = try ContainerLoader(options: LoadOptions(recordPositions: true))
                .readDocument(bytes: bytes, file: path)
        } catch {
            throw ContainerError(
                error.code,
                "configuration: \(error.message)",
                file: path,
                pointer: error.pointer,
                location: error.location
            )
        }
        // Errors and warnings say where: the file, the line and column, and the JSON pointer.
        func problem(_ message: String, at pointer: String) -> ContainerError {
            ContainerError(
                .invalidStructure,
                message,
                file: path,
                pointer: pointer,
                location: document.locate(pointer)
            )
        }
        func warning(_ message: String, at pointer: String, key: Bool = false) -> Warning {
            Warning(message, pointer: pointer, location: key ? document.locateKey(pointer) : document.locate(pointer))
        }
        guard document.syntax == .json else {
            throw problem("configuration must be json, not a property list", at: "")
        }
        guard case .object(let map) = document.value else {
            throw problem("configuration must be a json object, not \(document.value.typeName)", at: "")
        }
        let known = Set(catalog.map { $0.description.id })
        func strings(_ key: String) throws(ContainerError) -> [String] {
            let pointer = JSONPointer.appending("", key)
            guard case .array(let items)? = map[key] else {
                throw problem(
                    "'\(key)' must be an array of strings, not \(map[key]?.typeName ?? "nothing")",
                    at: pointer
                )
            }
            var out: [String] = []
            for (index, item) in items.enumerated() {
                guard let text = item.stringValue else {
                    throw problem(
                        "'\(key)' must be an array of strings; element \(index) is \(item.typeName)",
                        at: JSONPointer.appending(pointer, String(index))
                    )
                }
                out.append(text)
            }
            return out
        }
        func ruleList(_ key: String) throws(ContainerError) -> Set<String> {
            let ids = try strings(key)
            for (index, id) in ids.enumerated() where !known.contains(id) {
                warnings.append(
                    warning(
                        "unknown rule '\(id)' in '\(key)'",
                        at: JSONPointer.appending(JSONPointer.appending("", key), index)
                    )
                )
            }
            return Set(ids)
        }
        for (key, entry) in map {
            let pointer = JSONPointer.appending("", key)
            switch key {
            case "disabled_rules": disabledRules = try ruleList(key)
            case "opt_in_rules": optInRules = try ruleList(key)
            case "only_rules": onlyRules = try ruleList(key)
            case "braze_class_paths": brazeClassPaths = try strings(key)
            case "excluded": excluded = try strings(key)
            case "max_file_size":
                guard case .int(let size) = entry, size > 0 else {
                    throw problem("'max_file_size' must be a positive integer, not \(entry.jsString)", at: pointer)
                }
                maximumFileSize = Int(clamping: size)
            case "report_unused_constants":
                guard case .bool(let flag) = entry else {
                    throw problem("'report_unused_constants' must be a boolean, not \(entry.typeName)", at: pointer)
                }
                reportUnusedConstants = flag
            case "severity":
                guard case .object(let levels) = entry else {
                    throw problem("'severity' must map rule ids to severities, not \(entry.typeName)", at: pointer)
                }
                for (id, level) in levels {
                    let levelPointer = JSONPointer.appending(pointer, id)
                    guard let name = level.stringValue, let severity = LintSeverity(rawValue: name) else {
                        throw problem(
                            "severity of '\(id)' must be \"error\", \"warning\" or \"note\", not '\(level.jsString)'",
                            at: levelPointer
                        )
                    }
                    if !known.contains(id) {
                        warnings.append(warning("unknown rule '\(id)' in 'severity'", at: levelPointer, key: true))
                    }
                    severities[id] = severity
                }
            default:
                warnings.append(warning("unknown configuration key '\(key)'", at: pointer, key: true))
            }
        }
    }

    /// Reads the configuration file at `path`.
    /// - Throws: ``ContainerError`` when the file cannot be read or is not a valid configuration.
    public static func load(
        path: String,
        catalog: [any LintRule.Type] = Linter.builtInRules
    ) throws(ContainerError) -> LintConfiguration {
        let bytes = try ContainerLoader.readFile(path, limit: 1024 * 1024)
        return try LintConfiguration(jsonBytes: bytes, path: path, catalog: catalog)
    }

    /// Whether the rule runs under this configuration.
    public func isEnabled(_ rule: RuleDescription) -> Bool {
        if !onlyRules.isEmpty { return onlyRules.contains(rule.id) }
        if disabledRules.contains(rule.id) { return false }
        return !rule.isOptIn || optInRules.contains(rule.id)
    }

    /// The severity findings of the rule get.
    public func severity(of rule: RuleDescription) -> LintSeverity {
        severities[rule.id] ?? rule.severity
    }

    /// Whether a file met in a directory walk is excluded by one of the ``excluded`` patterns.
    public func isExcluded(_ path: String) -> Bool {
        guard !excluded.isEmpty else { return false }
        let absolute = LintPaths.absolute(path)
        var candidates = [path]
        if let base = baseDirectory, absolute.hasPrefix(base + "/") {
            candidates.append(String(absolute.dropFirst(base.count + 1)))
        }
        for pattern in excluded {
            let glob = GlobPattern(pattern)
            for candidate in candidates where glob.matchesPathOrParent(candidate) { return true }
        }
        return false
    }
}
