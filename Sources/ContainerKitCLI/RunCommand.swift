import ContainerKit
import ContainerKitBraze
import Foundation

/// `containerkit run <container-file> [--events <file.jsonl> | -] [--context key=value]... [--format text|json]`
///
/// Each input line is one data-layer push; with `--format json` exactly one JSON object is printed per line
/// (a line that is not a push prints `{"line": n, "error": {"code", "message", "column"}}` in its place).
struct RunCommand {
    static let spec = CommandSpec(
        name: "run",
        synopsis: [
            "<container-file> [--events <file.jsonl> | -] [--context key=value]...",
            "[--format text|json] [--explain] [--log-level <level>]",
            "[--braze <class path>]... [--sink stdout|jsonl:<path>|braze:<endpoint>]",
            "[--queue <dir>] [--braze-user <external id>] [--braze-user-event <event>]",
            "[--time-key <key>] [--session-key <key>]",
        ],
        summary: """
            Runs a container over data-layer pushes, one JSON object per input line (default: standard input).
            The object's `event` names the event; its other keys are the event's parameters. A line that is a JSON
            array is a gtag command, run as gtm.js runs it: ["consent", "default"|"update", {...}] (the visitor's
            location for a default's "region" is --context country=ES --context region=ES-MD), ["event", name,
            {...}] (pushed as {event, eventModel}), ["set", {...}]; config, js and get are skipped. A `message_id`
            string is the push's event ID (not merged): a line whose ID the session has seen is a duplicate,
            reported with the original's outcome and not applied again. An input that is one JSON array of pushes
            (a data-layer dump: copy(JSON.stringify(dataLayer)) in a browser's console) is read as its pushes.
            A web container's session starts as gtm.js starts a page: gtm.init_consent and gtm.init are evaluated
            before its first event (shown with that line; in JSON its "page_start").
            """,
        options: [
            .events(),
            .context(),
            .format(["text", "json"], help: ["output for people (default) or one JSON object per input line"]),
            .flag("--explain", "print each push's trace: why each tag fired or not (as preview does)"),
            .logLevel(default: .warning),
            .valued(
                "--braze",
                "<class path>",
                "register the Braze tag provider for this class path (repeatable;",
                "--sink or --queue alone register Braze's default class paths)"
            ),
            .valued(
                "--sink",
                "<sink>",
                "where Braze records go: stdout (shown in this output, the default),",
                "jsonl:<path>, or braze:<REST endpoint> (key from BRAZE_REST_API_KEY)"
            ),
            .valued(
                "--braze-objects-per-request",
                "<limit>",
                "with --sink braze: the most objects one /users/track request carries:",
                "<n> in all (default 75) or <n>-each of attributes, events and",
                "purchases (75-each: Braze's legacy rate limits; 1 to 75)"
            ),
            .valued(
                "--queue",
                "<dir>",
                "put a crash-safe queue in front of the sink: an event's output is",
                "printed once its records are durable; pending records from an earlier",
                "run with the same queue are delivered first"
            ),
            .valued(
                "--braze-user",
                "<external id>",
                "the session's Braze user from the start; without one (and until a",
                "changeUser tag names one) Braze tags are pending: their records wait"
            ),
            .valued(
                "--braze-user-event",
                "<event>",
                "a push of <event> names the session's Braze user, its 'externalUserId'",
                "parameter, before it is evaluated (as a host would; for containers",
                "without a changeUser tag): the push releases the pending records"
            ),
            .timeKey("its event happened: its Braze records carry it (for a recorded log)"),
            .sessionKey(),
        ],
        exitCodes: """
            0 success, 1 the container could not be loaded or the output written, 2 some input lines failed,
                        3 records were dropped at delivery (refused by the destination, or given up on),
                        64 usage error
            """
    )
    static var usage: String { spec.usage }

    struct Options {
        var containerPath: String
        var eventsPath: String
        var context: ClientContext
        var json: Bool
        var explain = false
        var logLevel: LogLevel
        var brazeClassPaths: [String] = []
        var sink: BrazeSetup.SinkSpec?
        var objectLimit: BrazeUsersTrackDestination.ObjectLimit?
        var queueDirectory: String?
        var brazeUser: String?
        var brazeUserEvent: String?
        var timeKey: String?
        var sessionKey: String?

