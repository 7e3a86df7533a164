extension DataLayer {
    /// Pushes a message, as ``push(_:)-(ValueMap)`` does, and with `tracing` records what the push did:
    /// ``PushResult/trace`` explains every tag considered, the variables, the data-layer keys changed and the
    /// records (see ``PushTrace``). The pushes the handlers nest inside it are traced too.
    ///
    /// Tracing evaluates every trigger of every container (not only those the event name can pass) and every
    /// variable, to explain the tags that did not fire; a push without it pays nothing for the feature.
    ///
    /// With an `eventID`, a push the session has seen already is a duplicate, as with
    /// ``push(event:parameters:eventID:)-(String,ValueMap,String?)``.
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(_ message: ValueMap, eventID: String? = nil, tracing: Bool) -> PushResult {
        switch pending(message, event: nil, eventID: eventID, tracing: tracing) {
        case .success(let pending): return push(pending)
        case .failure(let refused): return refused.result
        }
    }

    /// ``push(_:eventID:tracing:)-(ValueMap,String?,Bool)``, suspending while another caller's push is processed.
    @discardableResult
    public func push(_ message: ValueMap, eventID: String? = nil, tracing: Bool) async -> PushResult {
        switch pending(message, event: nil, eventID: eventID, tracing: tracing) {
        case .success(let pending): return await push(pending)
        case .failure(let refused): return refused.result
        }
    }

    /// Pushes a consent command, as ``push(_:)-(ConsentCommand)`` does, and with `tracing` records what it changed:
    /// ``PushResult/trace``'s ``PushTrace/consent`` has each consent type the command names, granted or denied
    /// before and after.
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(_ command: ConsentCommand, tracing: Bool) -> PushResult {
        push(Pending(message: ValueMap(), event: nil, command: CommandBox(command), tracing: tracing))
    }

    /// ``push(_:tracing:)-(ConsentCommand,Bool)``, suspending while another caller's push is processed.
    @discardableResult
    public func push(_ command: ConsentCommand, tracing: Bool) async -> PushResult {
        await push(Pending(message: ValueMap(), event: nil, command: CommandBox(command), tracing: tracing))
    }

    /// Pushes an event with parameters and, optionally, an event ID (see
    /// ``push(event:parameters:eventID:)-(String,ValueMap,String?)``), and with `tracing` records its
    /// ``PushResult/trace``.
    @available(*, noasync, message: "blocks its thread while another push is processed; await the async push")
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap(), eventID: String? = nil, tracing: Bool)
        -> PushResult
    {
        switch pending(parameters, event: event, eventID: eventID, tracing: tracing) {
        case .success(let pending): return push(pending)
        case .failure(let refused): return refused.result
        }
    }

    /// ``push(event:parameters:eventID:tracing:)-(String,ValueMap,String?,Bool)``, suspending while another
    /// caller's push is processed.
    @discardableResult
    public func push(event: String, parameters: ValueMap = ValueMap(), eventID: String? = nil, tracing: Bool)
        async -> PushResult
    {
        switch pending(parameters, event: event, eventID: eventID, tracing: tracing) {
        case .success(let pending): return await push(pending)
        case .failure(let refused): return refused.result
        }
    }

    /// A push refused before its turn (an invalid event ID), as an error for a `Result`.
    struct Refused: Error {
        var result: PushResult
    }

    /// The push of `message` (with `event` folded in, when given, as the pushes of an event and its parameters do;
    /// that happened at `eventTime`, seconds since 1970, or now when `nil`), or its refusal (traced when `tracing`)
    /// when `eventID` is invalid.
    func pending(
        _ message: ValueMap,
        event: String?,
        eventID: String?,
        tracing: Bool,
        eventTime: Double? = nil
    ) -> Result<Pending, Refused> {
        guard let hash = checkedHash(of: eventID) else {
            return .failure(
                Refused(result: Self.traced(Self.refusal(eventID: eventID)!, tracing, self, event, message, eventID))
            )
        }
        return .success(
            Pending(
                message: message,
                event: event.map { .string($0) },
                eventID: eventID ?? "",
                eventIDHash: hash,
                tracing: tracing,
                eventTime: eventTime
            )
        )
    }

    /// `result` (a push refused before its turn) with the trace of its push when `tracing`.
    static func traced(
        _ result: PushResult,
        _ tracing: Bool,
        _ session: DataLayer,
        _ event: String?,
        _ parameters: ValueMap,
        _ eventID: String?
    ) -> PushResult {
        guard tracing || session.debug else { return result }
        var traced = result
        traced.traceUnprocessed(
            TraceStep(
                sessionID: session.sessionID,
                event: event,
                eventID: eventID,
                message: parameters,
                outcome: .refused,
                model: session.model
            )
        )
        return traced
    }

    /// `result`, a push held back or dropped while no container is available, with the trace of `pending` when it
    /// is traced.
    func traced(deferral result: PushResult, of pending: borrowing Pending) -> PushResult {
        guard pending.tracing || debug else { return result }
        var traced = result
        var event: String?
        switch pending.event ?? pending.message["event"] {
        case nil, .undefined?, .null?: event = nil
        case let value?: event = value.jsString
        }
        traced.traceUnprocessed(
            TraceStep(
                sessionID: sessionID,
                event: event,
                eventID: pending.eventID.isEmpty ? nil : pending.eventID,
                message: pending.message,
                outcome: result.dropped ? .dropped : .deferred,
                model: model
            )
        )
        return traced
    }

    /// The top-level keys a push of `message` (and `event`) sets, each with its value in `model` before the push
    /// (`nil`: none): a dotted key sets the key before its first dot.
    static func tracedKeys(of message: ValueMap, event: Value?, in model: ValueMap) -> [(key: String, value: Value?)] {
        var keys: [(key: String, value: Value?)] = []
        var seen = Set<String>()
        func add(_ key: String) {
            guard seen.insert(key).inserted else { return }
            keys.append((key, model[key]))
        }
        for (key, _) in message where !key.hasSameBytes(as: clearKey) {
            if let dot = key.utf8.firstIndex(of: 0x2E) {
                add(String(key[..<dot]))
            } else {
                add(key)
            }
        }
        if event != nil { add("event") }
        return keys
    }
}
