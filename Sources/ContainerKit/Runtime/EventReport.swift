/// What happened to one tag when an event was evaluated.
public struct FiredTag: Sendable, Hashable {
    /// How a fired tag's call went.
    public enum Status: Sendable, Hashable {
        /// The handler ran and returned.
        case ok
        /// No handler is registered for the tag's class path or function name.
        case unhandled
        /// The handler threw; the message says what it threw.
        case failed(String)
        /// ContainerKit does not run this tag type (for example `__ua`, `__html`).
        case unsupported
        /// The handler ran and deliberately did nothing with the call (for the Braze provider, a call that
        /// breaks a Braze rule); the message says why.
        case dropped(String)
        /// The handler ran and kept what the call made for later instead of sending it now (for the Braze
        /// provider, a call in a session that has no Braze user yet: its records wait in the session until
        /// the user is known); the message says what is held and until when.
        case pending(String)
        /// The tag's consent settings require these consent types, and they were not all granted when it was
        /// triggered: it did not run (GTM's consent check, see ``ConsentState``). Lists the types not granted.
        case blockedByConsent([String])

        /// `ok`, `unhandled`, `failed`, `unsupported`, `dropped`, `pending` or `blocked_by_consent`.
        public var name: String {
            switch self {
            case .ok: return "ok"
            case .unhandled: return "unhandled"
            case .failed: return "failed"
            case .unsupported: return "unsupported"
            case .dropped: return "dropped"
            case .pending: return "pending"
            case .blockedByConsent: return "blocked_by_consent"
            }
        }

        /// What `failed`, `dropped` and `pending` say, and which consent types `blocked_by_consent` waited for;
        /// `nil` for the others.
        public var message: String? {
            switch self {
            case .failed(let message), .dropped(let message), .pending(let message): return message
            case .blockedByConsent(let types):
                return "consent not granted: " + types.map { "'\($0)'" }.joined(separator: ", ")
            default: return nil
            }
        }
    }

    /// The tag's index in the compiled container.
    public var index: Int
    /// The tag's `tag_id` (the editor's tag id), when it has one.
    public var tagID: Int?
    /// The tag's display name, when the container has one.
    public var name: String?
    /// The template function, e.g. `__funct`.
    public var function: String
    /// The class path or function name, for function-call tags.
    public var classPath: String?
    /// The evaluated parameters: for function-call tags the argument map, otherwise the `vtp_` parameters.
    public var parameters: ValueMap
    /// How the call went.
    public var status: Status
    /// What the handler produced (records, problems, durability); `nil` when it produced nothing or no
    /// handler ran.
    public var output: TagOutput?
    /// What the conditions of the triggers that fire or block the tag read that ContainerKit cannot evaluate as a
    /// page would — `{{Page Hostname}}`, `{{Custom JavaScript}}` (browser-only variables, custom JavaScript,
    /// cookies, custom templates: undefined here) or a condition it does not test (`_css`) — so the tag fired
    /// with them undefined (or false), which a browser may decide otherwise. Empty when the decision is the page's.
    public var unknownInputs: [String]

    /// Creates a fired tag (the runtime makes these; tests of reporters may too).
    public init(
        index: Int,
        tagID: Int? = nil,
        name: String? = nil,
        function: String,
        classPath: String? = nil,
        parameters: ValueMap = ValueMap(),
        status: Status,
        output: TagOutput? = nil,
        unknownInputs: [String] = []
    ) {
        self.index = index
        self.tagID = tagID
        self.name = name
        self.function = function
        self.classPath = classPath
        self.parameters = parameters
        self.status = status
        self.output = output
        self.unknownInputs = unknownInputs
    }
}

/// The outcome of evaluating one event in one container.
public struct EventReport: Sendable {
    /// The container evaluated.
    public var containerID: String
    /// The event name, or `nil` for a push without `event`.
    public var eventName: String?
    /// The message that was pushed (for `push(event:parameters:)`: the parameters; the name is `eventName`).
    public var message: ValueMap
    /// The tags that fired, in firing order.
    public var fired: [FiredTag]
}