        var usesBraze: Bool {
            !brazeClassPaths.isEmpty || sink != nil || queueDirectory != nil || brazeUser != nil
                || brazeUserEvent != nil
        }
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        let args = try spec.parse(arguments)
        guard args.positionals.count == 1 else {
            throw UsageError(args.positionals.isEmpty ? "missing <container-file>" : "expected one container file")
        }
        var options = Options(
            containerPath: args.positionals[0],
            eventsPath: args.value("--events") ?? "-",
            context: try args.context(),
            json: args.format == "json",
            logLevel: args.logLevel
        )
        options.explain = args.flag("--explain")
        options.brazeClassPaths = args.values("--braze")
        if let sink = args.value("--sink") { options.sink = try BrazeSetup.SinkSpec(parsing: sink) }
        if let limit = args.value("--braze-objects-per-request") {
            guard case .braze? = options.sink else {
                throw UsageError("--braze-objects-per-request applies to --sink braze:<REST endpoint> only")
            }
            do throws(ContainerError) {
                options.objectLimit = try BrazeUsersTrackDestination.ObjectLimit(parsing: limit)
            } catch {
                throw UsageError("--braze-objects-per-request: \(error.message)")
            }
        }
        options.queueDirectory = args.value("--queue")
        options.brazeUser = args.value("--braze-user")
        options.brazeUserEvent = args.value("--braze-user-event")
        if options.brazeUser?.isEmpty == true { throw UsageError("--braze-user needs a non-empty external id") }
        options.timeKey = try args.timeKey()
        options.sessionKey = try args.sessionKey()
        return options
    }

    static func run(_ arguments: [String], output: CommandOutput, environment: [String: String]) async -> Int32 {
        let options: Options
        do { options = try parse(arguments) } catch {
            output.error(spec.usageError(error.message))
            return ExitCode.usage
        }
        let logger = CommandLogger(output: output, minimumLevel: options.logLevel)
        let container: Container
        do {
            let loader = ContainerLoader()
            let document = try await loader.readDocument(path: options.containerPath)
            // A repeated top-level key ("resource" twice) silently drops a whole part of the container.
            for duplicate in document.duplicateKeys where duplicate.pointer.isEmpty {
                logger.warning(
                    "\(options.containerPath):\(duplicate.location.line):\(duplicate.location.column): top-level key "
                        + "'\(duplicate.key)' appears more than once; only the last value is used"
                )
            }
            container = try loader.compile(document)
        } catch {
            output.error("containerkit run: cannot load container: \(error)")
            return ExitCode.failure
        }
        // A tag ContainerKit does not run (a GA4 event) is shown with the fields it would send.
        let manager = TagManager(logger: logger, defaultContext: options.context, evaluatesUnsupportedTags: true)
        manager.add(container)
        var braze: BrazeSetup?
        if options.usesBraze {
            do {
                let setup = try BrazeSetup(
                    sink: options.sink ?? .standardOutput,
                    objectLimit: options.objectLimit,
                    queueDirectory: options.queueDirectory,
                    environment: environment,
                    logger: logger
                )
                BrazeTagProvider(sink: setup.sink).register(
                    on: manager,
                    classPaths: options.brazeClassPaths.isEmpty
                        ? BrazeTagProvider.defaultClassPaths : options.brazeClassPaths
                )
                braze = setup
            } catch {
                output.error("containerkit run: \(error)")
                return ExitCode.failure
            }
        }
        // A fixed session ID with --explain: the trace names it, and the same input prints the same output.
        let session = options.explain ? manager.makeDataLayer(sessionID: "run") : manager.makeDataLayer()
        if let user = options.brazeUser { BrazeTagProvider.setUser(.externalID(user), on: session) }
        let sessions = CommandSessions(manager: manager, first: session, keyed: options.sessionKey != nil)

        guard var input = PushInput.open(options.eventsPath, command: "run", output: output) else {
            return ExitCode.failure
        }
        input.keys = PushInput.Keys(time: options.timeKey, session: options.sessionKey)
        defer { input.close() }
        if !options.json {
            let counts = container.counts
            output.print(
                "container \(container.id) version \(container.version) "
                    + "(\(container.format.rawValue), \(container.platform.rawValue)): "
                    + "\(counts.tags) tags, \(counts.macros) variables, \(counts.rules) rules"
                    // A legacy default container is its values (read with the typed getters).
                    + (container.format == .flatValues ? ", \(container.variableNames.count) values" : "")
            )
        }
        // The front delivers while the lines are processed; its graceful shutdown at the end drains it (bounded).
        let front = braze?.front
        let status = await withTaskGroup(of: Void.self) { group in
            if let front {
                group.addTask {
                    do {
                        try await front.run()
                    } catch {
                        output.error("containerkit run: \(error)")
                    }
                }
            }
            let status = await processLines(
                input,
                sessions: sessions,
                pageStart: PageStart(applies: container.platform == .web),
                options: options,
                showsRecords: braze != nil,
                output: output
            )
            front?.gracefulShutdown()
            await group.waitForAll()
            return status
        }
        // The drain is over (the group waited for it): records the destination refused, or that a memory
        // queue gave up on, are lost, which a script must be able to see.
        if status == ExitCode.success, let dropped = braze?.droppedRecords(), dropped > 0 {
            output.error("containerkit run: \(dropped) records were dropped at delivery (see the messages above)")
            return ExitCode.recordsDropped
        }
        return status
    }

