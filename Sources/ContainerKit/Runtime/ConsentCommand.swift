/// A consent command, as a page gives it with `gtag('consent', 'default' | 'update', {…})`: gtag pushes its
/// `arguments` object onto the data layer, and GTM's web runtime hands an `arguments` object whose first item
/// is `"consent"` to its consent command (a plain array push `['consent', …]` is a method call there, which
/// does nothing). ``init(gtagArguments:)`` reads such a command from its arguments.
///
/// ```swift
/// let command = try ConsentCommand(gtagArguments: [
///     "consent", "default", ["ad_storage": "denied", "region": ["ES", "FR"]],
/// ])
/// session.push(command)
/// ```
///
/// Values are read as gtm.js reads them (`String(value)`): only `"granted"` grants, any other value denies; in
/// a default a `null` value sets nothing, in an update it denies. `region` (a list of ISO 3166-1 / 3166-2 codes,
/// or one code) makes a default apply only to visitors there (see ``ConsentState/apply(_:country:region:)``);
/// `wait_for_update` is kept but changes nothing on a server (see `Docs/Evaluation.md`, "Consent").
public struct ConsentCommand: Sendable, Hashable {
    /// `default` or `update`.
    public enum Kind: String, Sendable, Hashable {
        /// `gtag('consent', 'default', …)`: the state before the visitor chose, per region.
        case `default`
        /// `gtag('consent', 'update', …)`: what the visitor chose; applies everywhere.
        case update
    }

    /// One consent type the command sets: its name and its value's string form (`String(value)`), `nil` for
    /// `null`.
    public struct Setting: Sendable, Hashable {
        /// The consent type.
        public var type: String
        /// The value's string form, `nil` for `null`.
        public var value: String?

        /// Creates a setting of `type` to `value`.
        public init(type: String, value: String?) { (self.type, self.value) = (type, value) }
    }

    /// The command's kind.
    public var kind: Kind
    /// The consent types it sets, in the order given.
    public var settings: [Setting]
    /// The regions a default is for (upper case); `nil` when the command has no `region`.
    public var regions: [String]?
    /// The `wait_for_update` milliseconds, if given.
    public var waitForUpdate: Double?

    /// Creates a command.
    public init(kind: Kind, settings: [Setting], regions: [String]? = nil, waitForUpdate: Double? = nil) {
        self.kind = kind
        self.settings = settings
        self.regions = regions?.map { $0.uppercased() }
        self.waitForUpdate = waitForUpdate
    }

    /// The most consent types one command may set.
    public static let maximumSettings = 256

    /// Reads the arguments of `gtag('consent', kind, settings)`.
    /// - Throws: ``ContainerError`` with code `invalid_command` when the arguments are not a consent command:
    ///   the first must be `"consent"` (ContainerKit runs no other gtag command), the second `"default"` or
    ///   `"update"`, the third an object, and there must be three; a `region` must be a string or a list of
    ///   strings; at most ``maximumSettings`` types.
    public init(gtagArguments arguments: [Value]) throws(ContainerError) {
        func invalid(_ message: String, _ pointer: String = "") -> ContainerError {
            ContainerError(.invalidCommand, message, pointer: pointer)
        }
        guard case .string(let name)? = arguments.first else {
            throw invalid("a gtag command starts with its name, a string such as \"consent\"", "/0")
        }
        guard name == "consent" else {
            throw invalid(
                "gtag command '\(name)' is not supported; ContainerKit runs 'consent' commands only "
                    + "(push events as objects)",
                "/0"
            )
        }
        guard arguments.count == 3 else {
            throw invalid(
                "a consent command has 3 arguments (\"consent\", \"default\" or \"update\", an object), "
                    + "not \(arguments.count)"
            )
        }
        guard case .string(let kindName) = arguments[1], let kind = Kind(rawValue: kindName) else {
            throw invalid("consent command kind '\(arguments[1].jsString)' is not \"default\" or \"update\"", "/1")
        }
        guard case .object(let map) = arguments[2] else {
            throw invalid("a consent command's settings must be an object, not \(arguments[2].typeName)", "/2")
        }
        guard map.count <= ConsentCommand.maximumSettings + 2 else {
            throw invalid("a consent command sets at most \(ConsentCommand.maximumSettings) consent types", "/2")
        }
        var settings: [Setting] = []
        var regions: [String]?
        var waitForUpdate: Double?
        for (key, value) in map {
            switch key {
            case "region":
                switch value {
                case .string(let code): regions = [code]
                case .array(let list):
                    var codes: [String] = []
                    for (i, item) in list.enumerated() {
                        guard case .string(let code) = item else {
                            throw invalid("consent 'region' entries must be strings", "/2/region/\(i)")
                        }
                        codes.append(code)
                    }
                    regions = codes
                default:
                    throw invalid("consent 'region' must be a list of region codes, not \(value.typeName)", "/2/region")
                }
            case "wait_for_update":
                waitForUpdate = value.jsNumber
            default:
                switch value {
                case .undefined, .null: settings.append(Setting(type: key, value: nil))
                default: settings.append(Setting(type: key, value: value.jsString))
                }
            }
        }
        guard settings.count <= ConsentCommand.maximumSettings else {
            throw invalid("a consent command sets at most \(ConsentCommand.maximumSettings) consent types", "/2")
        }
        self.init(kind: kind, settings: settings, regions: regions, waitForUpdate: waitForUpdate)
    }

    /// The command as gtag's arguments: `["consent", kind, {…}]`.
    public var gtagArguments: [Value] {
        var map = ValueMap(minimumCapacity: settings.count + 2)
        for setting in settings { map[setting.type] = setting.value.map(Value.string) ?? .null }
        if let regions { map["region"] = .array(regions.map(Value.string)) }
        if let waitForUpdate {
            map["wait_for_update"] =
                waitForUpdate == waitForUpdate.rounded() && abs(waitForUpdate) < 1e15
                ? .int(Int64(waitForUpdate)) : .double(waitForUpdate)
        }
        return ["consent", .string(kind.rawValue), .object(map)]
    }
}

extension ContainerError.Code {
    /// A pushed command (gtag's arguments) is not one ContainerKit runs, or is malformed.
    public static let invalidCommand = ContainerError.Code(rawValue: "invalid_command")
}

extension ConsentCommand {
    /// The command's settings object as a page passes it (`{"ad_storage": "granted", "region": ["ES"], …}`): what a
    /// trace shows as the push's message.
    var traceMessage: ValueMap {
        var message = ValueMap()
        for setting in settings { message[setting.type] = setting.value.map(Value.string) ?? .null }
        if let regions { message["region"] = .array(regions.map(Value.string)) }
        if let waitForUpdate { message["wait_for_update"] = .double(waitForUpdate) }
        return message
    }
}
