import Synchronization

/// One event evaluated in one container: macros (lazily, at most once each), predicates, rules, then the
/// selected tags fired in priority order. Synchronous and pure but for the handlers it calls (and what it logs
/// or reports to the runtime's observer).
///
/// One-way: everything it reads comes in, and everything it changes goes out, through its inputs. It holds no
/// reference to its ``DataLayer`` or ``TagManager`` and takes no lock of theirs:
/// - moved in by the push: the message, the model and the event name (moved out again with ``takePush()``), the
///   memo tables (handed back with ``finish()``), and the ``SessionView`` — the parts of the session's state the
///   containers read (consent, raw values, user properties), as the push found them, and the session its calls
///   are made for (which it cannot read);
/// - `inout`: the session's once-per-load tags (``OncePerLoad``), passed to each `run`;
/// - through the session's runtime holder (``runtime``, which the push retains): the session's client context as
///   the push found it, and, borrowed, the containers, the handlers, and the ``EvaluationEnvironment`` (the
///   logger, the observer, the random source, the problems reported once);
/// - out: the calls made (``takeCalls()``), the traces, and the keys added to ``OncePerLoad``.
///
/// One evaluation serves every container of a push: ``run(container:at:tagHandlers:candidates:oncePerLoad:)``
/// moves it to the next container, so the message, the model and the session are retained once per push, not
/// once per container.
struct Evaluation: MacroResolver {
    /// The container, through the session's own reference to it (see ``SessionRuntime/ContainerHold``): the
    /// evaluation retains that, not the container every session's evaluations share.
    private(set) var container: SessionRuntime.ContainerHold
    /// The container's storage: the hot path reads its program in place and never copies a definition.
    var storage: Container.Storage {
        @inline(__always) get { container.storage }
    }
    /// The pushed message and event name, moved in by the push and out again with ``takePush()``.
    private(set) var message: ValueMap
    /// The session's merged model; empty when no container of the push reads it (see
    /// ``Container/Storage/readsModel``).
    let model: ValueMap
    private(set) var eventName: String?
    let eventNumber: Int
    /// What the evaluation reads of its session (its consent, raw values, user properties) as the push found it,
    /// and the session its calls are made for: moved in by the push, only read.
    let session: SessionView
    /// The session's hold on the runtime snapshot being evaluated (its own, not the snapshot every session
    /// shares): it keeps the borrowed ``tagHandlers`` alive.
    let runtime: SessionRuntime
    /// The registered handlers, for calls that look theirs up by name.
    var handlers: TagManager.Handlers { runtime.snapshot.handlers }
    /// The registry's handler of each tag with a call plan, borrowed from ``runtime``'s snapshot (see
    /// ``TagManager/Snapshot/borrowedTagHandlers(_:)``); empty when the caller resolved none (every call
    /// then looks its handler up by name).
    private(set) var tagHandlers: SessionRuntime.BorrowedHandlers
    let recordTrace: Bool

    /// What `__e` reports for the container being evaluated: the event name, a Firebase short name expanded by the
    /// container's own table (see ``startContainer()``).
    private(set) var reportedEventName: Value
    /// Memo tables, valid for this evaluation only where the mark equals the generation: a macro is done
    /// at `2 * generation + 1`, being evaluated at `2 * generation`; a predicate is true at
    /// `2 * generation + 1`, false at `2 * generation`. Nothing is cleared between events.
    private var generation: UInt32 = 1
    /// Set by the macro just computed when it is evaluated at each reference (a function-call variable): its value is
    /// not memoised.
    private var computedPerReference = false
    private var macroValues: [Value] = []
    private var macroMarks: [UInt32] = []
    private var predicateMarks: [UInt32] = []
    /// What happened to each tag this event; valid only while ``tagStateLive`` (set when a rule adds or
    /// blocks a tag, or a tag fires). The buffer keeps its size from container to container and event to
    /// event: starting a container clears the flag, not the buffer.
    private var tagState: [TagState] = []
    private var tagStateLive = false
    /// The calls made so far, in every container this evaluation ran (see ``takeCalls()``).
    private var fired: [FiredCall] = []
    /// The position of ``storage`` in the push's snapshot (what ``FiredCall/container`` records).
    private var containerIndex = 0
    /// How many macro evaluations are in progress (macros reading macros).
    private var nesting = 0
    /// Deeper chains of macros reading macros evaluate to undefined (the stack is finite).
    static let maximumMacroNesting = 100
    /// The handler found last: consecutive tags usually call the same class path.
    private var lastHandler: (name: String, handler: any FunctionCallTagHandler)?
    /// This thread's copies of the constants of ``storage`` (its calls', conditions' and variables'), taken when
    /// the container starts (see ``SessionRuntime/Constants``).
    private var constants = SessionRuntime.Constants()
    private var evaluatedOrder: [Int] = []
    /// The predicates whose regular expression ran out of its step budget in this container (traces only).
    private var budgetExceededPredicates: [Int] = []
    /// What of the page the session knows (``knownPageInputs()``), for a container whose tags' unknown inputs
    /// read the page; empty for the others (whose unknown inputs are unknown whatever the session knows). Taken once
    /// per container and push: the calls and the trace read it from here.
    private var pageKnown: UnknownInput.Needs = []

    init(
        container: SessionRuntime.ContainerHold,
        at containerIndex: Int = 0,
        message: ValueMap,
        model: ValueMap,
        eventName: String?,
        eventNumber: Int,
        session: consuming SessionView,
        runtime: SessionRuntime,
        tagHandlers: SessionRuntime.BorrowedHandlers = .none,
        recordTrace: Bool,
        scratch: consuming EvaluationScratch = EvaluationScratch(),
        reportedEventName: Value? = nil
    ) {
        self.container = container
        self.containerIndex = containerIndex
        self.message = message
        self.model = model
        self.eventName = eventName
        self.eventNumber = eventNumber
        self.session = session
        self.runtime = runtime
        self.tagHandlers = tagHandlers
        self.recordTrace = recordTrace
        self.reportedEventName = reportedEventName ?? Evaluation.reportedName(eventName)
        generation = scratch.generation
        swap(&macroValues, &scratch.macroValues)
        swap(&macroMarks, &scratch.macroMarks)
        swap(&predicateMarks, &scratch.predicateMarks)
        swap(&tagState, &scratch.tagState)
        startContainer()
    }

    /// Starts the evaluation of ``storage``: a new memo generation (stale marks no longer match), tables
    /// large enough for its program, no tag state.
    private mutating func startContainer() {
        if generation >= UInt32.max / 2 - 1 {
            generation = 1
            for i in macroMarks.indices { macroMarks[i] = 0 }
            for i in predicateMarks.indices { predicateMarks[i] = 0 }
        } else {
            generation += 1
        }
        tagStateLive = false
        pageKnown = storage.unknownInputsReadPage ? knownPageInputs() : []
        // A Firebase short name (`_vs`) is reported as the container's own table says: a web container's not at all,
        // an older v5 container's table may not have it. Other names are reported as pushed.
        if Evaluation.mayBeShortName(eventName), let name = eventName {
            reportedEventName = .string(storage.program.firebaseEventNames[name] ?? name)
        }
        constants.start(storage)
        if !budgetExceededPredicates.isEmpty { budgetExceededPredicates.removeAll() }
        let macroCount = storage.program.macros.count
        if macroMarks.count < macroCount {
            macroMarks.append(contentsOf: repeatElement(0, count: macroCount - macroMarks.count))
            macroValues.append(contentsOf: repeatElement(.undefined, count: macroCount - macroValues.count))
        }
        let predicateCount = storage.program.predicates.count
        if predicateMarks.count < predicateCount {
            predicateMarks.append(contentsOf: repeatElement(0, count: predicateCount - predicateMarks.count))
        }
    }