/// The result of one ``DataLayer/push(_:)``: the events it evaluated, in order (the pushed message's own
/// event first, then events pushed from handlers while it was processed).
///
/// The reports are built when they are read: a push keeps what its tags' calls produced in a compact form
/// (the container and tag by index, the arguments, the status and output), so a caller that discards the
/// result does not pay for ``EventReport``s and ``FiredTag``s it never looks at.
public struct PushResult: Sendable {
    /// One report per evaluated (container, event) pair.
    public var events: [EventReport] {
        get {
            guard first != nil else { return built }
            var events = built
            if let first { first.appendReports(to: &events) }
            for push in more { push.appendReports(to: &events) }
            return events
        }
        set {
            built = newValue
            first = nil
            more = []
        }
    }
    /// Whether the push was held back because no container is available yet (delayed initialization).
    public var deferred: Bool = false
    /// Whether the push was dropped while waiting for a container, because
    /// ``DelayedInitialization/maximumTotalQueuedPushes`` pushes already wait across all data layers
    /// (`deferred` is then also `true`; the push is never evaluated nor merged into the data layer).
    public var dropped: Bool = false
    /// Whether the nested-push loop guard dropped pushes.
    public var loopGuardTripped: Bool = false
    /// Why the push (or a push its handlers made) was refused, merged into nothing and evaluated nowhere:
    /// `session_too_large` when it would take the session past ``TagManager/maximumDataLayerBytes``. A
    /// service answers 413.
    public var refusal: ContainerError? {
        get { failures?.refusal }
        set { failures = Failures.make(refusal: newValue, commitFailure: commitFailure) }
    }

    /// What a ``PushCommitter`` appended for this push (waited for by ``waitUntilDurable()``).
    package var commits: [DurabilityToken] = []
    /// Why a ``PushCommitter`` could not commit this push, if it could not.
    package var commitFailure: DurabilityError? {
        get { failures?.commitFailure }
        set { failures = Failures.make(refusal: refusal, commitFailure: newValue) }
    }
    /// ``refusal`` and ``commitFailure``, behind one reference (`nil` when neither is set): inline, the two errors
    /// made every result some 240 bytes larger, and a push moves its result several times.
    private var failures: Failures?

    /// The rare outcomes of a push, kept out of line (immutable: a change makes a new one).
    private final class Failures: Sendable {
        let refusal: ContainerError?
        let commitFailure: DurabilityError?

        private init(refusal: ContainerError?, commitFailure: DurabilityError?) {
            self.refusal = refusal
            self.commitFailure = commitFailure
        }

        static func make(refusal: ContainerError?, commitFailure: DurabilityError?) -> Failures? {
            if refusal == nil, commitFailure == nil { return nil }
            return Failures(refusal: refusal, commitFailure: commitFailure)
        }
    }
    /// How many of the push's tag outputs a ``PushCommitter`` committed already (a push that a handler's
    /// task nested after the commit is committed on its own).
    public package(set) var committedOutputs = 0

    /// Reports assigned through ``events``; the evaluated pushes follow them.
    private var built: [EventReport] = []
    /// The first evaluated push, then the others (handler-nested pushes), in order.
    private var first: EvaluatedPush?
    private var more: [EvaluatedPush] = []
    /// What push hooks returned, each with the number of tag outputs that came before it (its place in
    /// ``outputs``).
    private(set) var hooked: [(position: Int, output: TagOutput)] = []
    /// For a duplicate push, the original's summary (see ``duplicateOf``), behind one reference.
    var duplicate: DuplicateOrigin?
    /// What a traced push recorded for its ``trace``, one step per message processed; empty when the push is not
    /// traced.
    var traceSteps: [TraceStep] = []
    /// Whether the push's records are known durable (its ``waitUntilDurable()`` returned for a caller that then
    /// said so): ``trace`` shows them `durable`.
    var knownDurable = false

    init() {}

    /// Adds each tag call of the evaluated pushes to `packer`, in firing order (for the push's ``SeenEventID``),
    /// and the durability tokens of what the push hooks added.
    func packFired(into packer: inout FiredWriter) {
        if first != nil { first!.packFired(into: &packer) }
        for index in more.indices { more[index].packFired(into: &packer) }
        for index in hooked.indices {
            if let token = hooked[index].output.durability { packer.addToken(token) }
        }
    }

