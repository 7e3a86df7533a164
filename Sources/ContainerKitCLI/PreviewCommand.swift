import ContainerKit
import ContainerKitBraze
import Foundation

/// `containerkit preview <preview-url> (--server <base-url> | --drafts <dir>) [--events <file.jsonl> | -]
/// [--format text|json]`
///
/// Loads the draft a GTM preview URL names and runs data-layer pushes against it in debug mode, printing
/// for each push what fired, what did not and why, the variables and the data layer.
struct PreviewCommand {
    static let spec = CommandSpec(
        name: "preview",
        synopsis: [
            "<preview-url> (--server <base-url> | --drafts <dir>)",
            "[--events <file.jsonl> | -] [--context key=value]... [--format text|json]",
            "[--log-level <level>] [--braze <class path>]... [--braze-user <external id>]",
            "[--time-key <key>] [--session-key <key>]",
        ],
        summary: """
            Loads the draft container that a GTM preview URL names
              tagmanager.c.<app id>://preview/p?id=GTM-XXXX&gtm_auth=<token>&gtm_preview=<digits>[&gtm_debug=x]
            and runs data-layer pushes against it in debug mode, one JSON object per input line (default: standard
            input). For every push it prints its trace: the data-layer keys it changed, the tags that fired (with
            their arguments), the tags that did not fire and why (the failing condition with both operands' values),
            the variables used, the records, and the data layer after the push (the same trace as run --explain).
            A line that is a JSON array is a gtag command: after a consent command (["consent", "update", {...}])
            the session's consent state is shown, and tags it blocks are shown blocked_by_consent; an event command
            (["event", name, {...}]) is pushed as gtm.js makes it, {event, eventModel}. An input that is one
            JSON array of pushes (a data-layer dump from a browser's console) is read as its pushes, one a line.
            The auth token is sent to the server only; it is never printed.
            """,
        options: [
            .valued(
                "--server",
                "<base-url>",
                "fetch the draft from <base-url>/r?id=…&gtm_auth=…&gtm_preview=… (http or",
                "https; this is the only host contacted, redirects are not followed)"
            ),
            .valued("--drafts", "<dir>", "read the draft from <dir>/<container id>.json or .plist instead"),
            .events(),
            .context(),
            .format(
                ["text", "json"],
                help: [
                    "a timeline for people (default) or one JSON object per input line: the",
                    "push's trace (see Docs/Preview.md)",
                ]
            ),
            .logLevel(default: .warning),
            .valued(
                "--braze",
                "<class path>",
                "run the Braze provider for this class path (repeatable); its records are",
                "shown, never sent; without a user its tags are pending"
            ),
            .valued("--braze-user", "<external id>", "the session's Braze user (implies --braze's default paths)"),
            .timeKey("its event happened: its records carry it (as run --time-key reads it)"),
            .sessionKey(),
        ],
        exitCodes: """
            0 success, 1 the events file cannot be read or the output written, 2 some input lines failed,
              3 malformed preview URL or container ID, 4 auth token refused (HTTP 401, 403, 404) or no such draft,
              5 server unreachable or failing, 6 the draft does not load, 64 usage error
            """
    )
    static var usage: String { spec.usage }

    /// The exit codes `preview` adds to ``ExitCode``.
    enum PreviewExitCode {
        static let malformedURL: Int32 = 3
        static let refused: Int32 = 4
        static let unreachable: Int32 = 5
        static let invalidDraft: Int32 = 6
    }

    struct Options {
        var url: String
        var source: any PreviewSource
        var eventsPath: String
        var json: Bool
        var logLevel: LogLevel
        /// The session's client context (the host's, with `--context` applied).
        var context = ClientContext.host
        var brazeClassPaths: [String] = []
        var brazeUser: String?
        var timeKey: String?
        var sessionKey: String?

        var usesBraze: Bool { !brazeClassPaths.isEmpty || brazeUser != nil }
    }