    /// The runtime's logger, observer, random source and report-once set, through ``runtime`` (read on the rare
    /// paths that need them: an error, a problem reported once, the random variable).
    var environment: EvaluationEnvironment { runtime.withSnapshot { $0.environment } }

    /// The runtime's logger with the session bound: every message the evaluation writes says which session.
    var logger: BoundLogger {
        BoundLogger(base: environment.logger, metadata: ["session": session.call.sessionID])
    }

    /// Whether `eventName` starts with `_`, as Firebase's short names do: each container reports it by its own table.
    static func mayBeShortName(_ eventName: String?) -> Bool {
        guard let eventName else { return false }
        // The first byte read by the iterator: `utf8.first` is an unspecialised generic call.
        var bytes = eventName.utf8.makeIterator()
        return bytes.next() == 0x5F
    }

    /// What `__e` reports for a pushed event name before a container is chosen: the name as pushed (a Firebase short
    /// name, `_e`, is expanded by each container's own table when its evaluation starts, ``startContainer()``).
    static func reportedName(_ eventName: String?) -> Value {
        guard let eventName else { return .undefined }
        return .string(eventName)
    }

    // MARK: Running an event

    /// Evaluates the event: the candidate rules (see ``CandidateRules``), then fires the selected tags; the
    /// calls are kept for ``takeCalls()``, the trace (when the evaluation records one) is read with ``trace()``.
    mutating func run(candidates: RuleCandidates? = nil, oncePerLoad: inout OncePerLoad) {
        if case .string(let name) = reportedEventName {
            switch candidates {
            case .bits(let bits)?:
                var rest = bits
                while rest != 0 {
                    applyRule(rest.trailingZeroBitCount)
                    rest &= rest &- 1
                }
            case .list(let list)?:
                for r in list { applyRule(r) }
            case nil:
                for r in storage.candidates.rules(for: name, in: storage) { applyRule(r) }
            }
            if tagStateLive {
                // Indexed, not iterated: iterating the container's array retained it around every firing (a
                // reference count every session shares).
                var i = 0
                while i < storage.program.tagOrder.count {
                    let t = storage.program.tagOrder[i]
                    if tagState[t].intersection(.selection) == .added { fire(t, &oncePerLoad) }
                    i += 1
                }
            }
        }
    }

    /// The calls of every container run so far, moved out (not copied).
    mutating func takeCalls() -> [FiredCall] {
        var calls: [FiredCall] = []
        swap(&calls, &fired)
        return calls
    }

    /// The message and event name, moved out for the push's result (after the last container ran).
    mutating func takePush() -> (eventName: String?, message: ValueMap) {
        var message = ValueMap()
        swap(&message, &self.message)
        var eventName: String?
        swap(&eventName, &self.eventName)
        return (eventName, message)
    }

    /// Evaluates the same event in another container (after ``run(candidates:oncePerLoad:)`` returned for the last
    /// one).
    mutating func run(
        container: SessionRuntime.ContainerHold,
        at index: Int,
        tagHandlers: SessionRuntime.BorrowedHandlers,
        candidates: RuleCandidates?,
        oncePerLoad: inout OncePerLoad
    ) {
        self.container = container
        containerIndex = index
        self.tagHandlers = tagHandlers
        evaluatedOrder.removeAll(keepingCapacity: true)
        startContainer()
        run(candidates: candidates, oncePerLoad: &oncePerLoad)
    }

    /// The buffers, moved out for the session's next push (the evaluation is done with them).
    mutating func finish() -> EvaluationScratch {
        var scratch = EvaluationScratch()
        tagStateLive = false
        scratch.generation = generation
        swap(&macroValues, &scratch.macroValues)
        swap(&macroMarks, &scratch.macroMarks)
        swap(&predicateMarks, &scratch.predicateMarks)
        swap(&tagState, &scratch.tagState)
        return scratch
    }

    private mutating func applyRule(_ r: Int) {
        guard rulePasses(r) else { return }
        startTagState()
        var i = 0
        while i < storage.program.rules[r].add.count {
            tagState[storage.program.rules[r].add[i]].formUnion(.added)
            i += 1
        }
        i = 0
        while i < storage.program.rules[r].block.count {
            let t = storage.program.rules[r].block[i]
            if !tagState[t].contains(.blocked), let observer = runtime.withSnapshot({ $0.environment.observer }) {
                observer.observe(
                    .tagBlocked(containerID: storage.id, tagIndex: t, tagID: storage.program.tags[t].tagID)
                )
            }
            tagState[t].formUnion(.blocked)
            i += 1
        }
    }

    /// Makes ``tagState`` valid for this container (every tag untouched), once per container and event.
    @inline(__always)
    private mutating func startTagState() {
        guard !tagStateLive else { return }
        let count = storage.program.tags.count
        if tagState.count < count {
            tagState.append(contentsOf: repeatElement(TagState(), count: count - tagState.count))
        }
        for t in 0..<count { tagState[t] = TagState() }
        tagStateLive = true
    }

    /// Whether rule `r` passes. The conditions are read by index: iterating the container's arrays retained
    /// them around each predicate (a reference count every session shares).
    mutating func rulePasses(_ r: Int) -> Bool {
        var i = 0
        while i < storage.program.rules[r].unless.count {
            if predicate(storage.program.rules[r].unless[i]) { return false }
            i += 1
        }
        i = 0
        while i < storage.program.rules[r].ifs.count {
            if !predicate(storage.program.rules[r].ifs[i]) { return false }
            i += 1
        }
        return true
    }

    /// How a tag's sequence (its setup tag, itself, its teardown tag) ended: which of gtm.js's continuations it
    /// called — the success one, the failure one, or neither (a "don't fire if … fails" stopped it).
    enum SequenceOutcome {
        case succeeded, failed, stopped
    }

    /// The suffix of a once-per-load key (`<container>#<tag>`, see ``callOnce(_:_:)``) that records that the
    /// tag's one call failed.
    static let failedOncePerLoadSuffix = "!failed"

    /// Fires tag `t` with its setup and teardown tags, as gtm.js sequences them (`dr` and `er` in the served
    /// scripts' runtime): the setup tag first; its success runs the tag, its failure too unless the tag stops
    /// on setup failure; then the teardown tag, whose outcome is the sequence's (a failed tag skips it when it
    /// stops on failure). A once-per-load tag whose one call already ran answers with that call's outcome
    /// without calling again — its setup and teardown tags still run. (An enum, not the status: statuses carry
    /// messages, and copying one per tag is measurable on the hot path; the status is in ``fired``.)
    @discardableResult
    private mutating func fire(_ t: Int, _ oncePerLoad: inout OncePerLoad) -> SequenceOutcome {
        startTagState()
        let state = tagState[t]
        if state.contains(.attempted) {
            // At most once per event: a tag met again (the setup of two tags) answers with its call's outcome.
            if state.contains(.succeeded) { return .succeeded }
            return state.contains(.ran) || state.contains(.skippedOncePerLoad) ? .failed : .stopped
        }
        tagState[t].formUnion(.attempted)
        // gtm.js's `__paused` calls its failure callback.
        if case .paused = storage.program.tags[t].kind { return .failed }
        var i = 0
        while i < storage.program.tags[t].setupTags.count {
            let setup = storage.program.tags[t].setupTags[i]
            switch fire(setup.tag, &oncePerLoad) {
            case .succeeded: break
            case .failed: if setup.stopOnFailure { return .stopped }
            case .stopped: return .stopped
            }
            i += 1
        }
        var outcome = callOnce(t, &oncePerLoad)
        i = 0
        while i < storage.program.tags[t].teardownTags.count {
            let teardown = storage.program.tags[t].teardownTags[i]
            if outcome == .stopped || (outcome == .failed && teardown.stopOnFailure) { return .stopped }
            outcome = fire(teardown.tag, &oncePerLoad)
            i += 1
        }
        return outcome
    }