    /// Appends to `set`'s word ring the packed word (``FiredWriter``) of each tag call of the evaluated pushes, in
    /// firing order, while each packs: a plain status, no records and nothing to wait for. `false` when a call
    /// does not, or a push hook's output waits for durability (then some words may have been appended).
    func appendPlainFiredWords(to set: SeenEventIDs) -> Bool {
        for index in hooked.indices where hooked[index].output.durability != nil { return false }
        if first?.appendPlainFiredWords(to: set) == false { return false }
        for index in more.indices {
            guard more[index].appendPlainFiredWords(to: set) else { return false }
        }
        return true
    }

    /// How many evaluated pushes the result holds (besides ``events`` assigned).
    var evaluatedCount: Int { first == nil ? 0 : 1 + more.count }

    /// Evaluated push `index` (below ``evaluatedCount``).
    func evaluated(_ index: Int) -> EvaluatedPush { index == 0 ? first! : more[index - 1] }

    /// Adds the outcome of one evaluated push (after those already added).
    mutating func append(_ push: consuming EvaluatedPush) {
        if case .none = first, more.isEmpty {
            first = consume push
        } else {
            more.append(push)
        }
    }

    /// Every tag fired by the push, across its events.
    public var fired: [FiredTag] {
        guard first != nil else { return built.flatMap(\.fired) }
        var tags = built.flatMap(\.fired)
        if let first { first.appendFiredTags(to: &tags) }
        for push in more { push.appendFiredTags(to: &tags) }
        return tags
    }

    /// The outputs of the fired tags, in firing order, without building the tags, and those of the push
    /// hooks (``hookOutputs``) where they ran: after the tags of the pushes processed before them.
    public var outputs: [TagOutput] {
        var outputs = tagOutputs
        for (offset, hook) in hooked.enumerated() { outputs.insert(hook.output, at: hook.position + offset) }
        return outputs
    }

    /// The outputs of the fired tags, in firing order.
    private var tagOutputs: [TagOutput] {
        var outputs = built.flatMap(\.fired).compactMap(\.output)
        if let first { outputs += first.calls.compactMap(\.output) }
        for push in more { outputs += push.calls.compactMap(\.output) }
        return outputs
    }

    /// What the runtime's push hooks (``PushHook``) added at the end of the push, in order: records no tag
    /// call of the push made (the Braze provider's pending records, released once the session has a user).
    public var hookOutputs: [TagOutput] { hooked.map(\.output) }

    /// Adds the output of a push hook, after the tag outputs so far.
    mutating func appendHookOutput(_ output: TagOutput) {
        hooked.append((tagOutputs.count, output))
    }

    /// The durable positions of this push's records: one token per write (a tag's records), in firing
    /// order, then the push's commit (``PushCommitter``), without repeats.
    public var durability: [DurabilityToken] {
        var seen = Set<DurabilityToken>()
        return (outputs.compactMap(\.durability) + commits).filter { seen.insert($0).inserted }
    }

    /// Returns once every record this push's tags produced is durable (for example written and synced by
    /// a durable queue); at once when none needs waiting for. A service acknowledges its client after this.
    ///
    /// Each write is checked on its own: when one tag's records were lost to a failed write (a full disk)
    /// while a later tag's were written, this still throws.
    ///
    /// - Throws: ``DurabilityError``: the error of the write that held one of this push's records, if that
    ///   write failed (`.diskFull`, `.io`, …); `.notRunning` at once when the queue's `run()` is not running;
    ///   `.stopped` when it stopped before the records were written.
    public func waitUntilDurable() async throws(DurabilityError) {
        if let commitFailure { throw commitFailure }
        // What a commit took (outputs before ``committedOutputs`` whose records were held for it) is waited for
        // through the commit's own token: one wait for the push, not one per tag call and one for the commit.
        var tokens = commits
        for (index, output) in outputs.enumerated() {
            guard let token = output.durability else { continue }
            if index < committedOutputs, token.source.holdsRecordsForCommit { continue }
            tokens.append(token)
        }
        try await DurabilityToken.waitUntilDurable(tokens)
    }
}

