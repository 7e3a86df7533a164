import ContainerKit

/// A usage error: the command line is wrong. Exit code 64.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A small command-line parser: positionals, `--name value`, `--name=value`, repeatable options, flags.
/// Commands parse through their ``CommandSpec``, which knows the option names.
struct Arguments {
    private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []
    private var defaults: [String: String] = [:]

    /// Parses `arguments` given the option names that take a value and the flags that do not; an alias is
    /// stored under its name in `canonicalNames`.
    init(
        _ arguments: [String],
        valued: Set<String>,
        flags knownFlags: Set<String>,
        canonicalNames: [String: String] = [:]
    ) throws(UsageError) {
        var i = 0
        var onlyPositionals = false
        while i < arguments.count {
            let argument = arguments[i]
            i += 1
            if onlyPositionals || argument == "-" || !argument.hasPrefix("-") {
                positionals.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositionals = true
                continue
            }
            var name = argument
            var inlineValue: String?
            if let eq = argument.firstIndex(of: "=") {
                name = String(argument[..<eq])
                inlineValue = String(argument[argument.index(after: eq)...])
            }
            let key = canonicalNames[name] ?? name
            if knownFlags.contains(name) {
                guard inlineValue == nil else { throw UsageError("option '\(name)' takes no value") }
                flags.insert(key)
            } else if valued.contains(name) {
                if let inlineValue {
                    options[key, default: []].append(inlineValue)
                } else {
                    guard i < arguments.count else { throw UsageError("option '\(name)' needs a value") }
                    options[key, default: []].append(arguments[i])
                    i += 1
                }
            } else {
                throw UsageError("unknown option '\(name)'")
            }
        }
    }

    func value(_ name: String) -> String? { options[name]?.last ?? defaults[name] }
    func values(_ name: String) -> [String] { options[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }
    /// Whether the command line gave the option.
    func given(_ name: String) -> Bool { options[name] != nil || flags.contains(name) }

    /// Replaces the value the command line gave the option (its last) with `value`: the spelling of a choice.
    mutating func setGiven(_ name: String, _ value: String) {
        guard let last = options[name]?.indices.last else { return }
        options[name]?[last] = value
    }

    /// Sets the value of an option the command line did not give.
    mutating func setDefault(_ name: String, _ value: String) {
        if options[name] == nil { defaults[name] = value }
    }
}

extension Arguments {
    /// `--time-key`'s key, when given (not empty).
    func timeKey() throws(UsageError) -> String? {
        guard let key = value("--time-key") else { return nil }
        guard !key.isEmpty else { throw UsageError("--time-key needs a key, such as timestamp") }
        return key
    }

    /// `--session-key`'s key, when given (not empty). `--braze-user` names one session's Braze user: with it, the
    /// option would file every user as that one.
    func sessionKey() throws(UsageError) -> String? {
        guard let key = value("--session-key") else { return nil }
        guard !key.isEmpty else { throw UsageError("--session-key needs a key, such as user_id") }
        guard value("--braze-user") == nil else {
            throw UsageError(
                "--braze-user names the Braze user of one session; with --session-key each session's user is named "
                    + "by a changeUser tag or --braze-user-event"
            )
        }
        return key
    }

    /// The host's client context with every `--context key=value` applied (what `run` and `diff` evaluate
    /// for).
    func context() throws(UsageError) -> ClientContext {
        var context = ClientContext.host
        var pairs: [(key: String, value: String)] = []
        for pair in values("--context") {
            guard let eq = pair.firstIndex(of: "=") else {
                throw UsageError("--context needs key=value, not '\(pair)'")
            }
            pairs.append((String(pair[..<eq]), String(pair[pair.index(after: eq)...])))
        }
        for (key, value) in ClientContext.inSettingOrder(pairs, key: \.key) {
            do throws(ContainerError) {
                try context.setValue(value, forKey: key)
            } catch {
                throw UsageError(error.message)
            }
        }
        return context
    }
}