    /// Calls tag `t` itself, or — for a once-per-load tag whose one call already ran in this session — answers
    /// with that call's outcome (gtm.js keeps a once-only tag's outcome and calls the continuation it chose).
    private mutating func callOnce(_ t: Int, _ oncePerLoad: inout OncePerLoad) -> SequenceOutcome {
        guard storage.program.tags[t].oncePerLoad else { return runCall(t) ? .succeeded : .failed }
        let key = storage.id + "#" + String(t)
        var earlier: SequenceOutcome?
        if !oncePerLoad.insert(key) {
            earlier = oncePerLoad.contains(key + Evaluation.failedOncePerLoadSuffix) ? .failed : .succeeded
        }
        if let earlier {
            tagState[t].formUnion(earlier == .succeeded ? [.skippedOncePerLoad, .succeeded] : .skippedOncePerLoad)
            return earlier
        }
        if runCall(t) { return .succeeded }
        oncePerLoad.insert(key + Evaluation.failedOncePerLoadSuffix)
        return .failed
    }

    /// Calls tag `t` and records its outcome in ``tagState``; returns whether it counts as succeeded. A tag
    /// ContainerKit cannot run (custom HTML, other web-only tags: ``FiredTag/Status/unsupported``) would
    /// normally succeed in a browser, so for sequencing it counts as succeeded (it stays reported unsupported).
    @inline(__always)
    private mutating func runCall(_ t: Int) -> Bool {
        var succeeded = call(t)
        if !succeeded, case .unsupported = storage.program.tags[t].kind, !blockedByConsent(t) { succeeded = true }
        tagState[t].formUnion(succeeded ? [.ran, .succeeded] : .ran)
        return succeeded
    }

    /// Whether tag `t`'s call this event was blocked by consent.
    @inline(__always)
    private func blockedByConsent(_ t: Int) -> Bool {
        guard !storage.program.tags[t].consentTypes.isEmpty,
            let call = fired.last(where: { $0.container == containerIndex && $0.tag == t })
        else { return false }
        if case .blockedByConsent = call.status { return true }
        return false
    }

    /// This thread's copy of predicate `p`'s constant text.
    private mutating func constantText(ofPredicate p: Int) -> String? {
        constants.text(ofPredicate: p)
    }

    /// Calls tag `t` and records it in ``fired``; returns whether the call succeeded (`ok` or `pending`).
    private mutating func call(_ t: Int) -> Bool {
        // gtm.js (`er`, 2022; `RC`, 2025): the tag's fields are evaluated, then each type of its `consent` list
        // must be granted (`ij` / `wp`), else the tag's failure continuation runs instead of the tag.
        if !storage.program.tags[t].consentTypes.isEmpty, let denied = deniedConsent(t) {
            return blockByConsent(t, denied)
        }
        // The parts are computed first and the record is built in place in `fired`: a record built early
        // and appended at the end was copied whole (it is large) on every call. Each part is set once, on every
        // path (an empty argument map made first and then replaced cost three releases per call).
        var classPath: String?
        var planned = false
        var parameters: ValueMap
        let status: FiredTag.Status
        let output: TagOutput?
        if let borrowedPlan = SessionRuntime.callPlan(ofTag: t, in: storage) {
            planned = true
            (status, output, parameters) = borrowedPlan.with { plan in
                // The plan and the handler are borrowed (``storage`` and the caller's snapshot keep them
                // alive), and the keys, the origin and the literal values the call retains are this thread's
                // copies (see ``SessionRuntime``): retaining the shared ones would write reference counts every
                // session's evaluations share.
                let call = constants.call(of: plan, tag: t)
                var arguments = evaluateArguments(plan, call)
                if let done = tagHandlers.withHandler(
                    ofTag: t,
                    { handler in
                        perform(handler, origin: call.origin, t, &arguments)
                    }
                ) {
                    return (done.0, done.1, arguments)
                }
                let done = invoke(handlerNamed: plan.name, origin: call.origin, t, &arguments)
                return (done.0, done.1, arguments)
            }
        } else {
            switch storage.program.tags[t].kind {
            case .functionCall(let classPathExpr, let argumentsExpr):
                let path: String
                if case .literal(.string(let literal)) = classPathExpr {
                    path = literal
                } else {
                    path = evaluate(classPathExpr).jsString
                }
                classPath = path
                parameters = evaluateArguments(argumentsExpr)
                (status, output) = invoke(handlerNamed: path, origin: nil, t, &parameters)
            case .legacyFunctionCall(let name, let argumentsExpr):
                classPath = name
                parameters = evaluateArguments(argumentsExpr)
                (status, output) = invoke(handlerNamed: name, origin: nil, t, &parameters)
            case .paused:
                return false
            case .unsupported:
                // Its fields as gtm.js evaluates them before it runs a tag (what a GA4 event would send), for a report
                // that shows them (`TagManager.evaluatesUnsupportedTags`, a trace).
                parameters = ValueMap()
                if recordTrace || environment.evaluatesUnsupportedTags {
                    for (key, expr) in storage.program.tags[t].parameters { parameters[key] = evaluate(expr) }
                }
                (status, output) = (.unsupported, nil)
            }
        }
        // A held call (`pending`) ran: its records are only sent later, so its teardown tags run as after `ok`.
        let succeeded =
            switch status {
            case .ok, .pending: true
            default: false
            }
        if fired.capacity == 0 { fired.reserveCapacity(4) }
        fired.append(
            FiredCall(
                container: containerIndex,
                tag: t,
                classPath: classPath,
                planned: planned,
                parameters: consume parameters,
                status: status,
                output: output,
                known: pageKnown
            )
        )
        return succeeded
    }

    /// The consent types tag `t` requires that the session's consent state did not grant when the push began
    /// (consent commands are pushes: one pushed during this push applies from the next); `nil` when all are granted.
    private func deniedConsent(_ t: Int) -> [String]? {
        guard let denied = session.values?.consent?.denied(among: storage.program.tags[t].consentTypes),
            !denied.isEmpty
        else { return nil }
        return denied
    }

    /// Records tag `t` as blocked by consent (its parameters evaluated, as gtm.js evaluates a tag's fields before
    /// its consent check); a failure for sequencing, as in gtm.js.
    private mutating func blockByConsent(_ t: Int, _ denied: [String]) -> Bool {
        var classPath: String?
        var parameters = ValueMap()
        switch storage.program.tags[t].kind {
        case .functionCall(let classPathExpr, let argumentsExpr):
            classPath = evaluate(classPathExpr).jsString
            parameters = evaluateArguments(argumentsExpr)
        case .legacyFunctionCall(let name, let argumentsExpr):
            classPath = name
            parameters = evaluateArguments(argumentsExpr)
        case .paused, .unsupported:
            for (key, expr) in storage.program.tags[t].parameters { parameters[key] = evaluate(expr) }
        }
        fired.append(
            FiredCall(
                container: containerIndex,
                tag: t,
                classPath: classPath,
                planned: false,
                parameters: parameters,
                status: .blockedByConsent(denied),
                output: nil,
                known: pageKnown
            )
        )
        return false
    }

