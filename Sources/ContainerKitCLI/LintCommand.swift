import ContainerKit
import ContainerKitBrazeLint
import ContainerKitLint

/// `containerkit lint [PATH...] [--reporter text|json|sarif|github] [--strict] [--config <file>] [--list-rules]`
///
/// The report goes to standard output, the summary ("3 errors, 1 warning in 2 files") to standard error.
struct LintCommand {
    static let spec = CommandSpec(
        name: "lint",
        synopsis: [
            "[<path>...] [--format text|json|sarif|github] [--strict] [--config <file>]",
            "[--quiet]",
        ],
        otherForms: ["--list-rules [--format text|markdown]"],
        summary: """
            Checks container files (JSON and property lists in all three formats) without running them.
            Directories are searched for *.json, *.plist and legacy GTM-XXXX / gtm_xxxx files (default: Containers/).
            """,
        options: [
            CommandOption(
                name: "--format",
                aliases: ["--reporter"],
                value: "<name>",
                help: [
                    "text (default), json, sarif or github; with --list-rules, text (default) or",
                    "markdown",
                ]
            ),
            .flag("--strict", "report warnings as errors"),
            .valued("--config", "<file>", "use this configuration instead of the nearest .containerkit-lint.json"),
            .flag("--quiet", "do not print the summary line on standard error"),
            .flag("--list-rules", "print the rule catalog (--format markdown gives Docs/LintRules.md)"),
        ],
        exitCodes: """
            0 no errors (warnings allowed), 2 at least one error, 1 a path could not be read, a
                        configuration is invalid or the report could not be written, 64 usage error
            """
    )
    static var usage: String { spec.usage }

    struct Options {
        var paths: [String]
        var reporter: any LintReporter
        var strict: Bool
        var quiet: Bool
        var configPath: String?
        var listRules: Bool
        var catalogFormat: String
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        let args = try spec.parse(arguments)
        // Any case, as the other commands' choices (`--format SARIF`).
        let reporterName = args.value("--format")?.lowercased()
        let listRules = args.flag("--list-rules")
        var catalogFormat = "text"
        var reporter: any LintReporter = TextReporter()
        if listRules {
            catalogFormat = reporterName ?? "text"
            guard ["text", "markdown"].contains(catalogFormat) else {
                throw UsageError("--list-rules prints text or markdown, not '\(catalogFormat)'")
            }
            guard args.positionals.isEmpty else { throw UsageError("--list-rules takes no paths") }
        } else if let reporterName {
            guard let named = LintReporters.reporter(named: reporterName) else {
                let names = LintReporters.all.map { $0.identifier }.joined(separator: ", ")
                throw UsageError("unknown reporter '\(reporterName)'; expected one of \(names)")
            }
            reporter = named
        }
        return Options(
            paths: args.positionals.isEmpty ? ["Containers"] : args.positionals,
            reporter: reporter,
            strict: args.flag("--strict"),
            quiet: args.flag("--quiet"),
            configPath: args.value("--config"),
            listRules: listRules,
            catalogFormat: catalogFormat
        )
    }

    static func run(_ arguments: [String], output: CommandOutput) async -> Int32 {
        let options: Options
        do { options = try parse(arguments) } catch {
            output.error(spec.usageError(error.message))
            return ExitCode.usage
        }
        if options.listRules {
            let rules = Linter.allRules.map { $0.description }
            let catalog =
                options.catalogFormat == "markdown" ? LintRuleCatalog.markdown(rules) : LintRuleCatalog.text(rules)
            output.print(catalog.hasSuffix("\n") ? String(catalog.dropLast()) : catalog)
            return ExitCode.success
        }
        let resolver: LintConfigurationResolver
        if let configPath = options.configPath {
            do {
                resolver = LintConfigurationResolver(
                    fixed: try LintConfiguration.load(path: configPath, catalog: Linter.allRules),
                    catalog: Linter.allRules
                )
            } catch {
                output.error("containerkit lint: cannot use configuration: \(error)")
                return ExitCode.failure
            }
        } else {
            resolver = LintConfigurationResolver(catalog: Linter.allRules)
        }
        let run = lint(options.paths, resolver: resolver)
        for message in run.problems { output.error("containerkit lint: \(message)") }
        let report = options.strict ? run.report.strict() : run.report
        let text = options.reporter.render(report)
        if !text.isEmpty { output.print(text) }
        if !options.quiet { output.error(run.summary(of: report)) }
        if run.failed { return ExitCode.failure }
        return report.count(.error) > 0 ? ExitCode.findings : ExitCode.success
    }

