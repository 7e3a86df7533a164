/// What a traced push recorded of one message it processed (its own, or one a tag handler pushed): enough for
/// ``PushResult/trace`` to build the ``PushTrace`` when it is read.
struct TraceStep: Sendable {
    var sessionID: String
    var event: String?
    var eventID: String?
    var message: ValueMap
    var outcome: PushTrace.Outcome = .applied
    /// The top-level keys the message changed, before and after.
    var changes: [PushTrace.Change] = []
    /// For a consent command: what it changed.
    var consent: PushTrace.Consent?
    /// The index of the message's evaluated push in the result (``PushResult/evaluated(_:)``), if it was evaluated.
    var evaluated: Int?
    /// The session's model after the message.
    var model: ValueMap?
}

extension PushResult {
    /// What the push did, explained (see ``PushTrace``) — when the push was traced: pushed with `tracing: true`,
    /// or into a session made with `debug: true`. `nil` otherwise.
    ///
    /// Built when read, from what the traced push recorded. Records that a durable sink was writing show as
    /// ``PushTrace/Record/Durability-swift.enum/writing`` unless the push's durability was confirmed
    /// (``SessionStore``'s push waits for it before returning); call ``PushTrace/markDurable()`` after
    /// ``waitUntilDurable()`` otherwise.
    public var trace: PushTrace? {
        guard let head = traceSteps.first else { return nil }
        var trace = PushTrace(
            sessionID: head.sessionID,
            event: head.event,
            eventID: head.eventID,
            message: .object(head.message),
            outcome: isDuplicate ? .duplicate : (refusal != nil ? .refused : head.outcome)
        )
        if let refusal { trace.refusal = PushTrace.Problem(code: refusal.code.rawValue, message: refusal.message) }
        trace.consent = head.consent
        if let original = duplicateOf {
            trace.duplicateOf = PushTrace.Original(
                time: original.time,
                tags: original.fired.map { tag in
                    PushTrace.Tag(
                        index: tag.index,
                        tagID: tag.tagID,
                        function: nil,
                        outcome: .duplicate,
                        status: PushTrace.Status(name: tag.status, message: tag.message),
                        recordIDs: tag.recordIDs.isEmpty ? nil : tag.recordIDs,
                        reason: "fired by the original push"
                    )
                }
            )
        }
        // The changes of every step, merged by key: the first value before, the last after.
        var positions: [String: Int] = [:]
        for step in traceSteps {
            for change in step.changes {
                if let at = positions[change.key] {
                    trace.changes[at].after = change.after
                } else {
                    positions[change.key] = trace.changes.count
                    trace.changes.append(change)
                }
            }
            if let model = step.model { trace.dataLayer = .object(model) }
        }
        trace.changes.removeAll { $0.before == $0.after }
        let durability: PushTrace.Record.Durability =
            commitFailure != nil ? .failed : (knownDurable ? .durable : .writing)
        let committed = !commits.isEmpty || commitFailure != nil
        let failure = commitFailure?.code.rawValue
        /// The records of `output` (a tag's, when `tag` is given; else a push hook's), sent then held.
        func add(_ output: TagOutput, tag: (storage: Container.Storage, index: Int)?) {
            let written: PushTrace.Record.Durability = output.durability != nil || committed ? durability : .none
            let held = output.pendingRecords.map { ($0, PushTrace.Record.State.held) }
            for (record, state) in output.records.map({ ($0, PushTrace.Record.State.sent) }) + held {
                var entry = PushTrace.Record(
                    fromPushHook: tag == nil,
                    state: state,
                    recordID: record.recordID,
                    record: record.jsonValue,
                    durability: state == .held ? .session : written,
                    durabilityError: state == .sent && written == .failed ? failure : nil
                )
                if let (storage, index) = tag {
                    entry.containerID = storage.id
                    entry.tagIndex = index
                    entry.tagID = storage.program.tags[index].tagID
                    entry.tagName = storage.program.tags[index].name
                }
                trace.records.append(entry)
            }
        }
        for (number, step) in traceSteps.enumerated() {
            guard let index = step.evaluated, index < evaluatedCount else { continue }
            let push = evaluated(index)
            for case var evaluation? in push.traces {
                evaluation.nested = number > 0
                trace.evaluations.append(evaluation)
            }
            let containers = push.snapshot.containers
            for call in push.calls {
                if let output = call.output { add(output, tag: (containers[call.container].storage, call.tag)) }
            }
        }
        for output in hookOutputs { add(output, tag: nil) }
        return trace
    }

    /// Notes that the push's records are durable (its ``waitUntilDurable()`` returned): ``trace`` shows them so.
    package mutating func noteDurable() {
        if !traceSteps.isEmpty { knownDurable = true }
    }

    /// A result that is only a trace step (a push refused or held back before it was processed).
    mutating func traceUnprocessed(_ step: TraceStep) {
        traceSteps = [step]
    }
}