    /// Calls the handler registered for `name` (`origin` is the tag's plan's, if it has one).
    private mutating func invoke(
        handlerNamed name: String,
        origin: FunctionCall.Origin?,
        _ t: Int,
        _ arguments: inout ValueMap
    ) -> (FiredTag.Status, TagOutput?) {
        let handler: any FunctionCallTagHandler
        if let cached = lastHandler, cached.name == name {
            handler = cached.handler
        } else if let found = handlers.tags[name] {
            handler = found
            lastHandler = (name, found)
        } else {
            environment.reportOnce(
                "unhandled-tag:\(name)",
                metadata: ["container": storage.id, "class_path": name]
            ) { "no function-call tag handler is registered for the class path" }
            return (.unhandled, nil)
        }
        let tag = storage.program.tags[t]
        let origin =
            origin
            ?? FunctionCall.Origin(name: name, containerID: storage.id, tagID: tag.tagID, displayName: tag.name)
        return perform(handler, origin: origin, t, &arguments)
    }

    /// Calls `handler` with `arguments` (moved into the call and back out of it, not copied); a throwing
    /// handler is logged and reported as failed. `mutating` though it changes nothing: called from the
    /// closures of ``call(_:)``, a non-mutating method had the compiler copy the whole evaluation per call.
    private mutating func perform(
        _ handler: any FunctionCallTagHandler,
        origin: consuming FunctionCall.Origin,
        _ t: Int,
        _ arguments: inout ValueMap
    ) -> (FiredTag.Status, TagOutput?) {
        var moved = ValueMap()
        swap(&moved, &arguments)
        var call = FunctionCall(
            origin: consume origin,
            arguments: consume moved,
            eventName: eventName,
            session: session.call
        )
        defer { swap(&arguments, &call.arguments) }
        do {
            let output = try handler.perform(call)
            if output.isEmpty { return (.ok, nil) }
            if let reason = output.dropReason { return (.dropped(reason), output) }
            if let reason = output.pendingReason { return (.pending(reason), output) }
            return (.ok, output)
        } catch {
            var metadata: LogMetadata = [
                "container": call.origin.containerID, "class_path": call.origin.name,
                "error": String(describing: error),
            ]
            if let tagID = call.origin.tagID {
                metadata["tag"] = String(tagID)
            } else {
                metadata["tag_name"] = call.origin.displayName ?? storage.program.tags[t].function
            }
            logger.error("a tag handler threw", metadata: metadata)
            return (.failed(String(describing: error)), nil)
        }
    }

    /// The argument map of a planned call: each slot read in order, undefined values left out.
    ///
    /// `call` holds this thread's copies of the plan's keys and literal values. When every value is defined
    /// (the usual case) the map shares the keys array: one allocation (the values) and no copy of each key.
    /// Otherwise the keys of the defined values are copied.
    private mutating func evaluateArguments(_ plan: CallPlan, _ call: SessionRuntime.CallConstants) -> ValueMap {
        let planKeys = call.keys
        var values: [Value] = []
        values.reserveCapacity(plan.slots.count)
        var keys: [String]?  // only once a value is left out
        for i in plan.slots.indices {
            let value: Value
            switch plan.slots[i] {
            case .literal: value = call.literal(i)  // this thread's copy
            case .macro(let index): value = resolve(macro: index)
            case .expression(let expr): value = evaluate(expr)
            }
            if value.isUndefined {
                if keys == nil {
                    keys = Array(planKeys[..<i])
                    keys!.reserveCapacity(planKeys.count - 1)
                }
                continue
            }
            keys?.append(planKeys[i])
            values.append(consume value)
        }
        if let keys { return ValueMap(distinctKeys: keys, values: values) }
        return ValueMap(distinctKeys: planKeys, values: values)
    }

    mutating func evaluateArguments(_ expr: Expr) -> ValueMap {
        if case .map(let entries) = expr { return ExpressionEvaluator.evaluateMap(entries, &self) }
        switch evaluate(expr) {
        case .object(let map): return map
        default: return ValueMap()
        }
    }

    // MARK: Expressions and macros

    mutating func evaluate(_ expr: Expr) -> Value {
        ExpressionEvaluator.evaluate(expr, &self)
    }

    var templatesJoinLikeJavaScript: Bool { storage.program.undefinedComparesAsText }

    mutating func resolve(macro index: Int) -> Value {
        let mark = macroMarks[index]
        if mark == 2 &* generation &+ 1 { return macroValues[index] }
        if mark == 2 &* generation {
            let macro = storage.program.macros[index]
            environment.reportOnce(
                "cycle:\(storage.id):\(index)",
                level: .error,
                metadata: ["container": storage.id, "variable": macro.name ?? macro.function, "macro": String(index)]
            ) { "macro cycle detected; the variable evaluates to undefined" }
            return .undefined
        }
        if nesting >= Evaluation.maximumMacroNesting {
            // A chain of thousands of macros (hostile or generated) must not exhaust the stack.
            environment.reportOnce(
                "nesting:\(storage.id)",
                level: .error,
                metadata: [
                    "container": storage.id, "macro": String(index), "limit": String(Evaluation.maximumMacroNesting),
                ]
            ) { "macros nest deeper than the limit; the innermost evaluates to undefined" }
            return .undefined
        }
        macroMarks[index] = 2 &* generation
        nesting += 1
        let value = computeMacro(index)
        nesting -= 1
        macroValues[index] = value
        if computedPerReference {
            computedPerReference = false
            // Stale (the last generation's "done"): the next reference computes it again. Its last value is kept for
            // the trace.
            macroMarks[index] = 2 &* generation &- 1
            if recordTrace && !evaluatedOrder.contains(index) { evaluatedOrder.append(index) }
        } else {
            macroMarks[index] = 2 &* generation &+ 1
            if recordTrace { evaluatedOrder.append(index) }
        }
        return value
    }

    private mutating func computeMacro(_ index: Int) -> Value {
        var value: Value
        // A variable (most macros) is read with this thread's copies of its key and path, without copying its
        // definition: binding the definition's payload retained its key, path and default value, which every
        // session's evaluations share.
        switch constants.read(ofMacro: index) {
        case .eventParameter(let checksEcommerce, let hasDefault, let nested):
            let key = constants.key(ofMacro: index)
            if nested {
                // `__md_main` walks a dotted key property by property (a list's and a string's `length` too) and never
                // reads a parameter named with the dots.
                let path = constants.path(ofMacro: index)
                value = Value.object(message).javaScriptValue(atPath: path, nullOnTheWay: .undefined)
            } else {
                value = message[key] ?? .undefined
                // The runtime reads the event's parameters, which do not hold its name.
                if !value.isUndefined, key.utf8.count == 5, key == "event" { value = .undefined }
            }
            // The v5 runtime's `__md_main` asks `value == undefined`, which a `null` passes too: a null parameter is
            // a missing one (the default value applies).
            if value == .null { value = .undefined }
            if value.isUndefined, checksEcommerce, !nested, let found = Evaluation.ecommerceValue(key, in: message) {
                value = found  // the runtime returns it as is, without the default value
            } else if value.isUndefined, hasDefault {
                value = variableDefault(ofMacro: index)
            }
        case .dataLayer(let hasDefault, let nested):
            if nested {
                let path = constants.path(ofMacro: index)
                value =
                    storage.program.undefinedComparesAsText
                    ? Value.object(model).javaScriptValue(atPath: path) : Value.object(model).value(atPath: path)
            } else {
                value = model[constants.key(ofMacro: index)] ?? .undefined
            }
            if value.isUndefined, hasDefault { value = variableDefault(ofMacro: index) }
        case .other:
            value = computeDefinedMacro(index)
        }
        if !storage.program.macros[index].format.isEmpty {
            value = apply(storage.program.macros[index].format, to: value)
        }
        return value
    }

