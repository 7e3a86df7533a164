import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One session's data layer: the merged model of everything pushed, and the entry point that evaluates
/// the live containers when a push carries an `event`.
///
/// Merge semantics are GTM's: a push applies its top-level keys one by one, in order, each expanded on
/// dots (`"a.b": 1` → `{a: {b: 1}}`) and merged before the next; `_clear: true` replaces instead of
/// merging (see `apply(_:to:)`); maps merge recursively; arrays merge **index by index**; scalars and
/// `null` overwrite; ``Value/undefined`` (``notPresent``) leaves the existing value untouched.
///
/// ## Many callers
/// A data layer serialises its own pushes, first come first served, and every caller gets the result of
/// its own push:
/// - A push from another caller (thread or task) while one is being processed **waits its turn**: the
///   synchronous ``push(_:)`` blocks its thread, the `async` ``push(_:)-(ValueMap)`` suspends its task.
///   The caller holding the turn processes the waiting pushes as well, each in a turn of its own and in the
///   order they came, and hands each caller its own result (flat combining): contending callers cost one
///   hand-over between threads, not one each. A thread that still polls for its turn (it has waited less than
///   a few pushes) is not served so: the session is kept for the next push of the thread whose turn ended, for
///   at most ``SessionTurnstile/maximumStretch`` pushes in a row (or until that push is late, then the waiter
///   takes it), and then handed to the polling thread, so that the session's data changes core once a stretch,
///   not once a push. Nothing is dropped and concurrent callers never trip the loop guard.
/// - A push made **inside the processing of a push** — from a tag or macro handler's call, an observer,
///   or a task one of them started while that push is still processed — keeps GTM's semantics: it is
///   queued, processed after the current push, and reported in the outer push's result. More than
///   ``maximumNestedPushes`` such pushes within one outer push trip the loop guard. The processing is
///   recognised by a task-local mark bound around it, never by the thread: an event loop runs many
///   callers' tasks on one thread, and a waiting task may resume on another.
///
/// Tag handlers run synchronously inside the push, on the thread processing it.
public final class DataLayer: Sendable {
    /// The sentinel that leaves an existing value or array element untouched in a push.
    public static let notPresent: Value = .undefined
    /// Dotted keys expand into at most this many levels.
    public static let maximumKeyDepth = 64
    /// The most handler-nested pushes processed within one outer push before the loop guard drops the rest.
    public static let maximumNestedPushes = 500
    /// The push key that sets Firebase user properties (what `__fup` variables read) instead of merging:
    /// `["gtm.userProperties": ["plan": "pro"]]`; a `null` or undefined value removes a property.
    public static let userPropertiesKey = "gtm.userProperties"

    /// The runtime whose live containers this session evaluates.
    public let tagManager: TagManager
    /// An identifier for logs and handlers.
    public let sessionID: String
    /// Whether every push records a ``PushTrace`` (``PushResult/trace``), as if pushed with `tracing: true`.
    public let debug: Bool
    /// Whether the turnstile holds nested pushes, stored under ``state``'s lock with every transition: what the
    /// holder of a turn reads, without the lock, to know whether its commit can run now (almost always: a push
    /// rarely nests one). A byte beside ``debug``, in the padding before ``state``: a session grows by nothing.
    private let nestedWaiting = Atomic<Bool>(false)

    struct State: Sendable {
        var model = ValueMap()
        /// Version-1 data-layer variables: the last raw value pushed under each top-level key (kept only
        /// while a live container reads version 1).
        var rawValues = ValueMap()
        var userProperties = ValueMap()
        /// The client context, behind a reference that sessions with the same context share (most have the
        /// runtime's ``TagManager/defaultContext``): a context is about 200 bytes of strings.
        private(set) var contextBox: ClientContext.Box
        var context: ClientContext {
            get { contextBox.value }
            set {
                guard newValue != contextBox.value else { return }
                contextBox = ClientContext.Box(newValue)
                // The evaluation reads the context from the runtime holder: the next push gets one with the new
                // context (a push in flight keeps its own).
                runtime = runtime?.with(context: contextBox)
            }
        }
        var eventNumber = 0
        var firedOncePerLoad = Set<String>()
        var attributes = ValueMap()
        /// Typed values extensions keep (``SessionExtensionKey``), by key type: each kept here only, not also in
        /// ``attributes`` (until its first read after a restore it is there); saved by ``savedAttributes``.
        var extensions: [ObjectIdentifier: ExtensionEntry] = [:]
        /// Who holds the turn, the handler-nested pushes of the push being processed, and the callers
        /// waiting for their turn, first come first served. A push made inside a turn's processing carries
        /// the turn's number (``enclosingTurns``) and is nested.
        var turnstile = SessionTurnstile<Pending, Waiter>()
        /// The runtime snapshot this session last read, in a holder of its own (see
        /// ``TagManager/snapshot(cached:)``), with the session's client context.
        var runtime: SessionRuntime?
        /// The candidate rules of the event names this session pushed lately (for ``runtime``'s containers).
        var candidates = SessionCandidates()
        /// Where `event` was in ``model`` last time (a hint; checked before use).
        var eventKeyPosition = 0
        /// At least the bytes of ``model``, ``rawValues`` and ``userProperties`` as JSON (see
        /// ``TagManager/maximumDataLayerBytes``): exact after a scan, then grown by each push's loose bound.
        var sizeBound = 0
        /// What changed since the session's store last committed it (``DataLayer/takeDelta()``); `nil`
        /// unless the store commits deltas.
        var changes: SessionChanges?
        /// The event IDs the session remembers (``SeenEventID``); `nil` until its first push with one.
        var seenEventIDs: SeenEventIDs?
        /// What the session's consent commands set (``ConsentState``).
        var consent = ConsentState()

        init(context: ClientContext.Box, keepsChanges: Bool) {
            self.contextBox = context
            if keepsChanges { changes = SessionChanges() }
        }
    }

    /// A push waiting to be processed: the message, and the event name when `push(event:parameters:)`
    /// gave it separately (so the parameters need not be copied to add an `event` key).
    struct Pending: Sendable {
        var message: ValueMap
        var event: Value?
        /// The push's event ID (``push(event:parameters:eventID:)``), checked when its turn comes, and its hash;
        /// empty: none (a stored string, not an optional, so that reading it for the check retains nothing).
        var eventID = ""
        var eventIDHash: UInt64 = 0
        /// Whether the event ID is invalid: the push is refused (``DataLayer/refused(eventID:)``), nothing applied.
        var refusesEventID = false
        /// A consent command (gtag's arguments) instead of a message: it changes the consent state only.
        var command: CommandBox?
        /// Whether the push records a ``PushTrace`` (its handlers' pushes then do too).
        var tracing = false
        /// When the event happened, as its host said (``push(event:parameters:eventID:eventTime:tracing:)``), in
        /// seconds since 1970; `nil`: now.
        var eventTime: Double?