    private static func processLines(
        _ input: PushInput,
        sessions: CommandSessions,
        pageStart: PageStart,
        options: Options,
        showsRecords: Bool,
        output: CommandOutput
    ) async -> Int32 {
        var sessions = sessions
        var pageStart = pageStart
        var failedLines = 0
        for line in input {
            let lineNumber: PushInput.Place
            let message: ValueMap
            let eventID: String?
            let eventTime: Date?
            let session: DataLayer
            switch line {
            case .invalid(_, let problem):
                output.error("containerkit run: \(problem)")
                // JSON output keeps one object per input line: the bad line gets an error object.
                if options.json { output.print(JSONWriter.string(problem.jsonValue)) }
                failedLines += 1
                continue
            case .command(let number, let command, let arguments):
                // A command is the current session's: the session of the line before.
                await ReportFormatting.pushCommand(
                    command,
                    arguments: arguments,
                    label: sessions.label(number),
                    sessionName: sessions.jsonName,
                    into: sessions.current,
                    tracing: options.explain,
                    json: options.json,
                    output: output
                )
                continue
            case .skipped(let number, let arguments, let reason):
                ReportFormatting.skippedCommand(
                    arguments,
                    reason: reason,
                    label: sessions.label(number),
                    sessionName: sessions.jsonName,
                    json: options.json,
                    output: output
                )
                continue
            case .push(let number, let pushed, let id, let time, let name):
                lineNumber = number
                message = pushed
                eventID = id
                eventTime = time
                session = sessions.select(name)
            }
            if let event = options.brazeUserEvent, case .string(event)? = message["event"] {
                nameBrazeUser(from: message, line: lineNumber, session: session, output: output)
            }
            // A web page's first event: gtm.js's own events before it, shown with the line.
            let plan = pageStart.plan(for: message, page: PageStart.page(session), inDump: lineNumber.index != nil)
            PageStart.follow(plan.pageURL, in: session)
            var started: [(message: ValueMap, result: PushResult)] = []
            for event in plan.before {
                var result = await session.push(event, eventID: nil, eventTime: eventTime, tracing: options.explain)
                let what = "\(lineNumber): records of \(ReportFormatting.eventField(event).jsString)"
                guard await awaitDurable(&result, what, output: output) else { return ExitCode.failure }
                started.append((event, result))
            }
            var result = await session.push(
                plan.message,
                eventID: eventID,
                eventTime: eventTime,
                tracing: options.explain
            )
            let notEvaluated = plan.notEvaluated
            if let refusal = result.refusal {
                // A refused push (one that would make the session too large): the event ID was checked as it was read.
                let problem = PushInput.Problem(
                    line: lineNumber.line,
                    index: lineNumber.index,
                    code: refusal.code.rawValue,
                    message: refusal.message
                )
                output.error("containerkit run: \(problem)")
                if options.json { output.print(JSONWriter.string(problem.jsonValue)) }
                failedLines += 1
                continue
            }
            guard await awaitDurable(&result, "\(lineNumber): records", output: output) else {
                return ExitCode.failure
            }
            let label = sessions.label(lineNumber)
            if let trace = result.trace {
                let before = started.compactMap(\.result.trace)
                ReportFormatting.print(
                    trace,
                    label: label,
                    json: options.json,
                    output: output,
                    pageStart: before,
                    notEvaluated: notEvaluated
                )
            } else if options.json {
                var line = jsonLine(message, result, showsRecords: showsRecords, session: sessions.jsonName)
                if let notEvaluated { line[PageStart.repeatedJSONKey] = .string(notEvaluated) }
                if !started.isEmpty {
                    line[PageStart.jsonKey] = .array(
                        started.map { .object(jsonLine($0.message, $0.result, showsRecords: showsRecords)) }
                    )
                }
                output.print(JSONWriter.string(.object(line)))
            } else {
                for (event, result) in started {
                    printTextAndRecords(label: PageStart.label(label), message: event, result: result, output: output)
                }
                printTextAndRecords(label: label, message: message, result: result, output: output)
                if let notEvaluated { output.print("  not evaluated: \(notEvaluated)") }
            }
        }
        return failedLines > 0 ? ExitCode.failedInput : ExitCode.success
    }