    /// The value of macro `index` from its definition (before its format): every kind but the variables.
    private mutating func computeDefinedMacro(_ index: Int) -> Value {
        var value: Value
        switch storage.program.macros[index].kind {
        case .eventName:
            value = reportedEventName
        case .eventParameter, .dataLayer:
            // Read by `computeMacro` from this thread's copies: ``SessionRuntime/VariableRead`` is never
            // `.other` for a variable.
            assertionFailure("a variable macro read from its definition")
            value = .undefined
        case .rawDataLayer(let name, let defaultValue):
            value = session.values?.rawValues?[name] ?? .undefined
            if value.isUndefined, let defaultValue { value = evaluate(defaultValue) }
        case .computedDataLayer(let nameExpr, let version, let defaultValue):
            let name = TemplateCatalog.dataLayerName(evaluate(nameExpr).jsString)
            if version == 1 {
                value = session.values?.rawValues?[name] ?? .undefined
            } else if storage.program.undefinedComparesAsText {
                value = Value.object(model).javaScriptValue(atPath: TemplateCatalog.splitPath(name))
            } else {
                value = Value.object(model).value(atPath: TemplateCatalog.splitPath(name))
            }
            if value.isUndefined, let defaultValue { value = evaluate(defaultValue) }
        case .userProperty(let key, let defaultValue):
            value = session.values?.userProperties?[key] ?? .undefined
            if value.isUndefined, let defaultValue { value = evaluate(defaultValue) }
        case .constant(let expr):
            value = evaluate(expr)
        case .builtIn(let builtIn):
            value = self.builtIn(builtIn)
        case .url(let variable):
            value = pageURLValue(variable)
        case .referrer(let variable):
            value = referrerValue(variable)
        case .cookie(let name, let decodes):
            value = cookieValue(name: name, decodes: decodes)
        case .lookupTable(let input, let rows, let defaultValue):
            let key = evaluate(input).jsString
            value = .undefined
            var matched = false
            if storage.program.undefinedComparesAsText {
                // GTM's web runtime builds the table row by row into an object: a repeated key keeps its last row.
                for row in rows.reversed() where evaluate(row.key).jsString.hasSameBytes(as: key) {
                    value = evaluate(row.value)
                    matched = true
                    break
                }
            } else {
                for row in rows where evaluate(row.key).jsString.hasSameBytes(as: key) {
                    value = evaluate(row.value)
                    matched = true
                    break
                }
            }
            if !matched, let defaultValue { value = evaluate(defaultValue) }
        case .regexTable(let input, let rows, let replace, let defaultValue, let options, let fullMatch):
            value = regexTable(
                input: input,
                rows: rows,
                replace: replace,
                defaultValue: defaultValue,
                options: options,
                fullMatch: fullMatch
            )
        case .functionCall(let classPathExpr, let argumentsExpr):
            value = callMacro(
                named: evaluate(classPathExpr).jsString,
                arguments: evaluateArguments(argumentsExpr),
                storage.program.macros[index]
            )
            computedPerReference = true
        case .legacyFunctionCall(let name, let argumentsExpr):
            value = callMacro(named: name, arguments: evaluateArguments(argumentsExpr), storage.program.macros[index])
            computedPerReference = true
        case .unsupported:
            value = .undefined
        }
        return value
    }

    /// The default value of variable macro `m` (an event parameter or a data-layer variable), evaluated;
    /// undefined when it has none.
    private mutating func variableDefault(ofMacro m: Int) -> Value {
        switch storage.program.macros[m].kind {
        case .eventParameter(_, _, let defaultValue?, _), .dataLayer(_, _, let defaultValue?):
            return evaluate(defaultValue)
        default:
            return .undefined
        }
    }

    /// The lists a suggested parameter with `checkEcommerceValue` falls back to, in the runtime's order.
    static let ecommerceLists = ["items", "promotions"]

    /// What the container runtime's `__md` finds for a missing suggested parameter `key` with
    /// `checkEcommerceValue`: `items[0][key]`, else `promotions[0][key]` (a list's first element, or a map
    /// itself). `nil` when neither has it (the default value applies); undefined where the runtime's own
    /// code would fail (`items` is `null` or an empty list: `items[0][key]` throws), without the default.
    static func ecommerceValue(_ key: String, in message: ValueMap) -> Value? {
        // `!= undefined` throughout, as `__md_main` writes it: a `null` list or value is skipped like a missing one.
        for name in Evaluation.ecommerceLists {
            guard var holder = message[name], !holder.isUndefined, holder != .null else { continue }
            if case .array(let elements) = holder {
                guard let first = elements.first else { return .undefined }
                holder = first
            }
            switch holder {
            case .undefined, .null: return .undefined
            case .object(let members):
                if let value = members[key], !value.isUndefined, value != .null { return value }
            default: continue
            }
        }
        return nil
    }

    private func builtIn(_ builtIn: BuiltIn) -> Value {
        // The context as the push found it, in the session's runtime holder (a host's `updateContext` during the push
        // applies to the next one).
        let box = runtime.context
        switch builtIn {
        case .containerID: return .string(storage.id)
        case .containerVersion: return .string(storage.version)
        case .random: return .int(environment.randomSource.value(eventNumber: eventNumber))
        case .appID: return .string(box.value.appID)
        case .appName: return .string(box.value.appName)
        case .appVersionCode: return .string(box.value.appVersionCode)
        case .appVersionName: return .string(box.value.appVersionName)
        case .platform: return .string(box.value.platform)
        case .language: return .string(box.value.language)
        case .osVersion: return .string(box.value.osVersion)
        case .sdkVersion: return .string(box.value.sdkVersion)
        case .deviceName: return .string(box.value.deviceName)
        case .resolution: return .string(box.value.resolution)
        case .advertisingTrackingEnabled: return .bool(box.value.advertisingTrackingEnabled)
        case .advertiserID: return box.value.advertiserID.map(Value.string) ?? .undefined
        case .eventNumber: return .int(Int64(eventNumber))
        }
    }

    /// What of the page this push knows: its URL (``ClientContext/pageURL`` or a pushed `gtm.url`) and its referrer
    /// (``ClientContext/referrer`` or a pushed `gtm.referrer`).
    private func knownPageInputs() -> UnknownInput.Needs {
        let box = runtime.context
        let raw = session.values?.rawValues
        var known: UnknownInput.Needs = []
        if box.value.pageURL != nil || raw?["gtm.url"]?.isTruthy == true { known.insert(.pageURL) }
        if box.value.referrer != nil || raw?["gtm.referrer"]?.isTruthy == true { known.insert(.referrer) }
        if box.value.cookies != nil || raw?["gtm.cookie"]?.isTruthy == true { known.insert(.cookies) }
        return known
    }

    /// gtm.js's `__k`: the first cookie named `name` of the data layer's `gtm.cookie` (version 1) when truthy, else of
    /// the session's ``ClientContext/cookies`` (undefined when not known): `name=value` pairs split at `;`, name and
    /// value trimmed, the value URI-decoded with `decodes` (`false` when it does not decode, as gtm.js's expander makes
    /// a variable that throws); undefined when no cookie has the name.
    private mutating func cookieValue(name nameExpr: Expr, decodes decodesExpr: Expr?) -> Value {
        var text: String?
        if let pushed = session.values?.rawValues?["gtm.cookie"], pushed.isTruthy { text = pushed.jsString }
        guard let text = text ?? runtime.context.value.cookies else { return .undefined }
        let name = evaluate(nameExpr).jsString
        let decodes = decodesExpr.map { evaluate($0).isTruthy } ?? false
        return Cookies.value(named: name, in: text, decoding: decodes) ?? .undefined
    }

