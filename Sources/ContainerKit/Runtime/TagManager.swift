import Synchronization

/// The runtime a service embeds: the live containers, the registered function-call handlers, the logger.
///
/// There is no singleton: create one `TagManager`, register handlers, add containers, and create one
/// ``DataLayer`` per end user with ``makeDataLayer(context:sessionID:)``. Everything here is safe to call
/// from any thread.
///
/// ```swift
/// let manager = TagManager()
/// manager.register(tagHandler: ClosureTagHandler { call in print(call.arguments) }, for: "com.example.Tag")
/// manager.add(try await ContainerLoader().load(path: "Containers/GTM-XXXX.json"))
/// let session = manager.makeDataLayer()
/// session.push(event: "played song", parameters: ["genre": "jazz"])
/// ```
public final class TagManager: Sendable {
    /// Where diagnostics go.
    public let logger: any Logger
    /// The context new data layers get when none is given.
    public let defaultContext: ClientContext
    /// Where the random-number variable's values come from (``RandomSource/system`` unless seeded).
    public let randomSource: RandomSource

    /// An immutable snapshot of the registered handlers. Registration swaps in a new snapshot, so an
    /// evaluation holds the registry with one reference and never sees it change midway.
    final class Handlers: Sendable {
        let tags: [String: any FunctionCallTagHandler]
        let macros: [String: any FunctionCallMacroHandler]

        init(tags: [String: any FunctionCallTagHandler] = [:], macros: [String: any FunctionCallMacroHandler] = [:]) {
            self.tags = tags
            self.macros = macros
        }
    }

    private let handlers = Mutex(Handlers())
    private let live = Mutex<[Container]>([])
    private let reported = Mutex<Set<String>>([])
    /// Opened containers, preview, delayed initialization (see `TagManager+Opening.swift`).
    let lifecycle = LifecycleState()

    /// Creates a runtime.
    /// - Parameters:
    ///   - logger: where diagnostics go; by default warnings and errors to standard error.
    ///   - defaultContext: the client context of data layers created without one.
    ///   - randomSource: where the random-number variable's values come from; seed it for reproducible runs.
    public init(
        logger: any Logger = StandardErrorLogger(),
        defaultContext: ClientContext = .host,
        randomSource: RandomSource = .system
    ) {
        self.logger = logger
        self.defaultContext = defaultContext
        self.randomSource = randomSource
    }

    // MARK: Handlers

    /// Registers the handler that Function Call tags with class path (or legacy function name) `name` call.
    /// Registering again for the same name replaces the handler.
    public func register(tagHandler: any FunctionCallTagHandler, for name: String) {
        handlers.withLock { current in
            var tags = current.tags
            tags[name] = tagHandler
            current = Handlers(tags: tags, macros: current.macros)
        }
    }

    /// Registers the handler that Function Call variables with class path (or function name) `name` call.
    public func register(macroHandler: any FunctionCallMacroHandler, for name: String) {
        handlers.withLock { current in
            var macros = current.macros
            macros[name] = macroHandler
            current = Handlers(tags: current.tags, macros: macros)
        }
    }

    /// Removes the tag handler registered for `name`.
    public func unregisterTagHandler(for name: String) {
        handlers.withLock { current in
            var tags = current.tags
            tags[name] = nil
            current = Handlers(tags: tags, macros: current.macros)
        }
    }

    /// Removes the macro handler registered for `name`.
    public func unregisterMacroHandler(for name: String) {
        handlers.withLock { current in
            var macros = current.macros
            macros[name] = nil
            current = Handlers(tags: current.tags, macros: macros)
        }
    }

    /// The tag handler registered for `name`.
    public func tagHandler(for name: String) -> (any FunctionCallTagHandler)? {
        handlers.withLock { $0.tags[name] }
    }

    /// The macro handler registered for `name`.
    public func macroHandler(for name: String) -> (any FunctionCallMacroHandler)? {
        handlers.withLock { $0.macros[name] }
    }

    var handlerSnapshot: Handlers { handlers.withLock { $0 } }

    // MARK: Containers

    /// Makes `container` live, replacing (atomically) a live container with the same ID.
    ///
    /// A push already being evaluated finishes on the version it started with.
    public func add(_ container: Container) {
        live.withLock { list in
            if let i = list.firstIndex(where: { $0.id == container.id }) {
                list[i] = container
            } else {
                list.append(container)
            }
        }
        for problem in container.unsupported {
            reportOnce("unsupported:\(container.id):\(problem.message)") {
                "\(container.id): \(problem.message)"
            }
        }
        lifecycle.deferral.containerAdded(self)
    }

    /// Removes the live container with `id`; returns it.
    @discardableResult
    public func remove(id: String) -> Container? {
        live.withLock { list in
            guard let i = list.firstIndex(where: { $0.id == id }) else { return nil }
            return list.remove(at: i)
        }
    }

    /// The live container with `id`.
    public func container(id: String) -> Container? {
        live.withLock { list in list.first { $0.id == id } }
    }

    /// Every live container, in the order they were added.
    public var containers: [Container] { live.withLock { $0 } }

    // MARK: Sessions

    /// Creates the data layer of one session (one end user).
    /// - Parameters:
    ///   - context: what the built-in macros report for this client; defaults to ``defaultContext``.
    ///   - sessionID: an identifier for logs and handlers; a random one by default.
    ///   - debug: record an ``EvaluationTrace`` for every event (preview's debug mode); always on while
    ///     ``isDebugMode`` is set.
    public func makeDataLayer(context: ClientContext? = nil, sessionID: String? = nil, debug: Bool = false)
        -> DataLayer
    {
        DataLayer(
            tagManager: self,
            context: context ?? defaultContext,
            sessionID: sessionID ?? DataLayer.makeSessionID(),
            debug: debug || isDebugMode
        )
    }

    /// Logs a message once per runtime for `key` (repeated problems would flood a busy service's logs).
    func reportOnce(_ key: String, level: LogLevel = .warning, _ message: () -> String) {
        guard level >= logger.minimumLevel, logger.minimumLevel != .none else { return }
        let first = reported.withLock { $0.insert(key).inserted }
        if first { logger.log(level, message()) }
    }
}
