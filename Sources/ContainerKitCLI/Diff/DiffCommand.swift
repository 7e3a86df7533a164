import ContainerKit
import ContainerKitBraze
import ContainerKitDiff
import Foundation

/// `containerkit diff <old> <new> [--events <file.jsonl>|-] [--context key=value]... [--reporter text|json|github]
/// [--fail-on changes|removed|none]`
///
/// Thin: parses arguments, loads both versions into a ``ContainerDiff``, feeds it the pushes, and hands the
/// outcome to a ``DiffReporter``.
struct DiffCommand {
    static let spec = CommandSpec(
        name: "diff",
        synopsis: [
            "<old-container> <new-container> [--events <file.jsonl> | -]",
            "[--context key=value]... [--format text|json|github]",
            "[--fail-on changes|removed|none] [--max-events <n>] [--seed <n>]",
            "[--braze <class path>]... [--time-key <key>] [--session-key <key>] [--log-level <level>]",
        ],
        summary: """
            Shows what a new container version changes: tags, triggers and variables added, removed or changed
            (by id and name, with the changed fields), and, with --events, what fires differently when the same
            pushes are replayed through both versions (each in its own fresh sessions).
            """,
        options: [
            .events("replay these pushes, one JSON object per line or a data-layer dump (- for standard input)"),
            .context("the client context of both sessions"),
            .format(
                DiffReporter.names,
                help: ["text (default), json, or github (workflow annotations)"],
                aliases: ["--reporter"]
            ),
            CommandOption(
                name: "--fail-on",
                value: "<kind>",
                help: [
                    "which differences make the exit code 2: changes (any, the default),",
                    "removed (tags that no longer fire, removed tags/triggers/variables), none",
                ],
                choices: ["changes", "removed", "none"],
                defaultValue: "changes"
            ),
            .valued(
                "--max-events",
                "<n>",
                "how many differing events to show one by one (default 20; groups and",
                "counts always cover every event)"
            ),
            .valued("--seed", "<n>", "the seed of the random-number variable on both sides (default 0)"),
            .valued(
                "--braze",
                "<class path>",
                "run the Braze tag provider for this class path on both sides (records",
                "are discarded; what it produces and drops is compared)"
            ),
            .timeKey("its event happened; only taken out of the push, as run --time-key does"),
            .sessionKey(),
            .logLevel(default: .error),
        ],
        exitCodes: """
            0 no difference of the --fail-on kind, 2 differences, 1 a container or the events could
            not be read or the report written, 64 usage error
            """
    )
    static var usage: String { spec.usage }

    /// Which differences fail the command.
    enum FailOn: String {
        case changes, removed, none
    }

    struct Options {
        var oldPath: String
        var newPath: String
        var eventsPath: String?
        var context: ClientContext
        var reporter: String
        var failOn: FailOn
        var maximumEvents: Int
        var seed: UInt64
        var logLevel: LogLevel
        var brazeClassPaths: [String] = []
        var timeKey: String?
        var sessionKey: String?
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        let args = try spec.parse(arguments)
        guard args.positionals.count == 2 else {
            throw UsageError(
                args.positionals.count < 2
                    ? "expected <old-container> and <new-container>" : "expected exactly two container files"
            )
        }
        // Like `run`: the host's platform, language and OS unless --context says otherwise.
        let context = try args.context()
        let maximumEvents = args.value("--max-events") ?? "20"
        guard let maximum = Int(maximumEvents), maximum >= 0 else {
            throw UsageError("--max-events needs a whole number, 0 or more, not '\(maximumEvents)'")
        }
        let seedText = args.value("--seed") ?? "0"
        guard let seed = UInt64(seedText) else {
            throw UsageError("--seed needs a whole number from 0 to \(UInt64.max), not '\(seedText)'")
        }
        var options = Options(
            oldPath: args.positionals[0],
            newPath: args.positionals[1],
            eventsPath: args.value("--events"),
            context: context,
            reporter: args.format,
            failOn: FailOn(rawValue: args.value("--fail-on") ?? "") ?? .changes,
            maximumEvents: maximum,
            seed: seed,
            logLevel: args.logLevel
        )
        options.brazeClassPaths = args.values("--braze")
        options.timeKey = try args.timeKey()
        options.sessionKey = try args.sessionKey()
        return options
    }

