/// A gtag command as GTM's web runtime (`gtm.js`) runs it when a page pushes gtag's `arguments` object onto the
/// data layer (`function gtag(){dataLayer.push(arguments)}`): ``init(gtagArguments:)`` reads one from its arguments,
/// and ``message`` is the data-layer message gtm.js makes of an `event` or `set` command.
///
/// ```swift
/// let command = try GtagCommand(gtagArguments: ["event", "purchase", ["transaction_id": "T1", "value": 5]])
/// if let message = command.message { session.push(message) }  // {event: "purchase", eventModel: {…}}
/// ```
///
/// What gtm.js does with each (read from its command table and observed running it):
/// - `event`: the message `{event: name, eventModel: parameters}`; the parameters are not merged at the top of the
///   model, and a web container's session drops `eventModel` before its next message (see `Docs/Evaluation.md`,
///   "gtag commands"). A fourth argument, or a third that is not an object (or `null`), makes gtm.js ignore the
///   command; so does the internal `_nge` parameter.
/// - `set`: the message of its keys, each replacing (`_clear`), not merging into, its value; no event unless a key
///   is `event`.
/// - `consent`: ``ConsentCommand``.
/// - `config`, `get`, `js` (once the page has its `gtm.js` event) and any other name change nothing a container
///   sees: ``ignored(command:reason:)``.
public enum GtagCommand: Sendable, Hashable {
    /// `gtag('consent', 'default' | 'update', {…})`.
    case consent(ConsentCommand)
    /// `gtag('event', name)` or `gtag('event', name, parameters)`.
    case event(name: String, parameters: ValueMap?)
    /// `gtag('set', {…})`, or `gtag('set', key, value)` as `[key: value]`.
    case set(ValueMap)
    /// A command gtm.js runs to no effect a container sees, and why.
    case ignored(command: String, reason: String)

    /// The parameters gtm.js removes from an event's `eventModel` (its own flags).
    static let internalParameters: Set<String> = ["_nge", "_def"]

    /// Reads the arguments of a gtag call.
    /// - Throws: ``ContainerError`` with code `invalid_command` when the first argument is not a command name (a
    ///   string), or a `consent` command is not one (see ``ConsentCommand/init(gtagArguments:)``).
    public init(gtagArguments arguments: [Value]) throws(ContainerError) {
        guard case .string(let name)? = arguments.first else {
            throw ContainerError(
                .invalidCommand,
                "a gtag command starts with its name, a string such as \"consent\" or \"event\"",
                pointer: "/0"
            )
        }
        switch name {
        case "consent":
            self = .consent(try ConsentCommand(gtagArguments: arguments))
        case "event":
            self = GtagCommand.event(arguments)
        case "set":
            self = GtagCommand.set(arguments)
        case "js", "config", "get":
            self = .ignored(
                command: name,
                reason: "gtag command '\(name)' sets the Google tag up (gtag.js); a container sees nothing of it"
            )
        default:
            self = .ignored(command: name, reason: "gtag command '\(name)' is not one gtm.js runs; it changes nothing")
        }
    }

    private static func event(_ arguments: [Value]) -> GtagCommand {
        guard arguments.count >= 2, case .string(let name) = arguments[1] else {
            return .ignored(command: "event", reason: "gtm.js ignores a gtag event without a name (a string)")
        }
        guard arguments.count <= 3 else {
            return .ignored(
                command: "event",
                reason: "gtm.js ignores a gtag event with \(arguments.count) arguments (at most 3: 'event', a name, "
                    + "an object)"
            )
        }
        guard arguments.count == 3 else { return .event(name: name, parameters: nil) }
        switch arguments[2] {
        case .undefined, .null:
            return .event(name: name, parameters: nil)
        case .object(var parameters):
            if parameters["_nge"]?.isTruthy == true {
                return .ignored(
                    command: "event",
                    reason: "gtm.js ignores a gtag event marked '_nge' in a GTM container"
                )
            }
            for key in internalParameters { parameters.removeValue(forKey: key) }
            return .event(name: name, parameters: parameters)
        case let other:
            return .ignored(
                command: "event",
                reason: "gtm.js ignores a gtag event whose parameters are \(other.typeName), not an object"
            )
        }
    }

    private static func set(_ arguments: [Value]) -> GtagCommand {
        if arguments.count == 2, case .object(let values) = arguments[1] { return .set(values) }
        if arguments.count == 3, case .string(let key) = arguments[1] { return .set([key: arguments[2]]) }
        return .ignored(
            command: "set",
            reason: "gtm.js ignores a gtag set that is not ('set', an object) or ('set', a key, a value)"
        )
    }

    /// The data-layer message gtm.js makes of an `event` or `set` command; `nil` for the others.
    public var message: ValueMap? {
        switch self {
        case .event(let name, let parameters):
            var message: ValueMap = ["event": .string(name)]
            if let parameters { message[GtagCommand.eventModelKey] = .object(parameters) }
            return message
        case .set(let values):
            var message = values
            message[DataLayer.clearKey] = true
            return message
        case .consent, .ignored:
            return nil
        }
    }

    /// The key of a gtag event's parameters in the model.
    public static let eventModelKey = "eventModel"
}
