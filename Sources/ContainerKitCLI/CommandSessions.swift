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

    /// What to push for one line.
    struct Plan {
        /// gtm.js's own events, pushed first (the page's start), in order.
        var before: [ValueMap] = []
        /// The line's message; without its event when it is a dump's second `gtm.js`.
        var message: ValueMap
        /// Why the line's event is not evaluated (``repeatedPageLoad``); `nil` when it is.
        var notEvaluated: String?
        /// The page's URL from this line on, when the line is a history change (``pageURL(after:)``); set it as
        /// the session's ``ClientContext/pageURL`` before pushing the line.
        var pageURL: String?
    }

    /// What to push into the page `page` for `message`, as gtm.js processes it: before the page's first event, its
    /// start (unless `message` is `gtm.init_consent` or `gtm.init` itself); a second `gtm.js` of a data-layer dump
    /// (`inDump`: one page) merged without its event, since gtm.js evaluates a page's `gtm.js` once (a snippet
    /// installed twice, or two containers, push one each). A log of lines may hold many pages, so its `gtm.js`
    /// lines are all evaluated.
    mutating func plan(for message: ValueMap, page: String, inDump: Bool) -> Plan {
        var plan = Plan(message: message)
        guard applies, PageStart.isEvent(message["event"]) else { return plan }
        let name = message["event"]?.stringValue
        plan.pageURL = PageStart.pageURL(after: message)
        if started.insert(page).inserted, !PageStart.events.contains(name ?? "") {
            plan.before = PageStart.events.map { ["event": .string($0)] }
        }
        if name == "gtm.js", !loaded.insert(page).inserted, inDump {
            plan.message.removeValue(forKey: "event")
            plan.notEvaluated = PageStart.repeatedPageLoad
        }
        return plan
    }

    /// Why a second `gtm.js` of a page evaluated nothing.
    static let repeatedPageLoad =
        "gtm.js evaluates a page's gtm.js event once; a second one (a snippet installed twice, a second container) "
        + "only changes the data layer"

    /// The member of a line's JSON object that says a second `gtm.js` evaluated nothing.
    static let repeatedJSONKey = "not_evaluated"

    /// The member of a line's JSON object (or trace) that holds the events evaluated before it.
    static let jsonKey = "page_start"

    /// The title of an event evaluated before the line labelled `label`.
    static func label(_ label: String) -> String { "\(label), before it (gtm.js starts the page)" }

    /// The page's address after `message` when it is a history change: gtm.js's history listener pushes
    /// `gtm.historyChange-v2` (`gtm.historyChange` before 2021) with `gtm.newUrl`, the `location.href` the page has
    /// from then on, which Page URL, Page Hostname and Page Path read.
    static func pageURL(after message: ValueMap) -> String? {
        guard let name = message["event"]?.stringValue, name.hasPrefix("gtm.historyChange"),
            case .string(let url)? = message["gtm.newUrl"], !url.isEmpty
        else { return nil }
        return url
    }

    /// Makes `url` (a history change's new address, ``Plan/pageURL``) the page's URL of `session`.
    static func follow(_ url: String?, in session: DataLayer) {
        guard let url, session.context.pageURL != url else { return }
        var context = session.context
        context.pageURL = url
        session.updateContext(context)
    }

    /// A session's key for ``plan(for:page:inDump:)``: the session object itself.
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