    /// gtm.js's `__u` (served gtm.js of 2026): the custom source when it is truthy, else the data layer's `gtm.url`
    /// (version 1) when truthy, else the page's URL (the session's ``ClientContext/pageURL`` as a browser's
    /// `location.href` has it; undefined when not known); the part the variable names, or the text without its
    /// fragment.
    private mutating func pageURLValue(_ variable: URLVariable) -> Value {
        let page = runtime.context.value.pageURL.map { URLParts.reading($0, on: nil) }
        var text: String?
        if let source = variable.customSource {
            let value = evaluate(source)
            if value.isTruthy { text = value.jsString }
        }
        if text == nil, let pushed = session.values?.rawValues?["gtm.url"], pushed.isTruthy { text = pushed.jsString }
        guard let text = text ?? page?.href else { return .undefined }
        guard let part = URLParts.Part(rawValue: variable.component) else {
            return .string(URLParts.withoutFragment(text))
        }
        let url = URLParts.reading(text, on: page)
        guard part == .query else { return urlPart(part, of: url, variable) }
        // One key, or with `multiQueryKeys` a list of them (a text: split at commas, white space removed).
        let key = variable.queryKey.map { evaluate($0) } ?? .undefined
        var keys = [key.isTruthy ? key.jsString : ""]
        if keys != [""], let multiple = variable.multipleQueryKeys, evaluate(multiple).isTruthy {
            if case .array(let list) = key {
                keys = list.map(\.jsString)
            } else {
                let compact = String(key.jsString.unicodeScalars.filter { !$0.properties.isWhitespace })
                keys = compact.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            }
        }
        let ignoringEmpty = variable.ignoresEmptyQueryValue.map { evaluate($0).isTruthy } ?? false
        return url.queryValue(keys: keys, ignoringEmpty: ignoringEmpty)
    }

    /// gtm.js's `__f` (served gtm.js of 2026): the data layer's `gtm.referrer` (version 1) when truthy, else the
    /// session's ``ClientContext/referrer`` (undefined when not known; `""` stays `""`); the part the variable names
    /// (the query of its query key alone), or the text without its fragment.
    private mutating func referrerValue(_ variable: URLVariable) -> Value {
        let box = runtime.context
        var text: String?
        if let pushed = session.values?.rawValues?["gtm.referrer"], pushed.isTruthy { text = pushed.jsString }
        guard let text = text ?? box.value.referrer.map({ URLParts($0, base: nil)?.href ?? $0 }) else {
            return .undefined
        }
        // The Referrer has no extension part: `EXTENSION` reads the whole URL, as gtm.js's `__f` does.
        guard !text.isEmpty, let part = URLParts.Part(rawValue: variable.component), part != .extension else {
            return .string(URLParts.withoutFragment(text))
        }
        let url = URLParts.reading(text, on: box.value.pageURL.map { URLParts.reading($0, on: nil) })
        guard part == .query else { return urlPart(part, of: url, variable) }
        let key = variable.queryKey.map { evaluate($0) } ?? .undefined
        return url.queryValue(keys: [key.isTruthy ? key.jsString : ""], ignoringEmpty: false)
    }

    /// A part other than the query of `url`, with the variable's `stripWww` (for `HOST`) and `defaultPages` (for
    /// `PATH`) evaluated only for the part that reads them.
    private mutating func urlPart(_ part: URLParts.Part, of url: URLParts, _ variable: URLVariable) -> Value {
        switch part {
        case .host:
            return url.value(of: part, stripWww: variable.stripWww.map { evaluate($0).isTruthy } ?? false)
        case .path:
            return url.value(of: part, defaultPages: variable.defaultPages.map { evaluate($0) })
        default:
            return url.value(of: part)
        }
    }

    /// The most matches a regex-table replace makes with a pattern on the backtracking matcher (lookaround,
    /// backreferences): far more than a value of a real event holds.
    static let maximumBacktrackingReplacements = 10_000
    /// The steps all the searches of one regex-table replace after its first may take together: 16 times a single
    /// match's budget, far more than replacing every character of a 1 MB value costs.
    static let replaceStepBudget = 16 * RegexPattern.defaultStepBudget

    /// gtm.js's `__remm`: the first row whose pattern (`new RegExp(fullMatch ? "^" + key + "$" : key, "g")`, `"gi"`
    /// with ignore case) matches `String(input)` gives its value; with replace, `String(input).replace(pattern,
    /// value)` — every match replaced (the `g` flag), the value taken as text.
    private mutating func regexTable(
        input: Expr,
        rows: [MacroKind.RegexRow],
        replace: Bool,
        defaultValue: Expr?,
        options: RegexPattern.Options,
        fullMatch: Bool
    ) -> Value {
        let subject = evaluate(input).jsString
        for row in rows {
            var pattern = row.pattern
            if let key = row.variableKey {
                // A key that reads a variable is this event's pattern (one that does not compile matches nothing).
                let source = TemplateCatalog.regexTablePattern(evaluate(key).jsString, fullMatch: fullMatch)
                pattern = try? RegexPattern(source, options: options)
            }
            guard let pattern, let match = budgetedMatch(pattern, subject, where: "__remm") else { continue }
            let output = evaluate(row.value)
            guard replace else { return output }
            return .string(replacingAll(pattern, in: subject, first: match, with: output.jsString))
        }
        return defaultValue.map { evaluate($0) } ?? .undefined
    }

    /// `subject.replace(pattern, template)` with a global pattern, given its first match: each match is replaced by
    /// `template` expanded for it (`$1`, `$&`, …); after an empty match the search moves on by one character, as
    /// JavaScript's does. A later match that runs out of budget ends the replacing there, and so does the
    /// ``maximumBacktrackingReplacements``th match of a pattern on the backtracking matcher (each search has a budget
    /// of its own: without a bound on their number, a long value could cost millions of budgets).
    private func replacingAll(
        _ pattern: RegexPattern,
        in subject: String,
        first: RegexPattern.Match,
        with template: String
    ) -> String {
        var result = ""
        var copied = subject.startIndex
        var match = first
        var remaining = pattern.usesBacktracking ? Evaluation.maximumBacktrackingReplacements : Int.max
        // The searches after the first share one budget: each may scan to the end of the value (`.*z|a` does), so
        // without one their number times the value's length could be a quadratic amount of work.
        var steps = 0
        while true {
            remaining -= 1
            result += subject[copied..<match.range.lowerBound]
            result += pattern.expandReplacement(template, match: match, in: subject)
            copied = match.range.upperBound
            var next = match.range.upperBound
            if match.range.isEmpty {
                guard next < subject.endIndex else { break }
                next = subject.unicodeScalars.index(after: next)
            }
            let budget = Evaluation.replaceStepBudget - steps
            guard remaining > 0, budget > 0,
                let found = try? pattern.firstMatch(in: subject, from: next, stepBudget: budget, steps: &steps)
            else { break }
            match = found
        }
        result += subject[copied...]
        return result
    }

    /// The first match within ``RegexPattern/defaultStepBudget``; a pattern that runs out of budget does not
    /// match, with one warning per pattern.
    private func budgetedMatch(_ pattern: RegexPattern, _ subject: String, where place: String) -> RegexPattern.Match? {
        do throws(RegexBudgetExceeded) {
            return try pattern.firstMatch(in: subject, stepBudget: RegexPattern.defaultStepBudget)
        } catch {
            reportBudgetExceeded(pattern, subject, place)
            return nil
        }
    }

    /// Whether `pattern` matches within ``RegexPattern/defaultStepBudget``; running out counts as no match
    /// (counted, one warning per pattern, and predicate `p`'s trace says so).
    private mutating func budgetedMatches(_ pattern: RegexPattern, _ subject: String, predicate p: Int) -> Bool {
        do throws(RegexBudgetExceeded) {
            return try pattern.matches(subject, stepBudget: RegexPattern.defaultStepBudget)
        } catch {
            if recordTrace { budgetExceededPredicates.append(p) }
            reportBudgetExceeded(pattern, subject, "_re")
            return false
        }
    }