    static func parse(_ arguments: [String]) throws(UsageError) -> Options {
        let args = try spec.parse(arguments)
        guard args.positionals.count == 1 else {
            throw UsageError(args.positionals.isEmpty ? "missing <preview-url>" : "expected one preview url")
        }
        let source: any PreviewSource
        switch (args.value("--server"), args.value("--drafts")) {
        case (let server?, nil):
            guard let base = URL(string: server) else { throw UsageError("--server '\(server)' is not a url") }
            do throws(ContainerFetchError) {
                source = try HTTPContainerSource(base: base)
            } catch {
                throw UsageError("--server: \(error.message)")
            }
        case (nil, let directory?):
            source = DirectoryContainerSource(directory: directory)
        case (nil, nil):
            throw UsageError("give --server <base-url> or --drafts <dir>")
        case (_?, _?):
            throw UsageError("give either --server or --drafts, not both")
        }
        var options = Options(
            url: args.positionals[0],
            source: source,
            eventsPath: args.value("--events") ?? "-",
            json: args.format == "json",
            logLevel: args.logLevel
        )
        options.context = try args.context()
        options.brazeClassPaths = args.values("--braze")
        options.brazeUser = args.value("--braze-user")
        if options.brazeUser?.isEmpty == true { throw UsageError("--braze-user needs a non-empty external id") }
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
        let request: PreviewRequest
        do throws(PreviewURLError) {
            let url = try PreviewURL(parsing: options.url)
            guard case .enter(let enter) = url.action else {
                output.error("containerkit preview: '\(url)' is an exit-preview url; it names no draft")
                return PreviewExitCode.malformedURL
            }
            request = enter
        } catch {
            output.error("containerkit preview: invalid preview url: \(error.message)")
            return PreviewExitCode.malformedURL
        }

        let manager = TagManager(
            logger: CommandLogger(output: output, minimumLevel: options.logLevel),
            defaultContext: options.context,
            lifecycle: LifecycleConfiguration(preview: options.source)
        )
        let draft: Container
        do throws(ContainerFetchError) {
            draft = try await manager.enterPreview(request)
        } catch {
            output.error("containerkit preview: cannot load the draft of '\(request.containerID)': \(error.message)")
            return exitCode(for: error)
        }

        guard var input = PushInput.open(options.eventsPath, command: "preview", output: output) else {
            return ExitCode.failure
        }
        input.keys = PushInput.Keys(time: options.timeKey, session: options.sessionKey)
        defer { input.close() }
        if !options.json {
            let counts = draft.counts
            output.print(
                "preview \(draft.id) draft version \(draft.version) (\(draft.format.rawValue)) from \(options.source)"
                    + "\(request.debug ? ", gtm_debug" : ""): "
                    + "\(counts.tags) tags, \(counts.macros) variables, \(counts.rules) rules"
                    // A legacy default container is its values (read with the typed getters).
                    + (draft.format == .flatValues ? ", \(draft.variableNames.count) values" : "")
            )
        }
        if options.usesBraze {
            // The records are shown in the timeline, never sent: a sink that keeps nothing.
            let shown = try? BrazeSetup(
                sink: .standardOutput,
                queueDirectory: nil,
                environment: [:],
                logger: CommandLogger(output: output, minimumLevel: options.logLevel)
            )
            if let shown {
                BrazeTagProvider(sink: shown.sink).register(
                    on: manager,
                    classPaths: options.brazeClassPaths.isEmpty
                        ? BrazeTagProvider.defaultClassPaths : options.brazeClassPaths
                )
            }
        }
        // A fixed session ID: the trace names it, and the same input prints the same output.
        let session = manager.makeDataLayer(sessionID: "preview", debug: true)
        if let user = options.brazeUser { BrazeTagProvider.setUser(.externalID(user), on: session) }
        var sessions = CommandSessions(manager: manager, first: session, keyed: options.sessionKey != nil, debug: true)
        var pageStart = PageStart(applies: draft.platform == .web)
        var failedLines = 0
        for line in input {
            if case .command(let lineNumber, let command, let arguments) = line {
                await ReportFormatting.pushCommand(
                    command,
                    arguments: arguments,
                    label: sessions.label(lineNumber),
                    sessionName: sessions.jsonName,
                    into: sessions.current,
                    json: options.json,
                    output: output
                )
                continue
            }
            if case .skipped(let lineNumber, let arguments, let reason) = line {
                ReportFormatting.skippedCommand(
                    arguments,
                    reason: reason,
                    label: sessions.label(lineNumber),
                    sessionName: sessions.jsonName,
                    json: options.json,
                    output: output
                )
                continue
            }
            guard case .push(let lineNumber, let message, let eventID, let eventTime, let name) = line else {
                if case .invalid(_, let problem) = line {
                    output.error("containerkit preview: \(problem)")
                    if options.json { output.print(JSONWriter.string(problem.jsonValue)) }
                }
                failedLines += 1
                continue
            }
            let session = sessions.select(name)
            // A web page's first event: gtm.js's own events before it, traced with the line.
            let plan = pageStart.plan(for: message, page: PageStart.page(session), inDump: lineNumber.index != nil)
            PageStart.follow(plan.pageURL, in: session)
            var started: [PushTrace] = []
            for event in plan.before {
                let result = await session.push(event, eventTime: eventTime, tracing: true)
                if let trace = result.trace { started.append(trace) }
            }
            // A line whose `message_id` the session has seen is traced as a duplicate, as `run --explain` shows it.
            let result = await session.push(plan.message, eventID: eventID, eventTime: eventTime, tracing: true)
            guard let trace = result.trace else { continue }  // a debug session traces every push
            ReportFormatting.print(
                trace,
                label: sessions.label(lineNumber),
                json: options.json,
                output: output,
                pageStart: started,
                notEvaluated: plan.notEvaluated
            )
        }
        return failedLines > 0 ? ExitCode.failedInput : ExitCode.success
    }

    /// 4 for a refused token or a missing draft, 6 for a draft that does not load, 3 for a bad ID, else 5.
    static func exitCode(for error: ContainerFetchError) -> Int32 {
        if error.isRefusal { return PreviewExitCode.refused }
        switch error.code {
        case .invalidContainer, .tooLarge: return PreviewExitCode.invalidDraft
        case .invalidContainerID: return PreviewExitCode.malformedURL
        default: return PreviewExitCode.unreachable
        }
    }
}
