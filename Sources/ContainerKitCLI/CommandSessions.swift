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

/// gtm.js's page start, for a web container: before a page's first event it evaluates `gtm.init_consent`, then
/// `gtm.init` (the Consent Initialization and Initialization triggers), and puts neither on the data layer, so a
/// browser's dump has neither. Each session of a command is one page: its first push with an event (a truthy
/// `event`, as gtm.js counts one) is preceded by the two, unless it is `gtm.init_consent` or `gtm.init` itself (an
/// input that pushes them has them already).
struct PageStart {
    /// The events gtm.js evaluates first, in order.
    static let events = ["gtm.init_consent", "gtm.init"]

    /// Whether the command's container is a web container (mobile runtimes have no such events).
    let applies: Bool
    /// The pages (sessions, by a key of the caller's) that had their first event.
    private var started: Set<String> = []
    /// The pages whose `gtm.js` event was evaluated.
    private var loaded: Set<String> = []

    init(applies: Bool) { self.applies = applies }

    /// The events to push into the page `page` before `message`, in order; empty when none are.
    mutating func events(before message: ValueMap, page: String) -> [String] {
        guard applies, PageStart.isEvent(message["event"]), started.insert(page).inserted else { return [] }
        if case .string(let name)? = message["event"], PageStart.events.contains(name) { return [] }
        return PageStart.events
    }

    /// Whether `message`, an item of a data-layer dump (one page), is a second `gtm.js` of the page `page`: gtm.js
    /// evaluates a page's `gtm.js` once (a snippet installed twice, or two containers, push one each) and only
    /// merges a later one. A log of lines may hold many pages, so only a dump's items are asked (`inDump`).
    mutating func repeatsPageLoad(_ message: ValueMap, page: String, inDump: Bool) -> Bool {
        guard applies, case .string("gtm.js")? = message["event"] else { return false }
        return !loaded.insert(page).inserted && inDump
    }

    /// Why a second `gtm.js` of a page evaluated nothing (``repeatsPageLoad(_:page:inDump:)``).
    static let repeatedPageLoad =
        "gtm.js evaluates a page's gtm.js event once; a second one (a snippet installed twice, a second container) "
        + "only changes the data layer"

    /// The member of a line's JSON object that says a second `gtm.js` evaluated nothing.
    static let repeatedJSONKey = "not_evaluated"

    /// `message` without its event, for a second `gtm.js` of a page: merged, not evaluated.
    static func merged(_ message: ValueMap) -> ValueMap {
        var message = message
        message.removeValue(forKey: "event")
        return message
    }

    /// The member of a line's JSON object (or trace) that holds the events evaluated before it.
    static let jsonKey = "page_start"

    /// The title of an event evaluated before the line labelled `label`.
    static func label(_ label: String) -> String { "\(label), before it (gtm.js starts the page)" }

    /// A session's key for ``events(before:page:)``: the session object itself.
    static func page(_ session: DataLayer) -> String { String(describing: ObjectIdentifier(session)) }

    /// Whether gtm.js counts `value` as an event: JavaScript's truthiness (`if (!a.event) return`).
    static func isEvent(_ value: Value?) -> Bool {
        switch value {
        case nil, .undefined?, .null?, .bool(false)?, .string("")?: return false
        case .int(let number)?: return number != 0
        case .double(let number)?: return number != 0 && !number.isNaN
        default: return true
        }
    }
}
