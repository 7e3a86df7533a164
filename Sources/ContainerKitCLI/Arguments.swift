import ContainerKit

/// A usage error: the command line is wrong. Exit code 64.
public struct UsageError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// A small command-line parser: positionals, `--name value`, `--name=value`, repeatable options, flags.
struct Arguments {
    private(set) var positionals: [String] = []
    private var options: [String: [String]] = [:]
    private var flags: Set<String> = []

    /// Parses `arguments` given the option names that take a value and the flags that do not.
    init(_ arguments: [String], valued: Set<String>, flags knownFlags: Set<String>) throws(UsageError) {
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
            if knownFlags.contains(name) {
                guard inlineValue == nil else { throw UsageError("option '\(name)' takes no value") }
                flags.insert(name)
            } else if valued.contains(name) {
                if let inlineValue {
                    options[name, default: []].append(inlineValue)
                } else {
                    guard i < arguments.count else { throw UsageError("option '\(name)' needs a value") }
                    options[name, default: []].append(arguments[i])
                    i += 1
                }
            } else {
                throw UsageError("unknown option '\(name)'")
            }
        }
    }

    func value(_ name: String) -> String? { options[name]?.last }
    func values(_ name: String) -> [String] { options[name] ?? [] }
    func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of an option restricted to `choices`.
    func choice(_ name: String, _ choices: [String], default defaultValue: String) throws(UsageError) -> String {
        guard let value = value(name) else { return defaultValue }
        guard choices.contains(value) else {
            throw UsageError("option '\(name)' must be one of \(choices.joined(separator: ", ")), not '\(value)'")
        }
        return value
    }
}

extension Arguments {
    /// The host's client context with every `--context key=value` applied (what `run` and `diff` evaluate
    /// for).
    func context() throws(UsageError) -> ClientContext {
        var context = ClientContext.host
        for pair in values("--context") {
            guard let eq = pair.firstIndex(of: "=") else {
                throw UsageError("--context needs key=value, not '\(pair)'")
            }
            do throws(ContainerError) {
                try context.setValue(String(pair[pair.index(after: eq)...]), forKey: String(pair[..<eq]))
            } catch {
                throw UsageError(error.message)
            }
        }
        return context
    }
}
