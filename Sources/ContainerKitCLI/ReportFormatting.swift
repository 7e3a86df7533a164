import ContainerKit

/// The JSON and text renderings of evaluation results that `run` and `preview` share.
enum ReportFormatting {
    /// The tag as ``FiredTag/jsonValue`` has it.
    static func json(_ tag: FiredTag) -> Value { tag.jsonValue }

    /// The event name of a pushed message, as the output's `event` field shows it.
    static func eventField(_ message: ValueMap) -> Value {
        switch message["event"] {
        case nil, .undefined?, .null?: return .null
        case let value?: return .string(value.jsString)
        }
    }

    /// One person-readable line for a fired tag.
    static func text(_ tag: FiredTag) -> String {
        let id = tag.tagID.map { "tag \($0)" } ?? "tag #\(tag.index)"
        let name = tag.name.map { " '\($0)'" } ?? ""
        let target = tag.classPath.map { " → \($0)" } ?? ""
        var status = tag.status.name
        if let why = tag.status.message { status += ": \(why)" }
        return "  \(id)\(name) \(tag.function)\(target) [\(status)]"
    }

    /// The parameters of a fired tag, one `key = value` per line, indented.
    static func parameterLines(_ parameters: ValueMap) -> [String] {
        parameters.map { "      \($0.key) = \(JSONWriter.string($0.value))" }
    }

    /// `gtag consent default {"ad_storage":"denied"}`: a command line's title.
    static func commandTitle(_ arguments: [Value]) -> String {
        "gtag "
            + arguments.map { value in
                if case .string(let text) = value, !text.isEmpty, !text.contains(" ") { return text }
                return JSONWriter.string(value)
            }.joined(separator: " ")
    }

    /// The session's consent state, one line: `consent: ad_storage denied (default, ES); …`.
    static func consentLine(_ state: ConsentState) -> String {
        guard !state.isEmpty else { return "  consent: nothing set (every type granted)" }
        let parts = state.entries.map { entry -> String in
            var how: [String] = []
            if let granted = entry.updateGranted { how.append("update " + (granted ? "granted" : "denied")) }
            if let granted = entry.defaultGranted {
                how.append("default " + (granted ? "granted" : "denied") + (entry.region.map { " for \($0)" } ?? ""))
            }
            let state = entry.granted.map { $0 ? "granted" : "denied" } ?? "granted (no default applies)"
            return "\(entry.type) \(state)" + (how.isEmpty ? "" : " (\(how.joined(separator: ", ")))")
        }
        return "  consent: " + parts.joined(separator: "; ")
    }

    /// Pushes a command line's consent command into `session` and prints it with the consent state after it:
    /// `{"command": […], "consent": {…}}` (and `"session"`, `sessionName`, when given) in JSON, else the
    /// command's title after the line's `label` and ``consentLine(_:)``. Traced (`preview`,
    /// `run --explain`: `tracing`, or a debug session), it prints the push's trace too — what the command changed,
    /// per consent type, before → after (``PushTrace/consent``): as `"trace"` in JSON, else its lines.
    static func pushCommand(
        _ command: ConsentCommand,
        arguments: [Value],
        label: String,
        sessionName: Value? = nil,
        into session: DataLayer,
        tracing: Bool = false,
        json: Bool,
        output: CommandOutput
    ) async {
        let trace = await session.push(command, tracing: tracing).trace
        let state = session.consent
        if json {
            output.print(JSONWriter.string(commandJSON(arguments, state: state, trace: trace, session: sessionName)))
        } else {
            output.print("")
            output.print("\(label): \(commandTitle(arguments))")
            for text in trace?.textLines ?? [] { output.print(text) }
            output.print(consentLine(state))
        }
    }

    /// Prints a command line that is skipped (a Google tag's command, ``PushInput/Line/skipped(number:arguments:reason:)``):
    /// `{"command": […], "skipped": reason}` (and `"session"`, when given) in JSON, else the command's title after the
    /// line's `label` and `  skipped: reason`.
    static func skippedCommand(
        _ arguments: [Value],
        reason: String,
        label: String,
        sessionName: Value? = nil,
        json: Bool,
        output: CommandOutput
    ) {
        if json {
            var map = ValueMap(minimumCapacity: 3)
            map["command"] = .array(arguments)
            if let sessionName { map["session"] = sessionName }
            map["skipped"] = .string(reason)
            output.print(JSONWriter.string(.object(map)))
        } else {
            output.print("")
            output.print("\(label): \(commandTitle(arguments))")
            output.print("  skipped: \(reason)")
        }
    }

    /// What `--format json` prints for a command line: `{"command": […], "consent": {…}}`, and `"trace"` (the
    /// ``PushTrace`` JSON) when the push was traced.
    static func commandJSON(
        _ arguments: [Value],
        state: ConsentState,
        trace: PushTrace? = nil,
        session: Value? = nil
    ) -> Value {
        var map = ValueMap(minimumCapacity: 4)
        map["command"] = .array(arguments)
        if let session { map["session"] = session }
        map["consent"] = state.jsonValue
        if let trace, let value = try? Value(json: trace.json()) { map["trace"] = value }
        return .object(map)
    }

    /// Prints the trace of an input line: one JSON object (``PushTrace/json()``), or the line's title (`label`, "line
    /// 3") and ``PushTrace/textLines``. `preview` and `run --explain` both print with this.
    /// Prints a line's trace, after the traces of the events gtm.js evaluated before it (``PageStart``): in JSON
    /// they are the trace's `page_start` member, so that each input line still has one object.
    /// `notEvaluated`: why the line's event was not evaluated (a second `gtm.js` of a page, pushed without its
    /// event): its JSON member `not_evaluated`, a line of its own in text.
    static func print(
        _ trace: PushTrace,
        label: String,
        json: Bool,
        output: CommandOutput,
        pageStart: [PushTrace] = [],
        notEvaluated: String? = nil
    ) {
        if json {
            guard !pageStart.isEmpty || notEvaluated != nil, case .object(var object)? = try? Value(json: trace.json())
            else {
                output.print(trace.json())
                return
            }
            if !pageStart.isEmpty {
                object[PageStart.jsonKey] = .array(pageStart.compactMap { try? Value(json: $0.json()) })
            }
            if let notEvaluated { object[PageStart.repeatedJSONKey] = .string(notEvaluated) }
            output.print(JSONWriter.string(.object(object)))
            return
        }
        for before in pageStart { print(before, label: PageStart.label(label), json: false, output: output) }
        let title = trace.event.map { "event \(JSONWriter.string(.string($0)))" } ?? "push (no event)"
        output.print("")
        output.print("\(label): \(title)")
        if let notEvaluated { output.print("  not evaluated: \(notEvaluated)") }
        for text in trace.textLines { output.print(text) }
    }
}