        /// The message with the separately given event folded in.
        var fullMessage: ValueMap {
            guard let event else { return message }
            var full = message
            full["event"] = event
            return full
        }
    }

    /// A pushed consent command, boxed: a push that is not one carries a `nil` reference, not the command's size.
    final class CommandBox: Sendable {
        let command: ConsentCommand
        init(_ command: ConsentCommand) { self.command = command }
    }

    /// A caller waiting for its turn, with its push: the caller holding the turn may run that push in its
    /// place and hand it its result (``takeTurns(_:turn:inside:)``), or hand it the turn. Both payloads are
    /// class references, so the enum (and every optional or enum holding it) has a layout fixed at compile
    /// time; a `CheckedContinuation` payload, a resilient type, made each turn's hand-over go through the
    /// runtime's generic enum functions.
    enum Waiter: Sendable {
        case thread(ThreadWaiter)
        case task(TaskWakeup)

        /// The waiting push, and the turns its caller runs inside.
        var job: WaitingPush {
            switch self {
            case .thread(let waiter): return waiter.job
            case .task(let wakeup): return wakeup.job
            }
        }

        /// Whether the caller is a thread polling for its turn (not asleep, not a task): it may wait for the
        /// next push of the thread holding the turn, and be handed the turn at no wake-up's cost.
        var isPolling: Bool {
            if case .thread(let waiter) = self { return waiter.wakeup.isAwake }
            return false
        }

        /// Whether this is the waiting thread `waiter`.
        func isThread(_ waiter: ThreadWaiter) -> Bool {
            if case .thread(let candidate) = self { return candidate === waiter }
            return false
        }

        /// Tells a polling thread that the session was kept for another thread's next push.
        func keptForAnother() {
            if case .thread(let waiter) = self { waiter.wakeup.keptForAnother() }
        }

        /// Hands the caller turn number `turn`: it processes its push itself.
        func resume(turn: UInt64) {
            switch self {
            case .thread(let waiter): waiter.wakeup.signal(turn)
            case .task(let wakeup): wakeup.continuation.resume(returning: .turn(turn))
            }
        }

        /// Hands the caller the result of its push, processed by the caller that held the turn.
        func deliver(_ result: consuming PushResult) {
            switch self {
            case .thread(let waiter):
                waiter.result = result
                waiter.wakeup.signal(ThreadWaiter.processed)
            case .task(let wakeup): wakeup.continuation.resume(returning: .processed(result))
            }
        }
    }

    /// A push waiting for its turn: what the caller holding the turn needs to process it in its caller's
    /// place.
    struct WaitingPush: Sendable {
        let pending: Pending
        /// What ``enclosingTurns`` was when the push arrived (`nil` for a push made outside any turn).
        let marks: TurnMark?
    }

    /// What a waiting caller is handed: its turn, or the result of its push.
    enum Handed: Sendable {
        case turn(UInt64)
        case processed(PushResult)
    }

    /// A thread waiting for its turn, or for the result of its push.
    ///
    /// `@unchecked`: ``result`` is written once, by the caller that processed the push, before ``wakeup`` is
    /// signalled, and read by the waiting thread only after the signal (which orders the two).
    final class ThreadWaiter: @unchecked Sendable {
        /// What ``wakeup`` carries instead of a turn number when ``result`` holds the push's result (turn
        /// numbers start at 1).
        static let processed: UInt64 = 0
        let wakeup = ThreadWakeup()
        let job: WaitingPush
        var result: PushResult?
        init(_ job: WaitingPush) { self.job = job }
    }

    /// A task waiting for its turn, or for the result of its push.
    final class TaskWakeup: Sendable {
        let continuation: CheckedContinuation<Handed, Never>
        let job: WaitingPush
        init(_ continuation: CheckedContinuation<Handed, Never>, _ job: WaitingPush) {
            self.continuation = continuation
            self.job = job
        }
    }

    /// The most waiting pushes the caller holding a session's turn processes for other callers before it hands
    /// the turn to the next one (so that its own caller's wait is bounded).
    static let maximumCombinedPushes = 32

    /// The calling thread's identity (never 0), for a session kept for a thread's next push.
    static var currentThread: UInt {
        #if canImport(Glibc)
            UInt(pthread_self())
        #else
            UInt(bitPattern: pthread_self())
        #endif
    }

    #if DEBUG
        /// Tests only (debug builds): how the callers waiting for the turn of one session are watched and how
        /// long they poll (see `SessionCombiningTests`).
        struct WaitObserver: Sendable {
            /// Called, under the session's lock, whenever a caller starts waiting, with how many callers wait then.
            var waits: @Sendable (Int) -> Void
            /// Called, under the session's lock, whenever a waiting thread goes to sleep.
            var asleep: @Sendable () -> Void = {}
            /// How long a waiting thread polls before it sleeps (`.max`: it never sleeps), if not the default.
            var spinning: UInt64?
            /// How long a waiting thread polls for a kept session before it takes it, if not the default.
            var patience: UInt64?
        }

        /// Tests only (debug builds): the observers of the sessions with these identifiers.
        static let waitObservers = Mutex<[ObjectIdentifier: WaitObserver]>([:])

        private static func noteWait(_ session: DataLayer, _ turnstile: SessionTurnstile<Pending, Waiter>) {
            let count = turnstile.waitingCount
            let observer = waitObservers.withLock { $0[ObjectIdentifier(session)] }
            observer?.waits(count)
        }
    #endif

    /// The turns the current call runs inside, innermost first: bound while a push is processed, so a push
    /// made from that processing (a tag handler, a macro handler, an observer) is recognised as nested —
    /// whatever thread it runs on, and never a push of another caller whose task happens to share a thread.
    @TaskLocal static var enclosingTurns: TurnMark?

    /// A turn being processed: the session, its turn number, and the turns it runs inside (a handler of
    /// one session pushing into another).
    struct TurnMark: Sendable {
        let session: ObjectIdentifier
        let turn: UInt64
        let outer: Outer?

        /// Boxes the enclosing marks (allocated only when one session's turn runs inside another's).
        final class Outer: Sendable {
            let mark: TurnMark
            init(_ mark: TurnMark) { self.mark = mark }
        }

