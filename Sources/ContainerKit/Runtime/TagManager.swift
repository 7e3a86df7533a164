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
    public let logger: any DiagnosticLogger
    /// The context new data layers get when none is given.
    public let defaultContext: ClientContext
    /// ``defaultContext`` in the box its sessions share.
    let defaultContextBox: ClientContext.Box
    /// Where evaluated events and fired tags are reported (for metrics), if anywhere.
    public let observer: (any RuntimeObserver)?
    /// Whether ``observer`` is set: what a push tests (testing the optional copied the existential each time).
    let hasObserver: Bool
    /// Where the random-number variable's values come from (``RandomSource/system`` unless seeded).
    public let randomSource: RandomSource
    /// Whether a fired tag ContainerKit does not run has its fields evaluated (see ``init(logger:defaultContext:observer:randomSource:maximumDataLayerBytes:eventIDs:evaluatesUnsupportedTags:)``).
    public var evaluatesUnsupportedTags: Bool { environment.evaluatesUnsupportedTags }
    /// The most bytes a data layer may hold (its model, version-1 raw values and user properties, as JSON);
    /// a push that would take a session past it is refused with `session_too_large`
    /// (``PushResult/refusal``), merged into nothing and evaluated nowhere. `nil`: no limit. The default,
    /// 4 MiB, keeps every session within what ``SessionStore/restore(from:)`` and the session files of earlier
    /// versions (``LegacySessionFiles``) read back (16 MiB a line).
    public let maximumDataLayerBytes: Int?
    /// The default ``maximumDataLayerBytes``: 4 MiB.
    public static let defaultMaximumDataLayerBytes = 4 << 20
    /// How many event IDs each session remembers, and for how long (24 hours and 1,000 by default): a push
    /// carrying an ID its session has seen within this window is a duplicate, not applied again (see
    /// ``SeenEventID`` and ``DataLayer/push(event:parameters:eventID:)``).
    public let eventIDs: EventIDWindow
    /// ``eventIDs``' bounds, and its clock unless it is the system's (`nil`), as a push reads them.
    let eventIDMilliseconds: Int64
    let eventIDMaximumCount: Int
    let eventIDClock: (@Sendable () -> Int64)?
    /// The seed of this runtime's event ID hashes (``SeenEventIDs``), drawn at random: a client cannot choose IDs
    /// that collide in every process.
    let eventIDSeed: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next() | 1
    }()

    /// An immutable snapshot of the registered handlers. Registration swaps in a new snapshot, so an
    /// evaluation holds the registry with one reference and never sees it change midway.
    final class Handlers: Sendable {
        let tags: [String: any FunctionCallTagHandler]
        let macros: [String: any FunctionCallMacroHandler]
        /// The push hooks by name, and in the order they run (by name).
        let pushHooksByName: [String: any PushHook]
        let pushHooks: [any PushHook]

        init(
            tags: [String: any FunctionCallTagHandler] = [:],
            macros: [String: any FunctionCallMacroHandler] = [:],
            pushHooks: [String: any PushHook] = [:]
        ) {
            self.tags = tags
            self.macros = macros
            self.pushHooksByName = pushHooks
            self.pushHooks = pushHooks.sorted { $0.key < $1.key }.map(\.value)
        }

        /// These handlers with other push hooks.
        func with(pushHooks: [String: any PushHook]) -> Handlers {
            Handlers(tags: tags, macros: macros, pushHooks: pushHooks)
        }
    }

    /// Names kept for code written before the devices moved into ``ContainerKit/SessionRuntime``.
    typealias SessionRuntime = ContainerKit.SessionRuntime
    typealias SessionContainer = ContainerKit.SessionRuntime.ContainerHold
    typealias BorrowedHandlers = ContainerKit.SessionRuntime.BorrowedHandlers

    /// A registered tag handler behind one reference: a call borrows it from the snapshot for the cost of one
    /// retain, instead of copying the existential (and retaining what it holds) per call.
    final class ResolvedTagHandler: Sendable {
        let handler: any FunctionCallTagHandler
        init(_ handler: any FunctionCallTagHandler) { self.handler = handler }
    }

    /// What a push reads from the runtime: the live containers and the handlers, immutable. Writers (adding
    /// a container, registering a handler) publish a new one; see ``published``.
    final class Snapshot: Sendable {
        let containers: [Container]
        let handlers: Handlers
        /// The runtime's logger, observer, random source and report-once set (the same object in every snapshot
        /// of one runtime), for the evaluations that borrow this snapshot.
        let environment: EvaluationEnvironment
        /// What of a session the live containers read (see ``Container/Storage/sessionReads``): a push hands
        /// an evaluation only those parts.
        let reads: SessionReads
        /// Whether a live container reads data-layer variables of version 1 (sessions then keep the last
        /// raw value of every pushed key).
        var readsRawValues: Bool { reads.contains(.rawValues) }
        /// Per container (in ``containers``' order), the handler of each tag with a ``CallPlan``, resolved
        /// once per publication so a call does not look its class path up; `nil` where none is registered.
        let tagHandlers: [[ResolvedTagHandler?]]
        /// ``tagHandlers`` without their reference counts, in buffers that do not move, for an evaluation to
        /// borrow (this snapshot, which the session holds while it evaluates, keeps them alive): neither the
        /// handlers nor the arrays every session shares are retained per push or per call.
        private let borrowed: [BorrowedHandlers]
        /// Whether a live container's macros read the session's merged model (see
        /// ``Container/Storage/readsModel``).
        var readsModel: Bool { reads.contains(.model) }

        init(containers: [Container], handlers: Handlers, environment: EvaluationEnvironment) {
            self.containers = containers
            self.handlers = handlers
            self.environment = environment
            self.reads = containers.reduce(into: SessionReads()) { $0.formUnion($1.storage.sessionReads) }
            let tagHandlers = containers.map { container in
                container.storage.callPlans.map { plan in
                    plan.flatMap { handlers.tags[$0.name] }.map(ResolvedTagHandler.init)
                }
            }
            self.tagHandlers = tagHandlers
            self.borrowed = tagHandlers.map(SessionRuntime.BorrowedHandlers.make)
        }

        deinit {
            for handlers in borrowed { handlers.deallocate() }
        }

        /// The handlers of container `index`'s planned tags, borrowed: valid while this snapshot lives.
        func borrowedTagHandlers(_ index: Int) -> BorrowedHandlers { borrowed[index] }
    }

    /// The current snapshot and its generation. Only writers take this lock on their own; a push reads
    /// ``generation`` (an atomic load that never contends with other readers) and takes the lock only when
    /// the generation moved since the session last looked — once per change, not once per push.
    private let published: Mutex<(generation: UInt64, snapshot: Snapshot)>
    /// The generation of the current snapshot; bumped after every publication.
    private let generation = Atomic<UInt64>(1)
    /// How many containers the current snapshot holds (stored with each publication), for
    /// ``hasLiveContainers``.
    private let liveContainers = Atomic<Int>(0)
    /// What evaluations read of this runtime (its logger, observer and random source) and report to.
    let environment: EvaluationEnvironment

    /// How many regular-expression matches, since this runtime was created, ran out of their step budget
    /// (``RegexPattern/defaultStepBudget``) and so counted as not matching: a condition that was false, a
    /// regex-table row that was skipped. Each pattern is also logged once, and a debug trace names the
    /// condition.
    public var regexBudgetExceededCount: Int { environment.regexBudgetExceededCount }
    /// Opened containers, preview, delayed initialization (see `TagManager+Opening.swift`).
    let lifecycle = LifecycleState()

    /// Creates a runtime.
    /// - Parameters:
    ///   - logger: where diagnostics go; by default warnings and errors to standard error.
    ///   - defaultContext: the client context of data layers created without one; by default
    ///     ``ClientContext/server``, which reports nothing about the machine this runs on.
    ///   - observer: where evaluated events and fired tags are reported, for metrics.
    ///   - randomSource: where the random-number variable's values come from; seed it for reproducible runs.
    ///   - maximumDataLayerBytes: the most bytes a session's data layer may hold (`nil`: no limit).
    ///   - eventIDs: how many event IDs each session remembers, and for how long.
    ///   - evaluatesUnsupportedTags: whether a fired tag ContainerKit does not run (a GA4 event, custom HTML, a
    ///     mobile container's Universal Analytics tags) has its fields evaluated, as GTM evaluates a tag's fields
    ///     before running it, so that its ``FiredTag/parameters`` show what it would send (`containerkit run` and
    ///     `diff` turn it on; `preview` traces, which evaluates them anyway). Off by default: a service reads no such
    ///     report, and legacy tags have many fields.
    public init(
        logger: any DiagnosticLogger = StandardErrorLogger(),
        defaultContext: ClientContext = .server,
        observer: (any RuntimeObserver)? = nil,
        randomSource: RandomSource = .system,
        maximumDataLayerBytes: Int? = TagManager.defaultMaximumDataLayerBytes,
        eventIDs: EventIDWindow = EventIDWindow(),
        evaluatesUnsupportedTags: Bool = false
    ) {
        self.logger = logger
        self.defaultContext = defaultContext
        self.defaultContextBox = ClientContext.Box(defaultContext)
        self.observer = observer
        self.hasObserver = observer != nil
        self.randomSource = randomSource
        self.maximumDataLayerBytes = maximumDataLayerBytes.map { max(1024, $0) }
        self.eventIDs = eventIDs
        self.eventIDMilliseconds = eventIDs.milliseconds
        self.eventIDMaximumCount = eventIDs.maximumCount
        self.eventIDClock = eventIDs.customClock
        let environment = EvaluationEnvironment(
            logger: logger,
            observer: observer,
            randomSource: randomSource,
            evaluatesUnsupportedTags: evaluatesUnsupportedTags
        )
        self.environment = environment
        self.published = Mutex(
            (generation: 1, snapshot: Snapshot(containers: [], handlers: Handlers(), environment: environment))
        )
    }

    // MARK: Handlers

    /// Registers the handler that Function Call tags with class path (or legacy function name) `name` call.
    /// Registering again for the same name replaces the handler.
    public func register(tagHandler: any FunctionCallTagHandler, for name: String) {
        updateHandlers { tags, _ in tags[name] = tagHandler }
    }

    /// Registers the handler that Function Call variables with class path (or function name) `name` call.
    public func register(macroHandler: any FunctionCallMacroHandler, for name: String) {
        updateHandlers { _, macros in macros[name] = macroHandler }
    }

    /// Removes the tag handler registered for `name`.
    public func unregisterTagHandler(for name: String) {
        updateHandlers { tags, _ in tags[name] = nil }
    }

    /// Removes the macro handler registered for `name`.
    public func unregisterMacroHandler(for name: String) {
        updateHandlers { _, macros in macros[name] = nil }
    }

    /// Registers `hook` to run at the end of every push of every session (see ``PushHook``), under `name`:
    /// registering again under the same name replaces it. Hooks run in the order of their names.
    public func register(pushHook hook: any PushHook, for name: String) {
        publish { current in
            var hooks = current.handlers.pushHooksByName
            hooks[name] = hook
            return Snapshot(
                containers: current.containers,
                handlers: current.handlers.with(pushHooks: hooks),
                environment: environment
            )
        }
    }

    /// Removes the push hook registered under `name`.
    public func unregisterPushHook(for name: String) {
        publish { current in
            var hooks = current.handlers.pushHooksByName
            guard hooks.removeValue(forKey: name) != nil else { return nil }
            return Snapshot(
                containers: current.containers,
                handlers: current.handlers.with(pushHooks: hooks),
                environment: environment
            )
        }
    }

    /// The tag handler registered for `name`.
    public func tagHandler(for name: String) -> (any FunctionCallTagHandler)? {
        snapshot.handlers.tags[name]
    }

    /// The macro handler registered for `name`.
    public func macroHandler(for name: String) -> (any FunctionCallMacroHandler)? {
        snapshot.handlers.macros[name]
    }

    private func updateHandlers(
        _ change: (inout [String: any FunctionCallTagHandler], inout [String: any FunctionCallMacroHandler]) -> Void
    ) {
        publish { current in
            var tags = current.handlers.tags
            var macros = current.handlers.macros
            change(&tags, &macros)
            return Snapshot(
                containers: current.containers,
                handlers: Handlers(tags: tags, macros: macros, pushHooks: current.handlers.pushHooksByName),
                environment: environment
            )
        }
    }

    // MARK: Snapshots

    /// Replaces the snapshot with what `change` makes of it; returns what `change` returned alongside.
    @discardableResult
    private func publish(_ change: (Snapshot) -> Snapshot?) -> Snapshot {
        published.withLock { current in
            guard let next = change(current.snapshot) else { return current.snapshot }
            current.generation &+= 1
            current.snapshot = next
            liveContainers.store(next.containers.count, ordering: .relaxed)
            generation.store(current.generation, ordering: .releasing)
            return next
        }
    }

    /// The current snapshot (takes the writers' lock; the hot path uses ``snapshot(cached:)``).
    var snapshot: Snapshot { published.withLock { $0.snapshot } }

    /// The current snapshot for a session that already holds `cached`: `nil` while no writer has published
    /// since (one atomic load, nothing written), otherwise the current one and its generation, fetched under the
    /// writers' lock (the session makes its own holder of it, ``SessionRuntime``).
    func snapshot(cached: SessionRuntime?) -> (generation: UInt64, snapshot: Snapshot)? {
        if let cached, cached.generation == generation.load(ordering: .acquiring) { return nil }
        return published.withLock { ($0.generation, $0.snapshot) }
    }

    // MARK: Containers

    /// Makes `container` live, replacing (atomically) a live container with the same ID.
    ///
    /// A push already being evaluated finishes on the version it started with.
    public func add(_ container: Container) {
        publish { current in
            var list = current.containers
            if let i = list.firstIndex(where: { $0.id == container.id }) {
                list[i] = container
            } else {
                list.append(container)
            }
            return Snapshot(containers: list, handlers: current.handlers, environment: environment)
        }
        for problem in container.unsupported {
            reportOnce(
                "unsupported:\(container.id):\(problem.message)",
                metadata: ["container": container.id, "problem": problem.message]
            ) { "the container uses a feature ContainerKit does not run" }
        }
        lifecycle.deferral.containerAdded(self)
        lifecycle.wentLive(container.id)
        if !LifecycleState.publishing { lifecycle.deferral.replayIfDue(self) }
    }

    /// Removes the live container with `id`; returns it.
    @discardableResult
    public func remove(id: String) -> Container? {
        var removed: Container?
        publish { current in
            var list = current.containers
            guard let i = list.firstIndex(where: { $0.id == id }) else { return nil }
            removed = list.remove(at: i)
            return Snapshot(containers: list, handlers: current.handlers, environment: environment)
        }
        return removed
    }

    /// The live container with `id`.
    public func container(id: String) -> Container? {
        snapshot.containers.first { $0.id == id }
    }

    /// Every live container, in the order they were added.
    public var containers: [Container] { snapshot.containers }

    /// Whether any container is live: what ``containers`` would say with `isEmpty`, in one atomic load (no lock,
    /// no copy), for a check made on every request.
    public var hasLiveContainers: Bool { liveContainers.load(ordering: .relaxed) > 0 }

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
        makeDataLayer(context: context, sessionID: sessionID, debug: debug, committing: nil)
    }

    /// A data layer whose pushes `committing` commits inside their turn (a ``SessionStore``'s sessions).
    func makeDataLayer(
        context: ClientContext?,
        sessionID: String?,
        debug: Bool,
        committing: (@Sendable (DataLayer, inout PushResult) -> Void)?,
        keepsChanges: Bool = false
    ) -> DataLayer {
        DataLayer(
            tagManager: self,
            context: context.flatMap { $0 == defaultContext ? nil : ClientContext.Box($0) } ?? defaultContextBox,
            sessionID: sessionID ?? DataLayer.makeSessionID(),
            debug: debug || isDebugMode,
            committing: committing,
            keepsChanges: keepsChanges
        )
    }

    /// Logs a message once per runtime for `key` (repeated problems would flood a busy service's logs);
    /// the metadata is only built for the one message written.
    func reportOnce(
        _ key: String,
        level: LogLevel = .warning,
        metadata: @autoclosure () -> LogMetadata = [:],
        _ message: () -> String
    ) {
        environment.reportOnce(key, level: level, metadata: metadata(), message)
    }
}