    /// Waits until the records of `result` are durable (its output is printed after); `false`, with `what` and the
    /// error printed, when they cannot be.
    private static func awaitDurable(_ result: inout PushResult, _ what: String, output: CommandOutput) async -> Bool {
        do {
            try await result.waitUntilDurable()
            result.noteDurable()
            return true
        } catch {
            output.error("containerkit run: \(what) are not durable: \(error)")
            return false
        }
    }

    /// `--braze-user-event`: the push's `externalUserId` becomes the session's Braze user (an external ID).
    private static func nameBrazeUser(
        from message: ValueMap,
        line: PushInput.Place,
        session: DataLayer,
        output: CommandOutput
    ) {
        let id: String
        switch message["externalUserId"] {
        case .string(let text)? where !text.isEmpty: id = text
        case .int(let number)?: id = String(number)
        default:
            output.error("containerkit run: \(line): the user event has no 'externalUserId' string; no user named")
            return
        }
        BrazeTagProvider.setUser(.externalID(id), on: session)
    }

    /// A push's object of the JSON output: its `event`, its session (with `--session-key`), and its result.
    static func jsonLine(_ message: ValueMap, _ result: PushResult, showsRecords: Bool, session: Value? = nil)
        -> ValueMap
    {
        guard case .object(var object) = result.jsonValue else { return [:] }
        if !showsRecords { object["records"] = nil }
        var line = ValueMap(minimumCapacity: object.count + 2)
        line["event"] = ReportFormatting.eventField(message)
        if let session { line["session"] = session }
        for (key, value) in object { line[key] = value }
        return line
    }

    /// A push's block of the text output, then its records.
    static func printTextAndRecords(label: String, message: ValueMap, result: PushResult, output: CommandOutput) {
        printText(label: label, message: message, result: result, output: output)
        for record in result.outputs.flatMap(\.records) {
            output.print("    → \(JSONWriter.string(record.jsonValue))")
        }
        for record in result.outputs.flatMap(\.pendingRecords) {
            output.print("    ⋯ pending: \(JSONWriter.string(record.jsonValue))")
        }
    }

    static func printText(label: String, message: ValueMap, result: PushResult, output: CommandOutput) {
        let event = ReportFormatting.eventField(message)
        let title = event == .null ? "push (no event)" : "event \(JSONWriter.string(event))"
        output.print("")
        output.print("\(label): \(title)")
        if let original = result.duplicateOf {
            // Not applied again: what the original push fired, as the session remembers it.
            output.print(
                "  duplicate of the push applied at \(original.time) ms (its message_id was seen): not applied"
            )
            for tag in original.fired {
                let id = tag.tagID.map { " (tag_id \($0))" } ?? ""
                let message = tag.message.map { ": \($0)" } ?? ""
                let records = tag.recordIDs.isEmpty ? "" : ", records \(tag.recordIDs.joined(separator: ", "))"
                output.print("  ✓ tag \(tag.index)\(id) \(tag.status)\(message)\(records)")
            }
            return
        }
        let fired = result.fired
        if fired.isEmpty {
            output.print(event == .null ? "  (merged into the data layer)" : "  no tags fired")
        }
        for tag in fired {
            output.print(ReportFormatting.text(tag))
            for parameterLine in ReportFormatting.parameterLines(tag.parameters) { output.print(parameterLine) }
            if !tag.unknownInputs.isEmpty { output.print("      ? \(PushTrace.unknownText(tag.unknownInputs))") }
        }
        // What the push hooks did at the end of the push: the Braze provider's pending records, released.
        for hook in result.hookOutputs {
            let count = hook.records.count
            if count > 0 { output.print("  released \(count) pending record\(count == 1 ? "" : "s")") }
            for problem in hook.problems { output.print("  \(problem)") }
        }
    }
}

/// Exit codes shared by every command.
enum ExitCode {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    /// `lint` and `diff`: the report has findings (errors, or differences of the `--fail-on` kind).
    static let findings: Int32 = 2
    /// `run` and `preview`: every line was read, but some input lines failed (not JSON, not a push).
    static let failedInput: Int32 = 2
    /// `run`: every line was processed, but the delivery dropped records (rejected, or given up on).
    static let recordsDropped: Int32 = 3
    static let usage: Int32 = 64
}

/// Sends ContainerKit's diagnostics to the command's standard error.
struct CommandLogger: DiagnosticLogger {
    let output: CommandOutput
    let minimumLevel: LogLevel
    func write(_ level: LogLevel, _ message: String, metadata: LogMetadata) {
        let context = metadata.isEmpty ? "" : " [\(Self.format(metadata))]"
        output.error("containerkit: \(level): \(message)\(context)")
    }
}