    static func run(_ arguments: [String], output: CommandOutput) async -> Int32 {
        let options: Options
        do { options = try parse(arguments) } catch {
            output.error(spec.usageError(error.message))
            return ExitCode.usage
        }
        // Positions recorded while reading: every change is then located without rescanning the file.
        let loader = ContainerLoader(options: LoadOptions(recordPositions: true))
        var loaded: [(SourceDocument, Container)] = []
        for (role, path) in [("old", options.oldPath), ("new", options.newPath)] {
            do {
                let document = try await loader.readDocument(path: path)
                loaded.append((document, try loader.compile(document)))
            } catch {
                output.error("containerkit diff: cannot read the \(role) container '\(path)': \(error)")
                return ExitCode.failure
            }
        }
        let diff = ContainerDiff(
            old: loaded[0].1,
            new: loaded[1].1,
            oldDocument: loaded[0].0,
            newDocument: loaded[1].0
        )
        var outcome = DiffOutcome(
            oldPath: options.oldPath,
            newPath: options.newPath,
            eventsPath: options.eventsPath,
            old: diff.old,
            new: diff.new,
            structural: diff.structuralChanges
        )
        var unreadable = 0
        if let eventsPath = options.eventsPath {
            guard var input = PushInput.open(eventsPath, command: "diff", output: output) else {
                return ExitCode.failure
            }
            // Taken out of each push as run takes it: the two evaluate the same data layer (times are not compared).
            input.keys = PushInput.Keys(time: options.timeKey, session: options.sessionKey)
            defer { input.close() }
            var replay = diff.makeReplay(
                context: options.context,
                seed: options.seed,
                logger: CommandLogger(output: output, minimumLevel: options.logLevel),
                configure: DiffCommand.brazeSetup(options.brazeClassPaths)
            )
            let name = eventsPath == "-" ? "standard input" : "'\(eventsPath)'"
            // A web page's first event: gtm.js's own events are replayed before it, in the line's name.
            var pageStart = PageStart(applies: diff.old.platform == .web || diff.new.platform == .web)
            var currentSession = ""
            for line in input {
                switch line {
                case .invalid(_, let problem):
                    output.error("containerkit diff: cannot read events file \(name): \(problem)")
                    unreadable += 1
                case .command(_, let command, _):
                    // A consent command changes both (current) sessions' consent state alike; it fires nothing.
                    await replay.currentSessions.old.push(command)
                    await replay.currentSessions.new.push(command)
                case .skipped:
                    // A Google tag's command changes nothing either container sees.
                    break
                case .push(let number, let message, let eventID, _, let session):
                    if let session { currentSession = session }
                    let plan = pageStart.plan(for: message, page: currentSession, inDump: number.index != nil)
                    let pushes =
                        plan.before.map { (message: $0, eventID: String?.none) } + [
                            (message: plan.message, eventID: eventID)
                        ]
                    for push in pushes {
                        guard
                            let difference = replay.replay(
                                push.message,
                                eventID: push.eventID,
                                line: number.line,
                                session: session,
                                pageURL: plan.pageURL
                            ),
                            outcome.events.count < options.maximumEvents
                        else { continue }
                        outcome.events.append(difference)
                    }
                }
            }
            outcome.replay = replay.summary
        }
        let rendered = DiffReporter.render(outcome, as: options.reporter)
        if !rendered.isEmpty { output.print(rendered) }
        output.error(DiffReporter.closingLine(outcome))
        if unreadable > 0 {
            output.error("containerkit diff: \(unreadable) events line(s) could not be read")
            return ExitCode.failure
        }
        switch options.failOn {
        case .none: return ExitCode.success
        case .changes: return outcome.hasChanges ? ExitCode.findings : ExitCode.success
        case .removed: return outcome.hasRemovals ? ExitCode.findings : ExitCode.success
        }
    }
}

extension DiffCommand {
    /// Registers a Braze tag provider per side (its own IDs, a fixed clock, records discarded), or nothing.
    static func brazeSetup(_ classPaths: [String]) -> (@Sendable (TagManager) -> Void)? {
        guard !classPaths.isEmpty else { return nil }
        return { manager in
            BrazeTagProvider(
                sink: DiscardingSink(),
                clock: { Date(timeIntervalSince1970: 0) },
                idGenerator: AnalyticsRecordIDGenerator(prefix: "diff")
            ).register(on: manager, classPaths: classPaths)
        }
    }

    /// Drops every record: the diff compares what the provider reports per call, not what it delivers.
    struct DiscardingSink: AnalyticsSink {
        func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? { nil }
    }
}

/// Everything `diff` found, for the reporters.
struct DiffOutcome {
    var oldPath: String
    var newPath: String
    var eventsPath: String?
    var old: Container
    var new: Container
    var structural: [StructuralChange]
    /// The first differing events, one by one (at most `--max-events`).
    var events: [EventDifference] = []
    /// The replay totals, when events were given.
    var replay: ReplaySummary?

    /// Whether anything differs.
    var hasChanges: Bool { !structural.isEmpty || (replay?.eventsWithDifferences ?? 0) > 0 }

    /// Whether something is gone: a removed element, a tag paused or left without firing triggers, or a tag
    /// that fired in the old version and not in the new.
    var hasRemovals: Bool {
        let gone = structural.contains { change in
            change.kind == .removed
                || change.fields.contains { field in
                    (field.field == "paused" && field.new == "true")
                        || (field.field == "firing_triggers" && field.new == "none")
                }
        }
        return gone || (replay?.hasRemovals ?? false)
    }
}