    /// What linting some paths gave: the report, messages for standard error, and whether the tool failed.
    struct Run {
        var report: LintReport
        var problems: [String]
        /// How many paths and files could not be read (each has its message in ``problems``).
        var unread: Int
        /// How many paths (files, or directories whose walk needed it) were not linted because their
        /// configuration file is invalid (its error is in ``problems`` once).
        var unconfigured = 0

        var failed: Bool { unread > 0 || unconfigured > 0 }

        /// The summary line: the report's, and how many paths could not be read or were not linted for a bad
        /// configuration, so that "no problems" never stands alone after a file that was not linted.
        func summary(of report: LintReport) -> String {
            var out = report.summary
            if unread > 0 { out += "; \(unread) \(unread == 1 ? "path" : "paths") could not be read" }
            if unconfigured > 0 {
                out +=
                    "; \(unconfigured) \(unconfigured == 1 ? "path was" : "paths were") not linted: "
                    + "\(unconfigured == 1 ? "its" : "their") configuration is invalid"
            }
            return out
        }
    }

    /// Lints every file under `paths`, each with the configuration the resolver finds for it.
    static func lint(_ paths: [String], resolver: LintConfigurationResolver) -> Run {
        var problems: [String] = []
        var unread = 0
        var unconfigured = 0
        var badConfigurations = Set<String>()
        // A bad configuration is said once, however many files it governs.
        func configurationFailed(_ error: ContainerError) {
            if badConfigurations.insert(error.description).inserted { problems.append(error.description) }
            unconfigured += 1
        }
        var files: [String] = []
        for path in paths {
            // The walk asks for configurations (their `excluded` patterns): their errors are told apart from paths'.
            var configurationError: ContainerError?
            do throws(ContainerError) {
                files += try LintPaths.collect([path]) { file throws(ContainerError) -> LintConfiguration in
                    do throws(ContainerError) { return try resolver.configuration(for: file) } catch {
                        configurationError = error
                        throw error
                    }
                }
            } catch {
                if let configurationError {
                    configurationFailed(configurationError)
                } else {
                    problems.append(error.message)
                    unread += 1
                }
            }
        }
        var linters: [String: Linter] = [:]
        var warned = Set<String>()
        var findings: [LintFinding] = []
        var linted: [String] = []
        for file in files {
            let configuration: LintConfiguration
            do { configuration = try resolver.configuration(for: file) } catch {
                configurationFailed(error)
                continue
            }
            do {
                let key = configuration.path ?? ""
                if warned.insert(key).inserted {
                    // `path:3:5: unknown configuration key 'colour'`, as the findings are placed.
                    for warning in configuration.warnings {
                        problems.append(
                            "\(configuration.path ?? "configuration"):\(warning.location == nil ? " " : "")\(warning)"
                        )
                    }
                }
                let linter = linters[key] ?? Linter(configuration: configuration, catalog: Linter.allRules)
                linters[key] = linter
                findings += try linter.lint(path: file)
                linted.append(file)
            } catch {
                problems.append(error.description)
                unread += 1
            }
        }
        return Run(
            report: LintReport(findings: findings, files: linted, rules: Linter.allRules.map { $0.description }),
            problems: problems,
            unread: unread,
            unconfigured: unconfigured
        )
    }
}