    private func reportBudgetExceeded(_ pattern: RegexPattern, _ subject: String, _ place: String) {
        environment.noteRegexBudgetExceeded()
        environment.reportOnce(
            "regex-budget:\(storage.id):\(pattern.source)",
            metadata: [
                "container": storage.id, "pattern": pattern.source, "place": place,
                "steps": String(RegexPattern.defaultStepBudget), "bytes": String(subject.utf8.count),
            ]
        ) {
            "a regular expression needed more steps than its budget and was stopped; it counts as not matching "
                + "(warned once per pattern)"
        }
    }

    private func callMacro(named name: String, arguments: ValueMap, _ macro: MacroDef) -> Value {
        guard let handler = handlers.macros[name] else {
            environment.reportOnce(
                "unhandled-macro:\(name)",
                metadata: ["container": storage.id, "class_path": name]
            ) { "no function-call macro handler is registered for the class path" }
            return .undefined
        }
        let call = FunctionCall(
            origin: FunctionCall.Origin(name: name, containerID: storage.id, tagID: nil, displayName: macro.name),
            arguments: arguments,
            eventName: eventName,
            session: session.call
        )
        do {
            return try handler.value(for: call)
        } catch {
            logger.error(
                "a variable handler threw",
                metadata: [
                    "container": storage.id, "variable": macro.name ?? macro.function, "class_path": name,
                    "error": String(describing: error),
                ]
            )
            return .undefined
        }
    }

    /// GTM's format options in gtm.js's order (`Ee.lj`): the case of a string first, then `null`, `undefined`,
    /// `true` and `false` converted one after the other, each on what the step before left (a `null` converted to
    /// `true` is then converted as `true`); a converted value's case is kept.
    private mutating func apply(_ format: ValueFormat, to value: Value) -> Value {
        var value = value
        if let conversion = format.caseConversion, case .string(let s) = value {
            value = .string(conversion == .lowercase ? s.lowercased() : s.uppercased())
        }
        if value == .null, let expr = format.convertNullTo { value = evaluate(expr) }
        if value.isUndefined, let expr = format.convertUndefinedTo { value = evaluate(expr) }
        if value == .bool(true), let expr = format.convertTrueTo { value = evaluate(expr) }
        if value == .bool(false), let expr = format.convertFalseTo { value = evaluate(expr) }
        return value
    }

    // MARK: Predicates

    mutating func predicate(_ p: Int) -> Bool {
        let cached = predicateMarks[p]
        if cached == 2 &* generation &+ 1 { return true }
        if cached == 2 &* generation { return false }
        let raw = testPredicate(p)
        let result = storage.program.predicates[p].negate ? !raw : raw
        predicateMarks[p] = 2 &* generation &+ (result ? 1 : 0)
        return result
    }

    private mutating func testPredicate(_ p: Int) -> Bool {
        let op = storage.program.predicates[p].op
        // Fast path: a string test of the event name against a constant (most mobile triggers). Traces
        // take the general path, so the event-name variable shows as used.
        if !recordTrace, storage.program.predicates[p].testsEventName, !op.isNumeric, op != .regex,
            case .string(let name) = reportedEventName, let text = constantText(ofPredicate: p)
        {
            let subject = storage.program.predicates[p].ignoreCase ? name.lowercased() : name
            return Evaluation.compare(op, subject, text)
        }
        // Mobile SDKs: an undefined operand makes the test false. Web: string tests compare `String(undefined)`,
        // and numeric tests are false anyway (`Number(undefined)` is NaN).
        let web = storage.program.undefinedComparesAsText
        let left = evaluate(storage.program.predicates[p].arg0)
        if left.isUndefined, !web { return false }
        let right = evaluate(storage.program.predicates[p].arg1)
        if right.isUndefined, !web { return false }
        if storage.program.predicates[p].anyOf, case .array(let options) = right {
            // gtm.js: `any_of` with a list on the right holds when the test holds for any of its elements.
            for option in options where test(p, left, option, constantRight: false) { return true }
            return false
        }
        return test(p, left, right, constantRight: true)
    }

    /// Predicate `p`'s operator on evaluated operands; `constantRight` lets it use what was precomputed from a
    /// constant right side (its string form, its compiled pattern).
    private mutating func test(_ p: Int, _ left: Value, _ right: Value, constantRight: Bool) -> Bool {
        let op = storage.program.predicates[p].op
        if op.isNumeric {
            // Web: JavaScript's `Number()` on both sides (`null`, `""`, `[]` are 0; `true` is 1; NaN compares
            // false). Mobile SDKs: false unless both sides are numbers or numeric strings.
            let a: Double
            let b: Double
            if storage.program.undefinedComparesAsText {
                a = left.jsToNumber
                b = right.jsToNumber
            } else {
                guard let l = left.jsNumber, let r = right.jsNumber else { return false }
                a = l
                b = r
            }
            switch op {
            case .lessThan: return a < b
            case .lessOrEquals: return a <= b
            case .greaterThan: return a > b
            default: return a >= b
            }
        }
        var a = left.jsString
        let ignoreCase = storage.program.predicates[p].ignoreCase
        if op == .regex {
            if constantRight, let pattern = storage.program.predicates[p].pattern {
                return budgetedMatches(pattern, a, predicate: p)
            }
            if constantRight, let error = storage.program.predicates[p].patternError {
                let pointer = storage.program.predicates[p].origin.pointer
                environment.reportOnce(
                    "bad-regex:\(storage.id):\(pointer)",
                    metadata: [
                        "container": storage.id, "pattern": right.jsString, "pointer": pointer,
                        "error": String(describing: error),
                    ]
                ) { "invalid regular expression; the condition is false" }
                return false
            }
            let source = right.jsString
            guard let pattern = try? RegexPattern(source, options: ignoreCase ? .ignoreCase : []) else {
                let pointer = storage.program.predicates[p].origin.pointer
                environment.reportOnce(
                    "bad-regex:\(storage.id):\(source)",
                    metadata: ["container": storage.id, "pattern": source, "pointer": pointer]
                ) { "invalid regular expression; the condition is false" }
                return false
            }
            return budgetedMatches(pattern, a, predicate: p)
        }
        if ignoreCase { a = a.lowercased() }
        let b =
            (constantRight ? constantText(ofPredicate: p) : nil)
            ?? (ignoreCase ? right.jsString.lowercased() : right.jsString)
        return Evaluation.compare(op, a, b)
    }

    /// The string operators, on JavaScript string forms.
    private static func compare(_ op: PredicateOperator, _ a: String, _ b: String) -> Bool {
        switch op {
        case .equals: return a.hasSameBytes(as: b)
        case .contains: return TextSearch.contains(a, b)
        case .startsWith: return TextSearch.hasPrefix(a, b)
        case .endsWith: return TextSearch.hasSuffix(a, b)
        case .listContains:
            // gtm.js: `String(arg0).split(",")` has an element equal to `String(arg1)`.
            return a.utf8.split(separator: 0x2C, omittingEmptySubsequences: false).contains {
                $0.elementsEqual(b.utf8)
            }
        default: return false
        }
    }

    // MARK: Values for typed getters

    /// Evaluates macro `index` outside an event (typed getters).
    mutating func value(ofMacro index: Int) -> Value { resolve(macro: index) }

    // MARK: Trace

    /// The trace of the container's evaluation that ran last (``PushTrace/Evaluation``): every tag with its outcome
    /// and why, every variable evaluated; `nil` when the evaluation records none. Read after each `run`, before the
    /// next (a trace returned by `run` cost an untraced push the destruction of an empty one per container).
    mutating func trace() -> PushTrace.Evaluation? {
        recordTrace ? makeTrace() : nil
    }

