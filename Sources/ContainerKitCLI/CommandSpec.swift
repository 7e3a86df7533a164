import ContainerKit

/// One option of a command: its name, the value it takes (`nil` for a flag), its help text and, for a value
/// from a fixed list, the choices.
struct CommandOption {
    /// `--name`.
    var name: String
    /// Other names for the same option (`--reporter` for `--format`).
    var aliases: [String] = []
    /// The value's placeholder in the help (`<path>|-`); `nil` for a flag.
    var value: String?
    /// The help text, one entry a line.
    var help: [String]
    /// The values the option accepts, when it is a choice.
    var choices: [String]? = nil
    /// The value when the option is not given, for a choice.
    var defaultValue: String? = nil

    /// `--format`: how the command prints its report. `choices` come first in the placeholder; the first
    /// one is the default.
    static func format(_ choices: [String], help: [String], aliases: [String] = []) -> CommandOption {
        CommandOption(
            name: "--format",
            aliases: aliases,
            value: choices.count <= 3 ? choices.joined(separator: "|") : "<name>",
            help: help,
            choices: choices,
            defaultValue: choices.first
        )
    }

    /// `--log-level`: which diagnostics reach standard error; every command lists the same levels.
    static func logLevel(default level: LogLevel) -> CommandOption {
        let names = LogLevel.allCases.map { $0 == level ? "\($0) (default)" : "\($0)" }
        return CommandOption(
            name: "--log-level",
            value: "<level>",
            help: [names.joined(separator: ", ")],
            choices: LogLevel.allCases.map(\.description),
            defaultValue: level.description
        )
    }

    /// `--events`: where the data-layer pushes come from.
    static func events(_ help: String = "read pushes from a file (or - for standard input)") -> CommandOption {
        CommandOption(name: "--events", value: "<path>|-", help: [help])
    }

    /// `--time-key <key>`: the member of each push that says when its event happened (a recorded log).
    static func timeKey(_ effect: String) -> CommandOption {
        CommandOption(
            name: "--time-key",
            value: "<key>",
            help: ["each line's <key> (an ISO-8601 time, taken out of the push) is when", effect]
        )
    }

    /// `--session-key <key>`: the member of each push that names its session (a log of many users).
    static func sessionKey() -> CommandOption {
        CommandOption(
            name: "--session-key",
            value: "<key>",
            help: [
                "each line's <key> (a string or an integer, left in the push) names its",
                "session, as a service keeps one per user: its data layer, once-per-load",
                "tags, consent and event IDs are its own; a line without it goes to the",
                "session of the line before (a log of many users, one after another)",
            ]
        )
    }

    /// `--context key=value`: a client-context value for the sessions the command evaluates.
    static func context(_ help: String = "set the client context") -> CommandOption {
        CommandOption(
            name: "--context",
            value: "key=value",
            help: ["\(help) (\(ClientContext.keys.joined(separator: ", ")))"]
        )
    }

    /// A flag: an option without a value.
    static func flag(_ name: String, _ help: String) -> CommandOption {
        CommandOption(name: name, value: nil, help: [help])
    }

    /// An option with a value.
    static func valued(_ name: String, _ value: String, _ help: String...) -> CommandOption {
        CommandOption(name: name, value: value, help: help)
    }
}

/// A command's interface in one place: its synopsis, what it does, its options and its exit codes. The
/// `--help` text is rendered from it and the command line is parsed by it, so the two cannot drift apart,
/// and `--format`, `--log-level`, `--events` and `--context` read the same in every command.
struct CommandSpec {
    /// The command's name (`run`).
    var name: String
    /// What follows `containerkit <name>` on the usage lines; each entry a line.
    var synopsis: [String]
    /// Other forms of the command, each a line after `containerkit <name>` (`--list-rules …`).
    var otherForms: [String] = []
    /// What the command does, a paragraph.
    var summary: String
    /// The options, in the order the help lists them.
    var options: [CommandOption]
    /// What each exit code means.
    var exitCodes: String

    /// What a usage error prints: the message, the synopsis and where the options are described (the whole
    /// ``usage`` would bury the message under the option list).
    func usageError(_ message: String) -> String {
        let lines = synopsisLines + ["Run 'containerkit \(name) --help' for the options and exit codes."]
        return "containerkit \(name): \(message)\n\n" + lines.joined(separator: "\n")
    }

    /// `usage: containerkit <name> …`, its continuation lines and the command's other forms.
    private var synopsisLines: [String] {
        let prefix = "usage: containerkit \(name) "
        var lines = [prefix + (synopsis.first ?? "")]
        lines += synopsis.dropFirst().map { String(repeating: " ", count: prefix.count) + $0 }
        lines += otherForms.map { "       containerkit \(name) " + $0 }
        return lines
    }

    /// The `--help` text.
    var usage: String {
        var lines = synopsisLines
        lines += ["", summary, "", "options:"]
        let width = 25
        for option in options + [.flag("--help", "show this help")] {
            let names = ([option.name] + option.aliases).joined(separator: ", ")
            let head = "  " + names + (option.value.map { " " + $0 } ?? "")
            let pad =
                head.count < width + 2
                ? String(repeating: " ", count: width + 2 - head.count)
                : "\n"
                    + String(repeating: " ", count: width + 2)
            lines.append(head + pad + (option.help.first ?? ""))
            lines += option.help.dropFirst().map { String(repeating: " ", count: width + 2) + $0 }
        }
        lines += ["", "exit codes: " + exitCodes]
        return lines.joined(separator: "\n")
    }

    /// Parses `arguments` (without `containerkit <name>`).
    func parse(_ arguments: [String]) throws(UsageError) -> Arguments {
        var canonical: [String: String] = [:]
        for option in options {
            for name in [option.name] + option.aliases { canonical[name] = option.name }
        }
        var args = try Arguments(
            arguments,
            valued: Set(options.filter { $0.value != nil }.flatMap { [$0.name] + $0.aliases }),
            flags: Set(options.filter { $0.value == nil }.flatMap { [$0.name] + $0.aliases }),
            canonicalNames: canonical
        )
        for option in options {
            guard let choices = option.choices else { continue }
            if let value = args.value(option.name), !choices.contains(value) {
                // Any case (`--format JSON`, `--log-level INFO`): the choices are all lowercase.
                guard let choice = choices.first(where: { $0 == value.lowercased() }) else {
                    throw UsageError(
                        "option '\(option.name)' must be one of \(choices.joined(separator: ", ")), not '\(value)'"
                    )
                }
                args.setGiven(option.name, choice)
            }
            if let defaultValue = option.defaultValue, args.value(option.name) == nil {
                args.setDefault(option.name, defaultValue)
            }
        }
        return args
    }
}

extension Arguments {
    /// The `--format` value (validated against the command's choices, its first choice when not given).
    var format: String { value("--format") ?? "" }

    /// The `--log-level` value as a level (validated against the levels, the command's default when not given).
    var logLevel: LogLevel { value("--log-level").flatMap(LogLevel.init(name:)) ?? .warning }
}
