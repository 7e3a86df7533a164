import Synchronization

/// One session's data layer: the merged model of everything pushed, and the entry point that evaluates
/// the live containers when a push carries an `event`.
///
/// Merge semantics are GTM's: each top-level key of a push is expanded on dots (`"a.b": 1` →
/// `{a: {b: 1}}`); maps merge recursively; arrays merge **index by index**; scalars and `null` overwrite;
/// ``Value/undefined`` (``notPresent``) leaves the existing value untouched.
///
/// A data layer serialises its own pushes. A push made while another is being processed — from a tag
/// handler, or from another thread — is queued and processed after it, by the thread already processing;
/// more than 500 nested pushes in one run trip the loop guard (the queue is cleared and an error logged).
public final class DataLayer: Sendable {
    /// The sentinel that leaves an existing value or array element untouched in a push.
    public static let notPresent: Value = .undefined
    /// Dotted keys expand into at most this many levels.
    public static let maximumKeyDepth = 64
    /// The most pushes processed in one run before the loop guard clears the queue.
    public static let maximumNestedPushes = 500

    /// The runtime whose live containers this session evaluates.
    public let tagManager: TagManager
    /// What the built-in macros report for this session's client.
    public let context: ClientContext
    /// An identifier for logs and handlers.
    public let sessionID: String
    /// Whether every event records an ``EvaluationTrace``.
    public let debug: Bool

    struct State: Sendable {
        var model = ValueMap()
        var queue: [Pending] = []
        var queueHead = 0
        var processing = false
        var eventNumber = 0
        var firedOncePerLoad = Set<String>()
        var attributes: [String: Value] = [:]
    }

    /// A push waiting to be processed: the message, and the event name when `push(event:parameters:)`
    /// gave it separately (so the parameters need not be copied to add an `event` key).
    struct Pending: Sendable {
        var message: ValueMap
        var event: Value?

        /// The message with the separately given event folded in.
        var fullMessage: ValueMap {
            guard let event else { return message }
            var full = message
            full["event"] = event
            return full
        }
    }

    let state = Mutex(State())
    /// Evaluation buffers; used only by the thread that holds `processing`.
    let scratch = EvaluationScratch()

    init(tagManager: TagManager, context: ClientContext, sessionID: String, debug: Bool) {
        self.tagManager = tagManager
        self.context = context
        self.sessionID = sessionID
        self.debug = debug
    }

    // MARK: Pushing

    /// Pushes a message: merges it into the model and, if it has an `event` key, evaluates every live
    /// container for that event and fires the selected tags.
    ///
    /// - Returns: the reports of the events this call processed. A push queued behind one already in
    ///   progress (from a handler or another thread) returns an empty result; its events appear in the
    ///   result of the push that processed it.
    @discardableResult
    public func push(_ message: ValueMap) -> PushResult {
        enqueueOrProcess(Pending(message: message, event: nil))
    }

