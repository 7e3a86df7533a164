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
        var queue: [ValueMap] = []
        var queueHead = 0
        var processing = false
        var eventNumber = 0
        var firedOncePerLoad = Set<String>()
        var attributes: [String: Value] = [:]
    }

    let state = Mutex(State())

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
        if tagManager.lifecycle.mayDefer, let deferred = deferUntilAvailable(message) { return deferred }
        let mustProcess = state.withLock { state -> Bool in
            state.queue.append(message)
            if state.processing { return false }
            state.processing = true
            return true
        }
        guard mustProcess else { return PushResult() }
        return drainQueue()
    }

    /// Pushes an event with parameters: `push(["event": event] + parameters)`.
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap()) -> PushResult {
        var message = ValueMap(minimumCapacity: parameters.count + 1)
        message["event"] = .string(event)
        for (key, value) in parameters where key != "event" { message[key] = value }
        return push(message)
    }

    /// Pushes one key and value (the key is expanded on dots).
    @discardableResult
    public func push(_ key: String, _ value: Value) -> PushResult {
        var message = ValueMap()
        message[key] = value
        return push(message)
    }

    private func drainQueue() -> PushResult {
        var result = PushResult()
        var processed = 0
        while true {
            let next = state.withLock { state -> ValueMap? in
                guard state.queueHead < state.queue.count else {
                    state.queue.removeAll(keepingCapacity: true)
                    state.queueHead = 0
                    state.processing = false
                    return nil
                }
                let message = state.queue[state.queueHead]
                state.queueHead += 1
                return message
            }
            guard let message = next else { break }
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
                break
            }
            process(message, into: &result)
        }
        return result
    }

    private func process(_ message: ValueMap, into result: inout PushResult) {
        let expanded = DataLayer.expandDots(message)
        let (model, eventNumber) = state.withLock { state -> (ValueMap, Int) in
            DataLayer.merge(expanded, into: &state.model)
            if message["event"] != nil { state.eventNumber += 1 }
            return (state.model, state.eventNumber)
        }
        guard let eventValue = message["event"] else { return }
        let eventName: String?
        switch eventValue {
        case .undefined, .null: eventName = nil
        default: eventName = eventValue.jsString
        }
        let containers = tagManager.containers
        guard !containers.isEmpty else { return }
        let handlers = tagManager.handlerSnapshot
        for container in containers {
            var evaluation = Evaluation(
                container: container,
                message: message,
                model: model,
                eventName: eventName,
                eventNumber: eventNumber,
                dataLayer: self,
                handlers: handlers,
                recordTrace: debug
            )
            var report = evaluation.run()
            if debug { report.trace?.dataLayer = .object(model) }
            result.events.append(report)
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
        var needsExpansion = false
        for key in message.keys where key.utf8.contains(0x2E) {
            needsExpansion = true
            break
        }
        guard needsExpansion else { return message }
        var out = ValueMap(minimumCapacity: message.count)
        for (key, value) in message {
            guard key.utf8.contains(0x2E) else {
                var slot = out[key] ?? .undefined
                merge(value, into: &slot)
                out[key] = slot
                continue
            }
            let parts = key.split(separator: ".", omittingEmptySubsequences: false)
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