    private mutating func makeTrace() -> PushTrace.Evaluation {
        let program = storage.program
        var trace = PushTrace.Evaluation(
            containerID: storage.id,
            containerVersion: storage.version,
            event: eventName
        )
        trace.tags.reserveCapacity(program.tags.count)
        for t in program.tags.indices {
            let tag = program.tags[t]
            let state = tagStateLive ? tagState[t] : []
            var outcome = PushTrace.Tag(
                index: t,
                tagID: tag.tagID,
                name: tag.name,
                function: tag.function,
                outcome: .notFired
            )
            if case .paused = tag.kind {
                outcome.outcome = .paused
                outcome.reason = "the tag is paused"
            } else if state.contains(.skippedOncePerLoad) {
                outcome.outcome = .alreadyFired
                outcome.reason = "once per load: already fired in this session"
            } else if state.contains(.ran) {
                outcome.outcome = .fired
                if let call = fired.last(where: { $0.container == containerIndex && $0.tag == t }) {
                    outcome.classPath = call.classPath(in: storage)
                    outcome.arguments = .object(call.parameters)
                    outcome.status = PushTrace.Status(call.status)
                    switch call.status {
                    case .ok: break
                    case .pending(let why):
                        outcome.outcome = .pending
                        outcome.reason = "held: \(why)"
                    case .unsupported:
                        outcome.outcome = .unsupported
                        outcome.reason = "ContainerKit does not run tags of type \(tag.function)"
                    case .failed(let why): outcome.reason = "fired, but failed: \(why)"
                    case .dropped(let why): outcome.reason = "fired, but its handler dropped the call: \(why)"
                    case .unhandled: outcome.reason = "fired, but no handler is registered for its class path"
                    case .blockedByConsent(let types):
                        outcome.outcome = .blockedByConsent
                        outcome.arguments = nil
                        outcome.reason =
                            "blocked by consent: " + types.map { "'\($0)'" }.joined(separator: ", ") + " not granted"
                    }
                }
            } else if state.contains(.attempted) {
                outcome.reason = "a setup tag it needs did not succeed"
            } else if state.contains(.blocked) {
                outcome.outcome = .blocked
                let rules = blockingRules(t)
                outcome.blockedBy = rules
                outcome.reason =
                    rules.isEmpty ? "blocked" : "blocked by " + rules.map(ruleLabel).joined(separator: ", ")
            } else {
                let conditions = failedConditions(t)
                outcome.failedConditions = conditions
                outcome.reason =
                    conditions.isEmpty
                    ? "no firing trigger" : conditions.map(PushTrace.describe).joined(separator: "; ")
            }
            if outcome.outcome != .notFired, outcome.outcome != .paused, outcome.outcome != .alreadyFired,
                !storage.unknownInputs[t].isEmpty
            {
                let labels = UnknownInput.labels(storage.unknownInputs[t], known: pageKnown)
                if !labels.isEmpty { outcome.unknownInputs = labels }
            }
            trace.tags.append(outcome)
        }
        // The variables the event did not need, for the trace: a function-call variable only when the event asked
        // its handler (the trace does not call it).
        let asked = Set(evaluatedOrder)
        for index in program.macros.indices where !wasEvaluated(index) && !asked.contains(index) {
            if program.macros[index].isEvaluatedPerReference { continue }
            _ = resolve(macro: index)
        }
        for index in evaluatedOrder {
            let macro = program.macros[index]
            guard wasEvaluated(index) || macro.isEvaluatedPerReference else { continue }
            let value = macroValues[index]
            trace.variables.append(
                PushTrace.Variable(
                    index: index,
                    name: macro.name,
                    function: macro.function,
                    value: value.definedValue
                )
            )
        }
        return trace
    }

    private func wasEvaluated(_ index: Int) -> Bool {
        macroMarks[index] == 2 &* generation &+ 1
    }

    private func rule(_ r: Int) -> PushTrace.Rule {
        PushTrace.Rule(index: r, name: storage.program.rules[r].name)
    }

    private func ruleLabel(_ rule: PushTrace.Rule) -> String {
        rule.name.map { "trigger '\($0)'" } ?? "rule \(rule.index)"
    }

    /// The passing rules that block tag `t`.
    private mutating func blockingRules(_ t: Int) -> [PushTrace.Rule] {
        var rules: [PushTrace.Rule] = []
        for (r, definition) in storage.program.rules.enumerated() where definition.block.contains(t) && rulePasses(r) {
            rules.append(rule(r))
        }
        return rules
    }

    /// Per rule that adds tag `t`, the first of its conditions that failed: an exception that held, or a
    /// condition that was false.
    private mutating func failedConditions(_ t: Int) -> [PushTrace.Condition] {
        var conditions: [PushTrace.Condition] = []
        for (r, definition) in storage.program.rules.enumerated() where definition.add.contains(t) {
            if let p = definition.unless.first(where: { predicate($0) }) {
                conditions.append(condition(p, rule: r, role: .unless))
            } else if let p = definition.ifs.first(where: { !predicate($0) }) {
                conditions.append(condition(p, rule: r, role: .if))
            }
        }
        return conditions
    }

    /// Predicate `p` of rule `r`, with its operands as evaluated.
    private mutating func condition(_ p: Int, rule r: Int, role: PushTrace.Condition.Role) -> PushTrace.Condition {
        let program = storage.program
        let def = program.predicates[p]
        var variable: String?
        if case .macro(let m) = def.arg0 { variable = "{{\(program.macros[m].name ?? program.macros[m].function)}}" }
        let left = evaluate(def.arg0)
        let right = evaluate(def.arg1)
        return PushTrace.Condition(
            rule: rule(r),
            predicate: p,
            role: role,
            variable: variable,
            operator: def.op == .unsupported ? def.function : def.op.rawValue,
            negate: def.negate,
            ignoreCase: def.ignoreCase,
            left: left.definedValue,
            right: right.definedValue,
            note: budgetExceededPredicates.contains(p)
                ? "the regular expression ran out of its step budget on this value, which counts as not matching"
                : PushTrace.unknownNote(
                    UnknownInput.labels(storage.unknownPredicateInputs[p], known: pageKnown)
                )
        )
    }
}

/// What happened to one tag in one event's evaluation.
struct TagState: OptionSet, Sendable {
    let rawValue: UInt8

    /// A passing rule adds the tag.
    static let added = TagState(rawValue: 1 << 0)
    /// A passing rule blocks the tag (blocking wins over adding).
    static let blocked = TagState(rawValue: 1 << 1)
    /// The tag was considered for firing (as selected, or as a setup or teardown tag).
    static let attempted = TagState(rawValue: 1 << 2)
    /// A once-per-load tag that had already fired in this session.
    static let skippedOncePerLoad = TagState(rawValue: 1 << 3)
    /// The tag's call ran.
    static let ran = TagState(rawValue: 1 << 4)
    /// The tag's call ran and succeeded.
    static let succeeded = TagState(rawValue: 1 << 5)

    /// The rule outcome: a tag fires when this is exactly ``added``.
    static let selection: TagState = [.added, .blocked]
}

/// Memo tables one session reuses from event to event: kept in the session's state and moved out, under
/// its lock, by the caller holding the session's turn, then moved back when the push is evaluated.
struct EvaluationScratch: Sendable {
    /// The memo generation of the last evaluation (see ``Evaluation``); the next one starts above it.
    var generation: UInt32 = 1
    var macroValues: [Value] = []
    var macroMarks: [UInt32] = []
    var predicateMarks: [UInt32] = []
    var tagState: [TagState] = []

    /// The buffers, leaving empty ones in their place (moved, so they stay uniquely referenced).
    mutating func moved() -> EvaluationScratch {
        var taken = EvaluationScratch()
        swap(&taken, &self)
        return taken
    }
}
