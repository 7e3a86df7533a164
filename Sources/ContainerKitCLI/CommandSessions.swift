import ContainerKit

/// The sessions a command pushes a log's lines to (`run`, `preview`): one, or with `--session-key` one per name,
/// each made when its name first comes (and kept to the end of the command); ``current`` is where a line without a
/// name goes.
struct CommandSessions {
    private let manager: TagManager
    private let debug: Bool
    /// Whether lines name their sessions (`--session-key`).
    private let keyed: Bool
    /// The sessions lines named, by name.
    private var named: [String: DataLayer] = [:]
    /// The session of the last line.
    private(set) var current: DataLayer
    private var currentName: String?

    /// One session, `first`; with names (`keyed`), the one lines go to until the first name. Named sessions are made
    /// in debug mode when `debug` (`preview`'s).
    init(manager: TagManager, first: DataLayer, keyed: Bool, debug: Bool = false) {
        self.manager = manager
        self.debug = debug
        self.keyed = keyed
        self.current = first
    }

    /// The session named `name` (made now if it is new), or without a name the current one; it is current then.
    mutating func select(_ name: String?) -> DataLayer {
        guard keyed, let name, name != currentName else { return current }
        let session = named[name] ?? manager.makeDataLayer(sessionID: name, debug: debug)
        named[name] = session
        (current, currentName) = (session, name)
        return session
    }

    /// The current session's name as the JSON output shows it (`null` before any line named one); `nil` without
    /// `--session-key`.
    var jsonName: Value? {
        guard keyed else { return nil }
        return currentName.map(Value.string) ?? .null
    }

    /// A line's title: "line 3", and with `--session-key` its session: "line 3 [user-5]".
    func label(_ place: PushInput.Place) -> String {
        guard keyed, let currentName else { return place.description }
        return "\(place) [\(currentName)]"
    }
}