/// One tag call of an evaluated push, as the evaluation recorded it: the container and tag by index, and what
/// only the call knows. ``FiredTag`` is built from it (and the container's definitions) when read.
struct FiredCall: Sendable {
    /// The container's position in the push's snapshot.
    var container: Int
    var tag: Int
    /// The class path when it is not the call plan's (a computed class path); `nil` with ``planned`` false
    /// when the tag has none.
    var classPath: String?
    /// Whether the class path is the tag's ``CallPlan`` name.
    var planned: Bool
    var parameters: ValueMap
    var status: FiredTag.Status
    var output: TagOutput?
    /// What of the page the session knew (its URL, its referrer) when the tag's triggers were decided: which of the
    /// tag's ``Container/Storage/unknownInputs`` were known (empty for a container whose inputs do not read it).
    var known: UnknownInput.Needs = []

    /// The class path or function name the call was made under (`nil` for a tag that has none).
    func classPath(in storage: Container.Storage) -> String? {
        planned ? storage.callPlans[tag]?.name : classPath
    }

    /// The public record of the call.
    func firedTag(in storage: Container.Storage) -> FiredTag {
        let definition = storage.program.tags[tag]
        return FiredTag(
            index: tag,
            tagID: definition.tagID,
            name: definition.name,
            function: definition.function,
            classPath: classPath(in: storage),
            parameters: parameters,
            status: status,
            output: output,
            unknownInputs: storage.unknownInputs[tag].isEmpty
                ? [] : UnknownInput.labels(storage.unknownInputs[tag], known: known)
        )
    }
}

/// One push evaluated in every container of a runtime snapshot: what ``PushResult`` builds its reports from.
struct EvaluatedPush: Sendable {
    /// The session's hold on the snapshot evaluated: its containers, in the order of the reports (each gets
    /// one). Held through the session's own holder, not the snapshot every session shares.
    let runtime: SessionRuntime
    var snapshot: TagManager.Snapshot { runtime.snapshot }
    let eventName: String?
    let message: ValueMap
    /// The calls, in firing order (container by container).
    var calls: [FiredCall]
    /// Per container, the trace of its evaluation (traced pushes only; empty otherwise).
    var traces: [PushTrace.Evaluation?]

    func appendReports(to events: inout [EventReport]) {
        let containers = snapshot.containers
        events.reserveCapacity(events.count + containers.count)
        var next = 0
        for c in containers.indices {
            let storage = containers[c].storage
            var fired: [FiredTag] = []
            while next < calls.count, calls[next].container == c {
                fired.append(calls[next].firedTag(in: storage))
                next += 1
            }
            events.append(
                EventReport(
                    containerID: storage.id,
                    eventName: eventName,
                    message: message,
                    fired: fired
                )
            )
        }
    }

    /// Adds each tag call to `packer`, reading the calls in place (a push with an event ID does this every time).
    func packFired(into packer: inout FiredWriter) {
        guard !calls.isEmpty else { return }
        let containers = runtime.containers
        for index in calls.indices {
            let tag = calls[index].tag
            let tagID = containers[calls[index].container].storage.program.tags[tag].tagID
            // A plain tag without records packs into one word; the status and output are read in place.
            if calls[index].output?.hasNoRecordsOrDurability ?? true,
                let code = FiredWriter.code(of: calls[index].status),
                packer.packPlain(index: tag, tagID: tagID, code: code)
            {
                continue
            }
            packer.add(index: tag, tagID: tagID, status: calls[index].status, output: calls[index].output)
        }
    }

    /// Appends the packed word of each tag call to `set`'s word ring while each packs (see
    /// ``PushResult/appendPlainFiredWords(to:)``); `false` at the first that does not.
    func appendPlainFiredWords(to set: SeenEventIDs) -> Bool {
        guard !calls.isEmpty else { return true }
        let containers = runtime.containers
        for index in calls.indices {
            let tagID = containers[calls[index].container].storage.program.tags[calls[index].tag].tagID
            guard let word = FiredWriter.plainWord(of: calls[index], tagID: tagID) else { return false }
            set.appendWord(word)
        }
        return true
    }

    func appendFiredTags(to tags: inout [FiredTag]) {
        let containers = snapshot.containers
        for call in calls { tags.append(call.firedTag(in: containers[call.container].storage)) }
    }
}