    /// Pushes an event with parameters: the parameters plus `"event": event` (which wins over a parameter
    /// named `event`).
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap()) -> PushResult {
        enqueueOrProcess(Pending(message: parameters, event: .string(event)))
    }

    /// Pushes one key and value (the key is expanded on dots).
    @discardableResult
    public func push(_ key: String, _ value: Value) -> PushResult {
        var message = ValueMap()
        message[key] = value
        return push(message)
    }

    /// Processes `pending` now if no push is in progress (then whatever handlers queued meanwhile), or
    /// queues it behind the push in progress.
    private func enqueueOrProcess(_ pending: Pending) -> PushResult {
        if tagManager.lifecycle.mayDefer, let deferred = deferUntilAvailable(pending.fullMessage) { return deferred }
        let mustProcess = state.withLock { state -> Bool in
            if state.processing {
                state.queue.append(pending)
                return false
            }
            state.processing = true
            return true
        }
        guard mustProcess else { return PushResult() }
        var result = PushResult()
        process(pending, into: &result)
        drainQueue(into: &result)
        return result
    }

    /// Processes the pushes queued while one was processed, in order, until none is left.
    private func drainQueue(into result: inout PushResult) {
        var processed = 1
        while true {
            let next = state.withLock { state -> Pending? in
                guard state.queueHead < state.queue.count else {
                    if !state.queue.isEmpty {
                        state.queue.removeAll(keepingCapacity: true)
                        state.queueHead = 0
                    }
                    state.processing = false
                    return nil
                }
                let pending = state.queue[state.queueHead]
                state.queueHead += 1
                return pending
            }
            guard let pending = next else { return }
            processed += 1
            if processed > DataLayer.maximumNestedPushes + 1 {
                let dropped = state.withLock { state -> Int in
                    let count = state.queue.count - state.queueHead + 1
                    state.queue.removeAll()
                    state.queueHead = 0
                    state.processing = false
                    return count
                }
                tagManager.logger.error(
                    "session \(sessionID): seems like an infinite loop of pushing to the data layer; "
                        + "dropped \(dropped) queued pushes after \(DataLayer.maximumNestedPushes) nested pushes"
                )
                result.loopGuardTripped = true
                return
            }
            process(pending, into: &result)
        }
    }

    private func process(_ pending: Pending, into result: inout PushResult) {
        let message = pending.message
        let expanded = DataLayer.expandDots(message)
        let eventValue = pending.event ?? message["event"]
        let (model, eventNumber) = state.withLock { state -> (ValueMap, Int) in
            DataLayer.merge(expanded, into: &state.model)
            if let event = pending.event { state.model["event"] = event }
            if eventValue != nil { state.eventNumber += 1 }
            return (state.model, state.eventNumber)
        }
        guard let eventValue else { return }
        let eventName: String?
        switch eventValue {
        case .undefined, .null: eventName = nil
        default: eventName = eventValue.jsString
        }
        let containers = tagManager.containers
        guard !containers.isEmpty else { return }
        let handlers = tagManager.handlerSnapshot
        result.events.reserveCapacity(result.events.count + containers.count)
        let reportedName = Evaluation.reportedName(eventName)
        for container in containers {
            var candidates: [Int]?
            if !debug, case .string(let name) = reportedName {
                let rules = container.storage.candidates.rules(for: name, in: container.storage)
                if rules.isEmpty {
                    // No rule of this container can pass for this event name: nothing to evaluate.
                    result.events.append(
                        EventReport(containerID: container.id, eventName: eventName, message: message, fired: [])
                    )
                    continue
                }
                candidates = rules
            }
            var evaluation = Evaluation(
                container: container,
                message: message,
                model: model,
                eventName: eventName,
                eventNumber: eventNumber,
                dataLayer: self,
                handlers: handlers,
                recordTrace: debug,
                scratch: scratch,
                reportedEventName: reportedName
            )
            if debug {
                var report = evaluation.run()
                report.trace?.dataLayer = .object(model)
                result.events.append(report)
            } else {
                result.events.append(evaluation.run(candidates: candidates))
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

    /// Empties the model (attributes and once-per-load state are kept).
    public func clear() { state.withLock { $0.model = ValueMap() } }

    // MARK: Session attributes

    /// A value a host or handler stored on this session (for example the current user's identity).
    public func attribute(_ key: String) -> Value? { state.withLock { $0.attributes[key] } }

    /// Stores (or with `nil`, removes) a session attribute.
    public func setAttribute(_ value: Value?, forKey key: String) {
        state.withLock { $0.attributes[key] = value }
    }

    // MARK: Merge semantics

    /// Expands every top-level key on dots: `["a.b": 1]` → `["a": ["b": 1]]`.
    static func expandDots(_ message: ValueMap) -> ValueMap {
        guard message.keys.contains(where: hasDot) else { return message }
        var out = ValueMap(minimumCapacity: message.count)
        for (key, value) in message {
            guard hasDot(key) else {
                var slot = out[key] ?? .undefined
                merge(value, into: &slot)
                out[key] = slot
                continue
            }
            var parts = key.split(separator: ".", omittingEmptySubsequences: false)
            if parts.count > DataLayer.maximumKeyDepth {
                // A key with thousands of dots must not build a value too deep to merge; the tail stays
                // one literal key.
                let tail = parts[(DataLayer.maximumKeyDepth - 1)...].joined(separator: ".")
                parts = Array(parts.prefix(DataLayer.maximumKeyDepth - 1)) + [Substring(tail)]
            }
            var nested = value
            for part in parts.dropFirst().reversed() {
                var map = ValueMap()
                map[String(part)] = nested
                nested = .object(map)
            }
            let head = String(parts[0])
            var slot = out[head] ?? .undefined
            merge(nested, into: &slot)
            out[head] = slot
        }
        return out
    }

    static func hasDot(_ key: String) -> Bool {
        var key = key
        return key.withUTF8 { bytes in bytes.contains(0x2E) }
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