        /// The number of `session`'s turn this mark (or an enclosing one) stands for.
        func turn(of session: ObjectIdentifier) -> UInt64? {
            if self.session == session { return turn }
            var outer = self.outer
            while let box = outer {
                if box.mark.session == session { return box.mark.turn }
                outer = box.mark.outer
            }
            return nil
        }
    }

    let state: Mutex<State>

    /// Commits each push as one unit, inside the turn (set by a ``SessionStore`` with a ``PushCommitter``).
    let committing: (@Sendable (DataLayer, inout PushResult) -> Void)?

    init(
        tagManager: TagManager,
        context: ClientContext.Box,
        sessionID: String,
        debug: Bool,
        committing: (@Sendable (DataLayer, inout PushResult) -> Void)? = nil,
        keepsChanges: Bool = false
    ) {
        self.tagManager = tagManager
        self.state = Mutex(State(context: context, keepsChanges: keepsChanges))
        self.sessionID = sessionID
        self.debug = debug
        self.committing = committing
    }

    /// What the built-in macros report for this session's client.
    public var context: ClientContext { state.withLock { $0.context } }

    /// ``context`` in its shared box (a read of one member copies that member only).
    var contextBox: ClientContext.Box { state.withLock { $0.contextBox } }

    /// Everything an evaluation may read of this session, as it is now (for the typed getters, which evaluate a
    /// variable outside a push; a push takes only what its containers read).
    var view: SessionView {
        state.withLock { state in
            SessionView(
                call: CallSession(self),
                consent: state.consent,
                rawValues: state.rawValues,
                userProperties: state.userProperties
            )
        }
    }

    /// Replaces what the built-in macros report for this session's client (for example after the client
    /// upgraded its app); events already being evaluated keep the context they started with.
    public func updateContext(_ context: ClientContext) {
        state.withLock { state in
            state.context = context
            state.changes?.context = true
        }
    }

    // MARK: Pushing

    /// Pushes a message: merges it into the model and, if it has an `event` key, evaluates every live
    /// container for that event and fires the selected tags.
    ///
    /// A call from another caller while a push is processed blocks until its turn; a call from a tag
    /// handler of the push being processed is queued behind it (and reported in that push's result).
    /// This is the blocking variant, for code without a task (a command-line tool, a test, a thread of your
    /// own): like every synchronous `push`, it is unavailable from async code, where `await push(_:)` suspends
    /// instead of blocking a cooperative thread.
    ///
    /// - Returns: the reports of the events this call processed: its own, then those its handlers pushed.
    ///   Empty for a push made from a handler.
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(_ message: ValueMap) -> PushResult {
        push(Pending(message: message, event: nil))
    }

    /// Pushes an event with parameters: the parameters plus `"event": event` (which wins over a parameter
    /// named `event`).
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap()) -> PushResult {
        push(Pending(message: parameters, event: .string(event)))
    }

    /// Pushes one key and value (the key is expanded on dots).
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(_ key: String, _ value: Value) -> PushResult {
        var message = ValueMap()
        message[key] = value
        return push(message)
    }

    /// Pushes one key and value (the key is expanded on dots), suspending while another caller's push is processed.
    @discardableResult
    public func push(_ key: String, _ value: Value) async -> PushResult {
        var message = ValueMap()
        message[key] = value
        return await push(message)
    }

    /// Pushes a consent command, as `gtag('consent', …)` does on a page: it changes the session's consent state
    /// (``consent``), in its turn among the session's pushes, and nothing else (no data-layer key, no event). The
    /// visitor's location for a default's `region` is the session's context (``ClientContext/country``,
    /// ``ClientContext/region``) when the command is processed.
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(_ command: ConsentCommand) -> PushResult {
        push(Pending(message: ValueMap(), event: nil, command: CommandBox(command)))
    }

    /// Pushes a consent command, suspending while another caller's push is processed. See
    /// ``push(_:)-(ConsentCommand)``.
    @discardableResult
    public func push(_ command: ConsentCommand) async -> PushResult {
        await push(Pending(message: ValueMap(), event: nil, command: CommandBox(command)))
    }

    /// The session's consent state: what its consent commands set.
    public var consent: ConsentState { state.withLock { $0.consent } }

    /// Pushes a message, suspending (not blocking a thread) while another caller's push is processed.
    /// Tags still run synchronously inside the push. See ``push(_:)-(ValueMap)``.
    @discardableResult
    public func push(_ message: ValueMap) async -> PushResult {
        await push(Pending(message: message, event: nil))
    }

    /// Pushes an event with parameters, suspending while another caller's push is processed.
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap()) async -> PushResult {
        await push(Pending(message: parameters, event: .string(event)))
    }

    /// Runs one transition of the session's turnstile under the lock; the caller acts on what it returns
    /// (resumes a waiter, processes a push) after the lock is released.
    private func turnstile<R: Sendable>(_ transition: (inout SessionTurnstile<Pending, Waiter>) -> R) -> R {
        state.withLock { state in
            let result = transition(&state.turnstile)
            nestedWaiting.store(state.turnstile.nestedCount > 0, ordering: .relaxed)
            return result
        }
    }

    func push(_ pending: consuming Pending) -> PushResult {
        if pending.refusesEventID { return Self.refused(eventID: pending.eventID) }
        if tagManager.lifecycle.mayDefer, pending.command == nil,
            let deferred = deferUntilAvailable(pending)
        {
            return traced(deferral: deferred, of: pending)
        }
        // Read once (a task-local read is a runtime call): the turn this call runs inside, if any, and the
        // marks the turn it takes is bound inside.
        let marks = DataLayer.enclosingTurns
        let enclosing = marks?.turn(of: ObjectIdentifier(self))
        let thread = DataLayer.currentThread
        // The session may be kept for this thread's next push when its turn ends, unless it runs inside
        // another turn (its thread then waits for that turn to go on, not for its next push).
        let holder = marks == nil ? thread : 0
        let turn = turnstile { turnstile -> (SessionTurnstile<Pending, Waiter>.Arrival, ThreadWaiter?) in
            let arrival = turnstile.arrive(pending, enclosing: enclosing, thread: thread)
            guard arrival == .busy else { return (arrival, nil) }
            let waiter = ThreadWaiter(WaitingPush(pending: copy pending, marks: marks))
            _ = turnstile.wait(.thread(waiter))  // busy: queued
            #if DEBUG
                DataLayer.noteWait(self, turnstile)
            #endif
            return (arrival, waiter)
        }
        switch turn {
        case (.nested, _):
            return PushResult()
        case (.acquired(let number), _):
            return takeTurns(pending, turn: number, inside: marks, holder: holder)
        case (.busy, let waiter):
            let waiter = waiter!
            var (spinning, patience) = (ThreadWakeup.spinNanoseconds, ThreadWakeup.keptPatience)
            #if DEBUG
                if let waiting = DataLayer.waitObservers.withLock({ $0[ObjectIdentifier(self)] }) {
                    (spinning, patience) = (waiting.spinning ?? spinning, waiting.patience ?? patience)
                }
            #endif
            let number = waiter.wakeup.wait(spinning: spinning, patience: patience) { beforeSleeping in
                // The session kept for another thread whose next push did not come: this waiter, the first, takes
                // it. Else, before it sleeps, it says so under the lock (the session is then kept for nobody's
                // next push while it sleeps).
                turnstile { turnstile -> UInt64? in
                    if let turn = turnstile.claim(by: { $0.isThread(waiter) }) { return turn }
                    if beforeSleeping, waiter.wakeup.markSleeping() {
                        #if DEBUG
                            DataLayer.waitObservers.withLock { $0[ObjectIdentifier(self)] }?.asleep()
                        #endif
                    }
                    return nil
                }
            }
            // Processed by the caller that held the turn, or handed the turn.
            if number == ThreadWaiter.processed { return waiter.result! }
            return takeTurns(waiter.job.pending, turn: number, inside: marks, holder: holder)
        }
    }

    func push(_ pending: consuming Pending) async -> PushResult {
        if pending.refusesEventID { return Self.refused(eventID: pending.eventID) }
        if tagManager.lifecycle.mayDefer, pending.command == nil,
            let deferred = deferUntilAvailable(pending)
        {
            return traced(deferral: deferred, of: pending)
        }
        let marks = DataLayer.enclosingTurns
        let enclosing = marks?.turn(of: ObjectIdentifier(self))
        // A task started by a handler of the push being processed inherits the mark: nested.
        switch turnstile({ $0.arrive(pending, enclosing: enclosing) }) {
        case .nested:
            return PushResult()
        case .acquired(let number):
            return takeTurns(pending, turn: number, inside: marks, holder: 0)
        case .busy:
            let job = WaitingPush(pending: copy pending, marks: marks)
            let handed = await withCheckedContinuation { (continuation: CheckedContinuation<Handed, Never>) in
                let now = turnstile { turnstile -> UInt64? in
                    let now = turnstile.wait(.task(TaskWakeup(continuation, job)))
                    #if DEBUG
                        if now == nil { DataLayer.noteWait(self, turnstile) }
                    #endif
                    return now
                }
                if let now { continuation.resume(returning: .turn(now)) }
            }
            switch handed {
            case .processed(let result):
                return result
            case .turn(let number):
                // The turn was handed over; this task processes it on whichever thread it resumed on (its task
                // locals are the task's, whatever the thread).
                return takeTurns(job.pending, turn: number, inside: marks, holder: 0)
            }
        }
    }

    /// Processes `pending` in turn number `number`, then the pushes of the callers that waited meanwhile, each
    /// in a turn of its own and in the order they came, handing each caller its own result (flat combining):
    /// contending callers cost one hand-over between threads, not one each. A caller that runs inside another
    /// turn (`enclosing` is not `nil`: a handler pushing into another session) hands the turn to the next waiter
    /// instead, since a waiting push run on its thread could wait for a turn that thread holds. So does a
    /// caller that processed ``maximumCombinedPushes`` waiting pushes: its own caller has waited long enough; and
    /// a thread (`holder` is not 0: a blocking push outside any turn) hands the turn to a thread that still
    /// polls for it — one whose push waited out the holder's stretch (``SessionTurnstile/next(holder:mayWait:)``:
    /// while the stretch lasts, the turn ends with the session kept for `holder`'s next push instead).
    private func takeTurns(
        _ pending: consuming Pending,
        turn number: UInt64,
        inside enclosing: TurnMark?,
        holder: UInt
    ) -> PushResult {
        var result = PushResult()
        var handOver = processTurn(pending, turn: number, inside: enclosing, holder: holder, into: &result)
        var combined = 0
        while let (waiter, turn) = handOver {
            guard enclosing == nil, combined < DataLayer.maximumCombinedPushes, holder == 0 || !waiter.isPolling
            else {
                waiter.resume(turn: turn)
                break
            }
            let job = waiter.job
            var processed = PushResult()
            handOver = processTurn(
                job.pending,
                turn: turn,
                inside: job.marks,
                holder: job.marks == nil ? holder : 0,
                into: &processed
            )
            waiter.deliver(processed)
            combined += 1
        }
        return result
    }

    /// Processes `pending` (turn number `number`) and the pushes its handlers nest, in order, into `result`,
    /// until none is left or the loop guard trips; then ends the turn, and returns the waiter the turn goes to
    /// next (with its number), if any (none when the session is kept for `holder`'s next push). (The result is
    /// `inout`, not returned beside the waiter: a returned tuple was copied whole.) Taking the next nested push and
    /// ending the turn are one lock: a push that nests nothing takes it once here. `enclosing` is what
    /// ``enclosingTurns`` was when the push arrived.
    private func processTurn(
        _ pending: consuming Pending,
        turn number: UInt64,
        inside enclosing: TurnMark?,
        holder: UInt,
        into result: inout PushResult
    ) -> (waiter: Waiter, turn: UInt64)? {
        // The memo tables, the thread's: taken by the first evaluated push of the turn, given back when it ends
        // (per thread, not per session: a session between pushes holds none).
        var scratch = EvaluationScratch()
        var lease = SessionRuntime.ScratchLease()
        // The runtime, when it has push hooks (read under the lock the push takes anyway, and kept for them).
        var hookRuntime: SessionRuntime?
        // The event ID the push carried, once remembered, and what the push fired, summarised as it was evaluated.
        var remembered = RememberedEventID()
        // A traced push traces the pushes its handlers nest too.
        let tracing = debug || pending.tracing
        process(
            pending,
            into: &result,
            scratch: &scratch,
            lease: &lease,
            hooks: &hookRuntime,
            remembering: &remembered,
            tracing: tracing,
            turn: number,
            inside: enclosing
        )
        var processed = 0
        var committed = false
        while true {
            // Once nothing nested waits, before the turn ends: the push hooks, then, with a committer, the
            // commit of the turn's pushes (a push a handler's task nests after that is processed, hooked and
            // committed on its own).
            // A duplicate (``PushResult/isDuplicate``) applied nothing: nothing to hook or commit.
            if !committed, committing != nil || hookRuntime != nil, !result.isDuplicate,
                !nestedWaiting.load(ordering: .relaxed)
            {
                if let hookRuntime { runPushHooks(hookRuntime, into: &result) }
                if remembered.sequence >= 0, committing != nil {
                    noteFired(result, remembered, summarized: processed == 0 && result.hooked.isEmpty)
                }
                committing?(self, &result)
                committed = true
            }
            // What the turn did, for the event ID it carried, written into its entry if the turn ends: the fired
            // tags (a session with a committer noted them before its commit) and what waits for the records.
            // Without a committer and with nothing but the push's own calls (no nested push, no push hook's output),
            // the summary written as the push was evaluated is the entry's tags, when it holds them all.
            let notes = remembered.sequence >= 0
            let summarized =
                notes && committing == nil && processed == 0 && remembered.fired.isComplete && result.hooked.isEmpty
            let step = state.withLock { state in
                let step = state.turnstile.next(holder: holder, mayWait: \.isPolling)
                nestedWaiting.store(state.turnstile.nestedCount > 0, ordering: .relaxed)
                if case .nested = step {
                } else {
                    lease.giveBack(&scratch)
                    if summarized {
                        let sequence = remembered.sequence
                        state.seenEventIDs?.setFired(&remembered.fired, of: sequence)
                    } else if notes {
                        state.seenEventIDs?.finish(remembered.sequence, &result, withFired: committing == nil)
                    }
                }
                return step
            }
            switch step {
            case .ended(let handOver):
                return handOver
            case .kept(let waiter):
                waiter.keptForAnother()
                return nil
            case .nested(let nested):
                committed = false
                processed += 1
                guard processed <= DataLayer.maximumNestedPushes else {
                    tripLoopGuard(into: &result)
                    continue
                }
                var unremembered = RememberedEventID()  // a nested push's ID is remembered without the turn's outcome
                process(
                    nested,
                    into: &result,
                    scratch: &scratch,
                    lease: &lease,
                    hooks: &hookRuntime,
                    remembering: &unremembered,
                    tracing: tracing,
                    turn: number,
                    inside: enclosing
                )
            }
        }
    }

    /// Runs the push hooks (``PushHook``) of `runtime` (the session's, as the turn's last push found it) and adds
    /// what they return to `result`.
    private func runPushHooks(_ runtime: SessionRuntime, into result: inout PushResult) {
        for hook in runtime.snapshot.handlers.pushHooks {
            if let output = hook.endOfPush(self), !output.isEmpty { result.appendHookOutput(output) }
        }
    }

    /// Whether a push of `message` fits under `limit` once the session's size is known exactly: scans the
    /// session (model, raw values, user properties) and the message, and sets ``State/sizeBound``. Returns
    /// `nil` when it fits (the bound then counts the message too), else the bytes the session would hold.
    private func admit(
        _ message: ValueMap,
        event: Value?,
        userProperties: Value?,
        limit: Int,
        _ state: inout State
    ) -> Int? {
        let held =
            state.model.encodedSizeBound(scanning: true) &+ state.rawValues.encodedSizeBound(scanning: true)
            &+ state.userProperties.encodedSizeBound(scanning: true)
        // The message lands in the model and, for version-1 containers, in the raw values too.
        let adding =
            2 &* message.encodedSizeBound(scanning: true) &+ (event?.encodedSizeBound(scanning: true) ?? 0)
            &+ (userProperties?.encodedSizeBound(scanning: true) ?? 0)
        state.sizeBound = held
        guard held &+ adding <= limit else { return held &+ adding }
        state.sizeBound = held &+ adding
        return nil
    }

    /// Reports a push refused for the session's size.
    private func refuse(tooLarge bytes: Int, into result: inout PushResult) {
        let limit = tagManager.maximumDataLayerBytes ?? 0
        let error = ContainerError(
            .sessionTooLarge,
            "the push would take the session of '\(sessionID)' to about \(bytes) bytes, over its limit of \(limit)"
        )
        if result.refusal == nil { result.refusal = error }
        tagManager.logger.warning(
            "refused a push: the session would be too large",
            metadata: ["session": sessionID, "bytes": String(bytes), "limit": String(limit)]
        )
    }

    /// Drops the nested pushes still queued (the one just taken included) and says so.
    private func tripLoopGuard(into result: inout PushResult) {
        let dropped = turnstile { $0.dropNested() } + 1
        tagManager.logger.error(
            "seems like an infinite loop of pushing to the data layer; dropped the queued pushes",
            metadata: [
                "session": sessionID, "dropped": String(dropped),
                "nested_pushes": String(DataLayer.maximumNestedPushes),
            ]
        )
        result.loopGuardTripped = true
    }

    /// Merges `pending` into the model and, when it has an event, evaluates it in every live container.
    ///
    /// The turn's mark is bound (``enclosingTurns``) around the evaluation of a push that may run host code:
    /// one some rule can pass for, or any event push when an observer is set. A push no rule can pass for
    /// calls no handler, so nothing can push from inside it: it is evaluated without the mark (binding a
    /// task-local allocates and checks the task's status records, about 600 instructions).
    private func process(
        _ pending: consuming Pending,
        into result: inout PushResult,
        scratch: inout EvaluationScratch,
        lease: inout SessionRuntime.ScratchLease,
        hooks: inout SessionRuntime?,
        remembering remembered: inout RememberedEventID,
        tracing: Bool,
        turn number: UInt64,
        inside enclosing: TurnMark?
    ) {
        if let box = pending.command {
            // gtm.js hands an `arguments` object to its command (`consent`: `sp` / `up`), which merges nothing.
            let traced = state.withLock { state -> (ConsentState, ConsentState, ValueMap)? in
                let before = tracing ? state.consent : nil
                state.consent.apply(box.command, country: state.context.country, region: state.context.region)
                state.changes?.consent = true
                return before.map { ($0, state.consent, state.model) }
            }
            if let (before, after, model) = traced {
                result.traceSteps.append(
                    TraceStep(
                        sessionID: sessionID,
                        message: box.command.traceMessage,
                        consent: PushTrace.Consent(box.command, before: before, after: after),
                        model: model
                    )
                )
            }
            return
        }
        // The message moves out of the pending push, into the evaluation and on into the result: its buffers
        // are not retained again on the way.
        var message = ValueMap()
        swap(&message, &pending.message)
        let eventTime = pending.eventTime
        var userProperties: Value?
        let dotted = message.keys.contains(where: DataLayer.hasDot)
        // The user-properties key has a dot: a message without dotted keys cannot hold it.
        if dotted, let properties = message[DataLayer.userPropertiesKey] {
            userProperties = properties
            message[DataLayer.userPropertiesKey] = nil
        }
        let eventValue = pending.event ?? message["event"]
        var eventName: String?
        switch eventValue {
        case nil, .undefined?, .null?: eventName = nil
        case let value?: eventName = value.jsString
        }
        // gtm.js (`if (!a.event) return !1;` when it processes a message): an `event` of `false`, `0`, `NaN`
        // or `""` only updates the data layer. Mobile SDKs test for a present value: it is an event there.
        let falsyEvent = eventName != nil && eventValue?.isTruthy == false
        // What the push can add to the session, loosely (no string is read): checked against the limit under
        // the lock, where the session's size is scanned only when this bound reaches it.
        var added = 0
        if tagManager.maximumDataLayerBytes != nil {
            added =
                2 &* message.encodedSizeBound(scanning: false)
                &+ (pending.event?.encodedSizeBound(scanning: false) ?? 0)
                &+ (userProperties?.encodedSizeBound(scanning: false) ?? 0)
        }
        var reportedName = Evaluation.reportedName(eventName)
        // The candidate rules come from the session's own table, looked up under the lock taken anyway;
        // traced pushes evaluate every rule's candidates from the container (their traces explain all).
        var lookupName: String?
        // A Firebase short name (`_vs`, reported as pushed here) is expanded by each container's own table (none for a
        // web container), so its candidate rules are found per container by the evaluation, not in the session's
        // table by one name.
        if !tracing, case .string(let name) = reportedName {
            var bytes = name.utf8.makeIterator()
            if bytes.next() != 0x5F { lookupName = name }
        }
        // A traced push keeps its message and what it changed (``TraceStep``), in the result's last step (an
        // optional step kept in a local was copied whole, twice, by every push).
        if tracing {
            result.traceSteps.append(
                TraceStep(
                    sessionID: sessionID,
                    event: eventName,
                    eventID: pending.eventID.isEmpty ? nil : pending.eventID,
                    message: message
                )
            )
        }
        let traceStep = result.traceSteps.count - 1
        var candidates: ContainerCandidates?
        // The memo tables move out of the state with the model (see `processTurn`). The model is copied out only for
        // containers that read it (and debug traces); the runtime comes in the session's own holder.
        // `model` is moved into the evaluation below (a `var` so that it can be; a copy made after the lock costs
        // a retain and a release per push).
        var tooLarge: Int?
        // What the evaluation reads of the session (taken under the lock below, for the parts a live container reads)
        // and the session's once-per-load tags, which the evaluation changes `inout` and this push merges back.
        var sessionValues: SessionView.Values?
        var oncePerLoad = OncePerLoad()
        // An event ID (hashed when it was checked) and the time read before the lock; a seen one makes the push a
        // duplicate. The ID is read from the push where it is needed (a local copy would retain it).
        let hasEventID = !pending.eventID.isEmpty
        var eventIDTime: Int64 = 0
        if hasEventID { eventIDTime = tagManager.eventIDClock?() ?? EventIDWindow.systemMilliseconds() }
        var duplicate: SeenEventIDs.Entry?
        var (model, eventNumber, runtime) = state.withLock {
            state -> (ValueMap, Int, SessionRuntime?) in
            // Whether the push must be measured against the session's size limit (and may be refused): its ID is
            // then looked up first and remembered once the push is admitted; otherwise looked up and remembered in
            // one call.
            var measured = false
            if let limit = tagManager.maximumDataLayerBytes { measured = state.sizeBound &+ added > limit }
            if hasEventID,
                let seen = state.admitEventID(
                    pending.eventID,
                    hash: pending.eventIDHash,
                    now: eventIDTime,
                    remembers: !measured,
                    sequence: &remembered.sequence,
                    in: tagManager
                )
            {
                duplicate = seen
                if tracing { result.traceSteps[traceStep].model = state.model }
                return (ValueMap(), 0, nil)
            }
            if measured, let limit = tagManager.maximumDataLayerBytes {
                tooLarge = admit(message, event: pending.event, userProperties: userProperties, limit: limit, &state)
                if tooLarge != nil {
                    if tracing { result.traceSteps[traceStep].model = state.model }
                    return (ValueMap(), 0, nil)
                }
                if hasEventID {
                    remembered.sequence = state.remember(
                        pending.eventID,
                        hash: pending.eventIDHash,
                        now: eventIDTime,
                        in: tagManager
                    )
                }
            } else {
                state.sizeBound &+= added
            }
            if eventValue != nil, !lease.isHeld { lease.take(into: &scratch) }
            if let changed = tagManager.snapshot(cached: state.runtime) {
                state.runtime = SessionRuntime(
                    generation: changed.generation,
                    snapshot: changed.snapshot,
                    context: state.contextBox
                )
                state.candidates = SessionCandidates()
            }
            let runtime = state.runtime!
            let reads = runtime.withSnapshot { snapshot in
                if let lookupName { candidates = state.candidates.candidates(for: lookupName, in: snapshot) }
                hooks = snapshot.handlers.pushHooks.isEmpty ? nil : runtime
                return snapshot.reads
            }
            let readsRawValues = reads.contains(.rawValues)
            let before = tracing ? DataLayer.tracedKeys(of: message, event: pending.event, in: state.model) : []
            // gtm.js deletes the last gtag event's parameters before it processes each message.
            var droppedEventModel: Value?
            if reads.contains(.dropsEventModel), !state.model.isEmpty {
                droppedEventModel = state.model.removeValue(forKey: GtagCommand.eventModelKey)
                if droppedEventModel != nil { state.changes?.modelKeys.append(GtagCommand.eventModelKey) }
            }
            DataLayer.apply(message, to: &state.model, dotted: dotted)
            if let event = pending.event { state.model.setValue(event, forKey: "event", hint: &state.eventKeyPosition) }
            if tracing {
                result.traceSteps[traceStep].changes = before.map {
                    PushTrace.Change(key: $0.key, before: $0.value, after: state.model[$0.key])
                }
                if let droppedEventModel, !before.contains(where: { $0.key == GtagCommand.eventModelKey }) {
                    result.traceSteps[traceStep].changes.insert(
                        PushTrace.Change(key: GtagCommand.eventModelKey, before: droppedEventModel, after: nil),
                        at: 0
                    )
                }
                result.traceSteps[traceStep].model = state.model
            }
            if readsRawValues {
                for (key, value) in message where !value.isUndefined { state.rawValues[key] = value }
                if let event = pending.event { state.rawValues["event"] = event }
            }
            if state.changes != nil {
                state.changes!.noteMerged(
                    message,
                    dotted: dotted,
                    clears: message[DataLayer.clearKey]?.isTruthy ?? false
                )
                if pending.event != nil { state.changes!.modelKeys.append("event") }
                if readsRawValues {
                    for (key, value) in message where !value.isUndefined { state.changes!.rawKeys.append(key) }
                    if pending.event != nil { state.changes!.rawKeys.append("event") }
                }
                if userProperties != nil { state.changes!.userProperties = true }
            }
            if case .object(let properties)? = userProperties {
                for (key, value) in properties {
                    switch value {
                    case .undefined, .null: state.userProperties[key] = nil
                    default: state.userProperties[key] = value
                    }
                }
            }
            if eventValue != nil {
                state.eventNumber += 1
                // What the evaluation reads of the session beyond the model (see ``SessionView``), as the push found it.
                if !reads.isDisjoint(with: [.consent, .rawValues, .userProperties]) {
                    sessionValues = SessionView.Values(
                        consent: reads.contains(.consent) && !state.consent.isEmpty ? state.consent : nil,
                        rawValues: readsRawValues ? state.rawValues : nil,
                        userProperties: reads.contains(.userProperties) ? state.userProperties : nil
                    )
                }
                if reads.contains(.oncePerLoad), !state.firedOncePerLoad.isEmpty {
                    oncePerLoad = OncePerLoad(state.firedOncePerLoad)
                }
            }
            let model = eventValue != nil && (tracing || reads.contains(.model)) ? state.model : ValueMap()
            return (model, state.eventNumber, runtime)
        }
        if let duplicate {
            result.markDuplicate(of: duplicate)
            return
        }
        if let tooLarge {
            refuse(tooLarge: tooLarge, into: &result)
            return
        }
        guard eventValue != nil, let runtime else { return }
        let evaluatedBefore = tracing ? result.evaluatedCount : 0
        // The snapshot is borrowed for the evaluation (the session's holder, `runtime`, keeps it alive):
        // retaining it, and its container array, wrote reference counts every session's pushes share.
        runtime.withSnapshot { snapshot in
            evaluate(
                in: snapshot,
                runtime: runtime,
                message: &message,
                model: &model,
                eventName: &eventName,
                reportedName: &reportedName,
                eventNumber: eventNumber,
                eventTime: eventTime,
                sessionValues: &sessionValues,
                oncePerLoad: &oncePerLoad,
                candidates: candidates,
                falsyEvent: falsyEvent,
                into: &result,
                remembering: &remembered,
                scratch: &scratch,
                tracing: tracing,
                turn: number,
                inside: enclosing
            )
        }
        // The once-per-load tags the evaluation fired for the first time, into the session's set (rare: at most once
        // per tag and session).
        if oncePerLoad.hasAdded {
            let added = oncePerLoad.takeAdded()
            state.withLock { state in
                for key in added where state.firedOncePerLoad.insert(key).inserted {
                    state.changes?.firedOncePerLoad.append(key)
                }
            }
        }
        if tracing, result.evaluatedCount > evaluatedBefore {
            result.traceSteps[result.traceSteps.count - 1].evaluated = evaluatedBefore
        }
    }

    /// Evaluates a merged push in every container of `snapshot` (borrowed: `runtime` holds it) and appends
    /// what it did to `result`. The message, model and names move into the evaluation and on into the result.
    /// A `falsyEvent` (`false`, `0`, `""`) is no event for web containers: they are skipped, and when every
    /// container is a web one the push is not an event at all. When the push's event ID was remembered, what it
    /// fired is summarised into `remembered` (``FiredSummary``).
    ///
    /// Kept out of line: inlined into ``process(_:into:scratch:lease:hooks:remembering:tracing:turn:inside:)``, its
    /// locals' copies and destroys there cost every push about 100 instructions more.
    @inline(never)
    private func evaluate(
        in snapshot: TagManager.Snapshot,
        runtime: SessionRuntime,
        message: inout ValueMap,
        model: inout ValueMap,
        eventName: inout String?,
        reportedName: inout Value,
        eventNumber: Int,
        eventTime: Double?,
        sessionValues: inout SessionView.Values?,
        oncePerLoad: inout OncePerLoad,
        candidates: ContainerCandidates?,
        falsyEvent: Bool,
        into result: inout PushResult,
        remembering remembered: inout RememberedEventID,
        scratch: inout EvaluationScratch,
        tracing: Bool,
        turn number: UInt64,
        inside enclosing: TurnMark?
    ) {
        let count = snapshot.containers.count
        guard count > 0 else { return }
        if falsyEvent, snapshot.containers.allSatisfy({ $0.platform == .web }) { return }
        // The containers no rule of which can pass for this event name get an empty report without an
        // evaluation; one evaluation then serves the first container that needs one and every later one.
        var first = 0
        var firstCandidates: RuleCandidates?
        while first < count {
            firstCandidates = candidates?[first]
            if firstCandidates?.isEmpty != true, !falsyEvent || snapshot.containers[first].platform != .web { break }
            first += 1
        }
        var movedMessage = ValueMap()
        swap(&movedMessage, &message)
        var movedName: String?
        swap(&movedName, &eventName)
        guard first < count else {
            let push = EvaluatedPush(
                runtime: runtime,
                eventName: movedName,
                message: movedMessage,
                calls: [],
                traces: []
            )
            if tagManager.hasObserver {
                DataLayer.$enclosingTurns.withValue(mark(turn: number, inside: enclosing)) {
                    notifyObserver(of: push, containers: snapshot.containers)
                }
            }
            result.append(consume push)
            return
        }
        var movedModel = ValueMap()
        swap(&movedModel, &model)
        var movedReportedName = Value.undefined
        swap(&movedReportedName, &reportedName)
        // Everything the evaluation holds moves into it (the message, the model, the names); what sessions
        // share it borrows (the snapshot's handlers) or reaches through the session's own references (the
        // containers, `runtime.containers`).
        var evaluation = Evaluation(
            container: runtime.containers[first],
            at: first,
            message: consume movedMessage,
            model: consume movedModel,
            eventName: consume movedName,
            eventNumber: eventNumber,
            session: SessionView(call: CallSession(self, eventTime: eventTime), values: sessionValues.take()),
            runtime: runtime,
            tagHandlers: snapshot.borrowedTagHandlers(first),
            recordTrace: tracing,
            scratch: scratch.moved(),
            reportedEventName: consume movedReportedName
        )
        DataLayer.$enclosingTurns.withValue(mark(turn: number, inside: enclosing)) {
            var traces: [PushTrace.Evaluation?] = []
            evaluation.run(candidates: firstCandidates, oncePerLoad: &oncePerLoad)
            if tracing {
                traces = Array(repeating: nil, count: count)
                traces[first] = evaluation.trace()
            }
            for c in (first + 1)..<count {
                let rules = candidates?[c]
                if rules?.isEmpty == true { continue }
                if falsyEvent, snapshot.containers[c].platform == .web { continue }
                evaluation.run(
                    container: runtime.containers[c],
                    at: c,
                    tagHandlers: snapshot.borrowedTagHandlers(c),
                    candidates: rules,
                    oncePerLoad: &oncePerLoad
                )
                if tracing { traces[c] = evaluation.trace() }
            }
            let calls = evaluation.takeCalls()
            if remembered.sequence >= 0 { remembered.fired.add(calls, containers: snapshot.containers) }
            let (name, pushed) = evaluation.takePush()
            let push = EvaluatedPush(runtime: runtime, eventName: name, message: pushed, calls: calls, traces: traces)
            if tagManager.hasObserver { notifyObserver(of: push, containers: snapshot.containers) }
            result.append(consume push)
        }
        scratch = evaluation.finish()
    }

    /// The mark of turn `number` of this session, inside the turns `enclosing` marks.
    private func mark(turn number: UInt64, inside enclosing: TurnMark?) -> TurnMark {
        TurnMark(session: ObjectIdentifier(self), turn: number, outer: enclosing.map(TurnMark.Outer.init))
    }

    /// Reports an evaluated push to the runtime's observer: each container evaluated, each tag fired.
    private func notifyObserver(of push: EvaluatedPush, containers: [Container]) {
        guard let observer = tagManager.observer else { return }
        var next = 0
        for c in containers.indices {
            observer.observe(.eventEvaluated(containerID: containers[c].id, eventName: push.eventName))
            while next < push.calls.count, push.calls[next].container == c {
                let call = push.calls[next]
                let storage = containers[c].storage
                observer.observe(
                    .tagFired(
                        containerID: storage.id,
                        tagIndex: call.tag,
                        tagID: storage.program.tags[call.tag].tagID,
                        classPath: call.classPath(in: storage),
                        status: call.status
                    )
                )
                next += 1
            }
        }
    }

    // MARK: Reading

    /// Reads a value of the merged model by dotted path (`"ecommerce.purchase.revenue"`);
    /// `.undefined` if any part is missing.
    public func get(_ path: String) -> Value {
        let segments = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        return state.withLock { Value.object($0.model).value(atPath: segments) }
    }

    /// A snapshot of the merged model.
    public var model: ValueMap { state.withLock { $0.model } }

    /// Empties the model and the version-1 raw values (attributes, user properties and once-per-load state
    /// are kept).
    public func clear() {
        state.withLock {
            $0.model = ValueMap()
            $0.rawValues = ValueMap()
            $0.changes?.replacesModel = true
            $0.changes?.replacesRawValues = true
        }
    }

    /// The last raw value pushed under the literal top-level key `key` (what a version-1 data-layer
    /// variable reads): no dot expansion, no merging; `.undefined` when none was pushed or no live
    /// container reads version 1.
    public func rawValue(forKey key: String) -> Value { state.withLock { $0.rawValues[key] ?? .undefined } }

    // MARK: User properties

    /// A Firebase user property of this session (what a `__fup` variable reads).
    public func userProperty(_ key: String) -> Value? { state.withLock { $0.userProperties[key] } }

    /// Sets (or with `nil`, removes) a Firebase user property; the push form is ``userPropertiesKey``. A push
    /// already being evaluated keeps the properties it started with.
    public func setUserProperty(_ value: Value?, forKey key: String) {
        state.withLock { state in
            state.userProperties[key] = value
            state.changes?.userProperties = true
        }
    }

    /// Every user property of this session.
    public var userProperties: ValueMap { state.withLock { $0.userProperties } }

    // MARK: Session attributes

    /// A value a host or handler stored on this session (for example the current user's identity); an
    /// attribute a typed value saves (``SessionExtensionKey``) is made from that value.
    public func attribute(_ key: String) -> Value? {
        state.withLock { $0.attributes[key] ?? $0.typedAttribute(key) }
    }

    /// Stores (or with `nil`, removes) a session attribute.
    public func setAttribute(_ value: Value?, forKey key: String) {
        state.withLock { state in
            state.attributes[key] = value
            state.attributeChanged(key)
            state.changes?.attributes = true
        }
    }

    // MARK: Merge semantics

    static func hasDot(_ key: String) -> Bool {
        // Read in place (native and small strings; `withUTF8` needed a mutable copy of the key) by `memchr`,
        // which looks at a word at a time.
        key.utf8.withContiguousStorageIfAvailable { utf8 in
            guard let base = utf8.baseAddress else { return false }
            return memchr(base, 0x2E, utf8.count) != nil
        } ?? key.utf8.contains(0x2E)
    }

    /// Merges a push into the model, key by key.
    static func merge(_ update: ValueMap, into model: inout ValueMap) {
        for (key, value) in update {
            if value.isUndefined { continue }
            model.modify(key, default: .undefined) { merge(value, into: &$0) }
        }
    }

    /// GTM's recursive merge of `new` into `existing`.
    static func merge(_ new: Value, into existing: inout Value) {
        switch new {
        case .undefined:
            return
        case .object(let update):
            var map: ValueMap
            if case .object(let current) = existing { map = current } else { map = ValueMap() }
            existing = .undefined  // drop the second reference so `map` mutates in place
            merge(update, into: &map)
            existing = .object(map)
        case .array(let update):
            var list: [Value]
            if case .array(let current) = existing { list = current } else { list = [] }
            existing = .undefined
            if list.count < update.count {
                list.reserveCapacity(update.count)
                while list.count < update.count { list.append(.null) }
            }
            for (i, element) in update.enumerated() {
                switch element {
                case .undefined: continue
                case .object, .array: merge(element, into: &list[i])
                default: list[i] = element
                }
            }
            existing = .array(list)
        default:
            existing = new
        }
    }

    static func makeSessionID() -> String {
        var generator = SystemRandomNumberGenerator()
        let a = generator.next() as UInt64
        return "s-" + String(a, radix: 36)
    }
}
