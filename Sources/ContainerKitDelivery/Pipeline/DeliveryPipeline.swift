public import ContainerKit

import struct Synchronization.Atomic

/// The one delivery engine: takes the provider's records into a ``RecordStore``, and delivers what the
/// store committed to one ``AnalyticsDestination`` — in batches, in order, several at once if configured —
/// applying the pipeline's one retry policy, and acknowledges each batch to the store once it and every
/// batch before it are settled.
///
/// ```swift
/// let pipeline = try DeliveryPipeline.durable(directory: "/var/lib/app/braze-queue", destination: braze)
/// // or, records lost with the process:  DeliveryPipeline.inMemory(destination: braze)
/// BrazeTagProvider(sink: pipeline).register(on: tagManager)
/// try await withGracefulShutdownHandler {         // swift-service-lifecycle, in the host
///     try await pipeline.run()                    // delivers until cancelled (then stops at once)
/// } onGracefulShutdown: {
///     pipeline.gracefulShutdown()                 // drains within the deadline, then run() returns
/// }
/// ```
///
/// ## Parts and owners
/// ``DeliveryPipelineMachine`` holds every state and decides; this class is the shell, one
/// lock–run–act helper (``act(_:)``) around it. ``run()`` owns two child tasks: the store's own work
/// (``RecordStore/run(reporting:)``: the segment log's writer thread, a database connection) and the
/// delivery loop, whose child tasks each deliver one batch until it is settled. The drain deadline is the
/// only deadline the pipeline adds; each request has the destination's own.
///
/// ## Stopping
/// Cancelling ``run()``'s task stops at once: deliveries in flight are cancelled (a durable store keeps
/// their records for the next run), waiters are answered `.closed`. ``gracefulShutdown()`` is the other
/// signal: new records are refused, everything stored is delivered for at most
/// ``DeliverySettings/drainTimeout``, then ``run()`` returns by itself.
public final class DeliveryPipeline<Store: RecordStore>: AnalyticsSink, DurabilitySource, Runnable {
    /// Counters for monitoring and tests: the one ``DeliveryStatistics`` of every store.
    public typealias Statistics = DeliveryStatistics

    typealias Machine = DeliveryPipelineMachine<Store.Position, Waiter>

    /// What the machine stores for a waiting caller.
    enum Waiter: Sendable {
        case durability(CheckedContinuation<DurabilityError?, Never>)
        case flush(CheckedContinuation<(any Error & Sendable)?, Never>)
    }

    private struct Shell {
        var machine: Machine
        var statistics = Statistics()
    }

    /// The store records are kept in.
    public let store: Store
    /// Where records are delivered.
    public let destination: any AnalyticsDestination
    /// How the pipeline delivers, as given (a `nil` setting takes the storage's default: see ``retry``).
    public let settings: DeliverySettings
    /// The retry policy in force: ``DeliverySettings/retry``, or the storage's default (``DeliveryRetryPolicy/unlimited``
    /// for a durable store).
    public let retry: DeliveryRetryPolicy
    /// How the pipeline's log messages name it, in their `queue` metadata (`queue`; a durable store's directory).
    let label: String
    /// Whether a retryable delivery failure ends the flushes waiting, with its error (when ``retry`` never gives
    /// up: a flush does not wait for a destination that is down); otherwise they wait until the records settle.
    private let flushFailsOnRetry: Bool
    /// The records a store that is not durable still holds (lost when ``run()`` ends: counted as dropped).
    private let heldRecords: (@Sendable () -> Int)?
    /// Records a store that is not durable held when ``run()`` ended.
    private let lostAtStop = Atomic<Int>(0)

    private let shell: Mutex<Shell>
    /// Mirrors of the machine's phase read without its lock on the hot paths (each append, each durability
    /// wait, each delivery): whether ``run()`` began, whether records are refused (draining or stopped), and
    /// the drain's deadline in nanoseconds on ``clock`` (`Int64.max`: no drain).
    private let started = Atomic<Bool>(false)
    private let refusing = Atomic<Bool>(false)
    private let drainDeadline = Atomic<Int64>(.max)
    /// Counters bumped once per delivery or acknowledgement, outside the lock (``statistics`` adds them).
    private let deliveredRecords = Atomic<Int>(0)
    private let rejectedRecords = Atomic<Int>(0)
    private let acknowledgementCount = Atomic<Int>(0)
    private let wakeup = Wakeup()
    /// Opens when the drain starts: ends every delivery's backoff early.
    private let drainStarted = Latch()
    private let clock: DeliveryClock
    private let logs: LogLimiter
    private let diagnostics: PipelineDiagnostics

    /// Creates a pipeline over `store` — a store of your own (a database); the package's stores have their
    /// factories: ``inMemory(destination:settings:maximumRecords:clock:)`` and
    /// ``durable(directory:destination:settings:storage:clock:)``. Starts nothing: call ``run()``.
    public convenience init<C: Clock>(
        store: Store,
        destination: any AnalyticsDestination,
        settings: DeliverySettings = DeliverySettings(),
        clock: C = ContinuousClock()
    ) where C.Duration == Duration {
        self.init(store: store, destination: destination, settings: settings, label: "queue", clock: clock)
    }

    /// Creates a pipeline over `store`; `label` names it in log messages (unless ``DeliverySettings/name`` does), `defaultLinger` and
    /// `defaultLingerCount` are the storage's defaults of ``DeliverySettings/linger`` and
    /// ``DeliverySettings/lingerCount`` (`nil`: a full batch), `heldRecords` counts what a store that is not
    /// durable still holds.
    init<C: Clock>(
        store: Store,
        destination: any AnalyticsDestination,
        settings: DeliverySettings,
        label: String,
        defaultLinger: Duration = .zero,
        defaultLingerCount: Int? = nil,
        heldRecords: (@Sendable () -> Int)? = nil,
        clock: C
    ) where C.Duration == Duration {
        self.store = store
        self.destination = destination
        self.settings = settings
        let retry = settings.retry ?? (store.isDurable ? .unlimited : DeliveryRetryPolicy())
        self.retry = retry
        self.label = settings.name ?? label
        self.flushFailsOnRetry = retry.maximumAttempts == .max
        self.heldRecords = heldRecords
        self.clock = DeliveryClock(clock)
        let diagnostics = PipelineDiagnostics(logger: settings.logger, observer: settings.observer)
        self.diagnostics = diagnostics
        self.logs = LogLimiter(logger: diagnostics, interval: settings.logInterval, elapsed: self.clock.elapsed)
        let batchSize = Self.batchSize(settings, destination)
        shell = Mutex(
            Shell(
                machine: Machine(
                    batchSize: batchSize,
                    maximumInFlight: settings.maximumConcurrentDeliveries,
                    lingerCount: settings.lingerCount ?? defaultLingerCount ?? batchSize,
                    linger: settings.linger ?? defaultLinger
                )
            )
        )
    }

    /// Records per delivery: ``DeliverySettings/batchSize``, or the destination's preferred size.
    static func batchSize(_ settings: DeliverySettings, _ destination: any AnalyticsDestination) -> Int {
        max(1, settings.batchSize ?? destination.preferredBatchSize)
    }

    /// Counters for monitoring and tests: the pipeline's, and the store's own (``RecordStore/addCounters(to:)``).
    public var statistics: Statistics {
        var statistics = pipelineStatistics
        store.addCounters(to: &statistics)
        return statistics
    }

    /// The pipeline's own counters: those kept under its lock, with those kept in atomics added.
    private var pipelineStatistics: Statistics {
        var statistics = shell.withLock { $0.statistics }
        statistics.deliveredRecords += deliveredRecords.load(ordering: .relaxed)
        statistics.rejectedRecords += rejectedRecords.load(ordering: .relaxed)
        statistics.acknowledgements += acknowledgementCount.load(ordering: .relaxed)
        statistics.droppedRecords += lostAtStop.load(ordering: .relaxed)
        return statistics
    }

    /// Flushes waiting (for tests).
    var waitingFlushCount: Int { shell.withLock { $0.machine.waitingFlushCount } }

    /// The ticket of the latest append (0 before the first).
    public var lastTicket: UInt64 { shell.withLock { $0.machine.lastTicket } }

    public func inherit(logger: any DiagnosticLogger, observer: (any DeliveryObserver)?) {
        diagnostics.inherit(logger: logger, observer: observer)
    }

    // MARK: The one lock–run–act helper

    /// Runs `step` on the machine under the lock, then performs the actions it returned, outside it.
    @discardableResult
    private func act<T>(_ step: (inout Shell) -> (T, [Machine.Action])) -> T {
        let (value, actions) = shell.withLock { step(&$0) }
        for action in actions { perform(action) }
        return value
    }

    private func perform(_ action: Machine.Action) {
        switch action {
        case .resumeDurability(let waiter, let error):
            if case .durability(let continuation) = waiter { continuation.resume(returning: error) }
        case .resumeFlush(let waiter, let error):
            if case .flush(let continuation) = waiter { continuation.resume(returning: error) }
        case .wakeDelivery:
            wakeup.signal()
        case .acknowledge, .deliver:
            // Performed by the delivery loop, which asked for them.
            break
        }
    }

    // MARK: Appending

    /// Encodes `records` once and hands them to the store; returns at once with the token to wait on.
    /// - Throws: `.queueFull` or `.closed`; nothing is taken then.
    @discardableResult
    public func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard !records.isEmpty else { return nil }
        return try append(EncodedRecords(records))
    }

    /// Hands records the provider encoded to the store; returns the token to wait on (`nil` when
    /// `encoded` holds no record and no session change).
    /// - Throws: `.queueFull` or `.closed`; nothing is taken then.
    @discardableResult
    public func enqueue(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken? {
        guard !encoded.records.isEmpty || !encoded.sessions.isEmpty else { return nil }
        return try append(encoded)
    }

    /// Notes a ticket the store handed out for lines appended past ``append(_:)`` (a store's own session
    /// lines), so that a drain waits for it too.
    package func noteAppended(ticket: UInt64) {
        shell.withLock { $0.machine.appended(ticket: ticket) }
    }

    /// Hands encoded records to the store; returns the token to wait on.
    /// - Throws: `.queueFull` or `.closed`; nothing is taken then.
    public func append(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken {
        let count = encoded.records.count
        do throws(AnalyticsSinkError) {
            guard !refusing.load(ordering: .acquiring) else {
                throw AnalyticsSinkError(.closed, "the queue '\(label)' is shut down")
            }
            // The store's own lock orders tickets; the machine only learns the latest.
            let ticket = try store.append(encoded)
            shell.withLock {
                $0.machine.appended(ticket: ticket)
                $0.statistics.enqueuedRecords += count
            }
            diagnostics.observer?.observe(.recordsEnqueued(count: count))
            return DurabilityToken(source: self, ticket: ticket)
        } catch {
            shell.withLock { $0.statistics.droppedRecords += count }
            diagnostics.observer?.observe(.recordsRejected(count: count, reason: error.message))
            logs.log(.error, key: "refused", "refused records", metadata: context(error, ["records": String(count)]))
            throw error
        }
    }

    /// The store's commit reports, wired to the machine.
    private var commitReporter: RecordStoreCommits {
        RecordStoreCommits(
            committed: { [weak self] ticket, records in
                guard let self else { return }
                // Reported before the waiters are answered: whoever waited sees the count include its records.
                if self.store.isDurable { self.diagnostics.observer?.observe(.recordsDurable(count: records)) }
                self.act { shell in
                    shell.statistics.commits += 1
                    shell.statistics.durableRecords += records
                    return ((), shell.machine.committed(through: ticket, records: records))
                }
            },
            failed: { [weak self] tickets, records, error in
                guard let self else { return }
                self.act { shell in
                    shell.statistics.droppedRecords += records
                    return ((), shell.machine.commitFailed(tickets, error: error))
                }
                self.logs.log(
                    .error,
                    key: "commit",
                    "records not stored",
                    metadata: self.context(["code": error.code.rawValue, "error": error.message])
                )
            },
            available: { [weak self] in
                // A commit of nothing: the delivery loop reads again.
                self?.act { shell in ((), shell.machine.committed(through: 0, records: 0)) }
            },
            problem: { [weak self] problem in
                self?.logWarning(
                    key: "store:\(problem.prefix(200))",
                    "the record store reported a problem",
                    metadata: ["problem": problem]
                )
            }
        )
    }

    /// Appends `records` and returns once they are durable (needs ``run()``).
    /// - Throws: ``DurabilityError``: `.full` or `.stopped` when the pipeline refused them (nothing is stored
    ///   then), or the error of their commit (see ``waitUntilDurable(ticket:)``).
    public func append(_ records: [AnalyticsRecord]) async throws(DurabilityError) {
        let token: DurabilityToken?
        do {
            token = try enqueue(records)
        } catch {
            throw DurabilityError(error)
        }
        guard let token else { return }
        try await waitUntilDurable(ticket: token.ticket)
    }

    /// Logs a warning with the pipeline's `queue` metadata, at most once per log interval for `key` (for
    /// what a store's extensions meet: a session line that cannot be applied).
    package func logWarning(key: String, _ message: String, metadata: LogMetadata) {
        logs.log(.warning, key: key, message, metadata: context(metadata))
    }

    /// Returns once the records of `ticket` are committed.
    /// - Throws: the store's error (converted once, where the commit failed) when the commit holding
    ///   `ticket` failed; `.stopped` once the pipeline stopped; `.notRunning` when ``run()`` did not begin
    ///   within ``DeliverySettings/startTimeout``.
    public func waitUntilDurable(ticket: UInt64) async throws(DurabilityError) {
        if !started.load(ordering: .acquiring) {
            // Settled already (before run(): a commit of an earlier step): answered without the start timer.
            let settled = shell.withLock { shell -> DurabilityError?? in
                ticket <= shell.machine.resolvedTicket ? .some(shell.machine.failure(for: ticket)) : .none
            }
            if case .some(let error) = settled {
                if let error { throw error }
                return
            }
        }
        // One lock: the machine answers at once when the ticket is resolved, else keeps the waiter.
        let error: DurabilityError? = await waitingForRun {
            await withCheckedContinuation { continuation in
                self.act { shell in
                    let action = shell.machine.waitUntilDurable(ticket: ticket, .durability(continuation))
                    return ((), action.map { [$0] } ?? [])
                }
            }
        }
        if let error { throw error }
    }

    /// Returns once every one of `tickets` is committed (or its commit failed).
    /// - Throws: the error of the first commit holding one of `tickets` that failed.
    public func waitUntilDurable(tickets: [UInt64]) async throws(DurabilityError) {
        guard let highest = tickets.max() else { return }
        try await waitUntilDurable(ticket: highest)
        let error = shell.withLock { shell -> DurabilityError? in
            for ticket in tickets { if let error = shell.machine.failure(for: ticket) { return error } }
            return nil
        }
        if let error { throw error }
    }

    /// Returns once everything appended so far is durable (needs ``run()``).
    /// - Throws: the error of the latest commit if it failed (see ``waitUntilDurable(ticket:)``).
    public func waitUntilDurable() async throws(DurabilityError) {
        try await waitUntilDurable(ticket: lastTicket)
    }

    /// Returns once everything appended so far is durable and settled by the destination (delivered,
    /// rejected, or given up on) and nothing more is committed (needs ``run()``).
    /// - Throws: a commit error; the first error that settled records without delivering them (a rejection,
    ///   attempts used up); with a ``retry`` policy that never gives up, the destination's error if a delivery
    ///   fails meanwhile (the records stay stored and are retried).
    public func flush() async throws {
        try await waitUntilDurable()
        let error: (any Error & Sendable)? = await waitingForRun {
            await withCheckedContinuation { continuation in
                self.act { shell in ((), shell.machine.flush(.flush(continuation))) }
            }
        }
        if let error { throw error }
    }

    /// Runs `wait` (which registers a waiter with the machine, before its first suspension); while
    /// ``run()`` has not begun, at most for ``DeliverySettings/startTimeout``: then every waiter is answered
    /// `.notRunning`, and so is every later one until ``run()`` begins. Once ``run()`` began, `wait` runs
    /// alone (the hot path adds nothing).
    private func waitingForRun<T: Sendable>(_ wait: () async -> T) async -> T {
        if started.load(ordering: .acquiring) { return await wait() }
        let timeout = settings.startTimeout
        return await withTaskGroup(of: Void.self) { group in
            group.addTask {
                // The caller's own timer (a child of its task), cancelled as soon as its wait is answered; on
                // the continuous clock (a wall-clock safety net, not a step of the delivery schedule).
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                self.act { shell in ((), shell.machine.notRunning()) }
            }
            // In this task: the waiter is registered before anything suspends (a caller that starts the wait
            // with `Task.immediate` finds it registered).
            let answer = await wait()
            group.cancelAll()
            return answer
        }
    }

    // MARK: Running

    /// Delivers until the task is cancelled (then stops at once) or ``gracefulShutdown()`` drained.
    /// - Throws: `.closed` when called twice; the store's error if its work fails.
    public func run() async throws {
        try shell.withLock { shell throws(AnalyticsSinkError) in try shell.machine.start() }
        started.store(true, ordering: .releasing)
        let reporter = commitReporter
        defer {
            refusing.store(true, ordering: .releasing)
            act { shell in ((), shell.machine.stop()) }
            if let left = heldRecords?(), left > 0 {
                lostAtStop.store(left, ordering: .relaxed)
                diagnostics.write(
                    .error,
                    "dropped records: the queue stopped before delivering them",
                    metadata: context(["records": String(left)])
                )
            }
            logs.flush()
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await self.store.run(reporting: reporter) }
            // The destination's own work (an HTTP client's I/O thread) runs until the group is cancelled.
            group.addTask {
                try await self.destination.run()
                await untilCancelled()
            }
            group.addTask { await self.deliveryLoop() }
            // The delivery loop ends first (cancellation or the end of the drain); then the store and the
            // destination stop.
            _ = try await group.next()
            group.cancelAll()
            try await group.waitForAll()
        }
    }

    /// Starts the drain: new records are refused; what is stored is delivered for at most
    /// ``DeliverySettings/drainTimeout``; then ``run()`` returns. Safe to call at any time, and more than once.
    public func gracefulShutdown() {
        let deadline = clock.elapsed() + settings.drainTimeout
        refusing.store(true, ordering: .releasing)
        act { shell in
            let actions = shell.machine.drain(deadline: deadline)
            if case .draining(let deadline) = shell.machine.state {
                drainDeadline.store(Self.nanoseconds(deadline), ordering: .releasing)
            }
            return ((), actions)
        }
        drainStarted.open()
    }

    // MARK: Delivery loop

    private enum LoopEvent: Sendable {
        case settled(id: Int, error: (any Error & Sendable)?)
        /// A delivery stopped unsettled (the drain deadline, or cancellation): its records stay in the store.
        case abandoned
        case woken
        /// The store recorded `written` acknowledgements (coalesced into the ones among `actions`); the actions
        /// that waited for them can be performed.
        case acknowledged([Machine.Action], written: Int)
    }

    /// The acknowledgements the delivery loop hands to the store, one at a time and in order, beside the
    /// deliveries: the next batch is read and sent while the store records the last one's acknowledgement
    /// (for the segment log, a write on its own thread), instead of after it. What settles meanwhile waits,
    /// and is acknowledged with one call (acknowledging through a later position covers the earlier ones);
    /// while it waits, nothing more is read. A flush is answered only after the acknowledgement before it
    /// was recorded.
    struct Acknowledgements {
        /// Whether a child task is acknowledging.
        var running = false
        /// Acknowledgements and flush answers that came while one ran, in order.
        var waiting: [Machine.Action] = []

        /// Whether a settled batch waits for the acknowledgement being written.
        var holdsSettledBatch: Bool {
            running && waiting.contains(where: \.isAcknowledgement)
        }

        /// The acknowledgements among `actions`.
        static func count(_ actions: [Machine.Action]) -> Int {
            actions.count(where: \.isAcknowledgement)
        }

        /// `actions`' acknowledgements and flush answers, with only the last acknowledgement kept.
        static func coalesced(_ actions: [Machine.Action]) -> [Machine.Action] {
            let last = actions.lastIndex(where: \.isAcknowledgement)
            return actions.enumerated().compactMap { index, action in
                if action.isAcknowledgement, index != last { return nil }
                return action
            }
        }
    }

    /// Performs a step's actions for the loop: durability answers at once; wake-ups not at all (the loop asked);
    /// acknowledgements (and the flush answers after them) in order, by one child task at a time (see
    /// ``Acknowledgements``).
    private func settle(
        _ actions: [Machine.Action],
        _ acknowledgements: inout Acknowledgements,
        into group: inout TaskGroup<LoopEvent>
    ) {
        var ordered: [Machine.Action] = []
        for action in actions {
            switch action {
            case .acknowledge, .resumeFlush: ordered.append(action)
            case .deliver(let id, let records, let json):
                // A batch held back until the batches before it settled (one with an `identify` record).
                group.addTask { await self.deliverUntilSettled(id: id, records: records, json: json) }
            case .resumeDurability: perform(action)
            case .wakeDelivery:
                // Asked of the loop itself, which takes its next step anyway: no signal, which would only make
                // its next wait return at once (a wait whose deadline the step moves earlier is ended there).
                break
            }
        }
        guard !ordered.isEmpty else { return }
        if acknowledgements.running {
            acknowledgements.waiting += ordered
            return
        }
        guard ordered.contains(where: \.isAcknowledgement) else {
            for action in ordered { perform(action) }
            return
        }
        acknowledgements.running = true
        let batch = Acknowledgements.coalesced(ordered)
        let written = Acknowledgements.count(ordered)
        group.addTask {
            await self.acknowledge(batch)
            return .acknowledged(batch, written: written)
        }
    }

    /// Reads batches from the store and hands each to a child task that delivers it until it is settled.
    private func deliveryLoop() async {
        await withTaskGroup(of: LoopEvent.self) { group in
            // Whether a wait is out (one at a time: the wake-up has one waiter), and until when (`nil`: until
            // signalled).
            var waking = false
            var wakingUntil: Duration?
            var acknowledgements = Acknowledgements()
            loop: while !Task.isCancelled {
                // A settled batch waits for the acknowledgement being written: nothing more is read until it
                // is written, so a crash re-delivers at most one batch more than those out to the destination.
                let step =
                    acknowledgements.holdsSettledBatch
                    ? .wait(until: nil) : act { shell in (shell.machine.nextStep(now: clock.elapsed()), []) }
                switch step {
                case .finish:
                    break loop
                case .read(let after, let limit):
                    let actions = await read(after: after, limit: limit, into: &group)
                    settle(actions, &acknowledgements, into: &group)
                    continue loop
                case .wait(let until):
                    // Held for a settled batch (above): the acknowledgement's event ends this wait.
                    if acknowledgements.holdsSettledBatch { break }
                    if waking {
                        // The wait that is out ends later than this step asks: end it; the loop waits again with
                        // this deadline once it is woken (and does not end it twice).
                        if let until, wakingUntil.map({ until < $0 }) ?? true {
                            wakeup.signal()
                            wakingUntil = until
                        }
                    } else {
                        waking = true
                        wakingUntil = until
                        let wait = until.map { $0 - clock.elapsed() }
                        group.addTask {
                            if let wait {
                                _ = await self.wakeup.sleep(max(wait, .zero), on: self.clock)
                            } else {
                                await self.wakeup.wait()
                            }
                            return .woken
                        }
                    }
                }
                guard let event = await group.next() else { break }
                switch event {
                case .woken:
                    waking = false
                case .abandoned:
                    break
                case .settled(let id, let error):
                    // The store records the acknowledgement before a flush waiting for it is answered.
                    let actions = shell.withLock { $0.machine.settled(id: id, error: error) }
                    settle(actions, &acknowledgements, into: &group)
                case .acknowledged(let actions, let written):
                    for action in actions { perform(action) }
                    acknowledgements.running = false
                    let waiting = acknowledgements.waiting
                    acknowledgements.waiting = []
                    settle(waiting, &acknowledgements, into: &group)
                    // The flushes that waited for these acknowledgements, unless the store learnt meanwhile
                    // that it holds more (or more acknowledgements wait).
                    let answers = shell.withLock { $0.machine.acknowledgementsWritten(written) }
                    settle(answers, &acknowledgements, into: &group)
                }
            }
            let drained = act({ shell in (shell.machine.state, []) }) != .stopped && !Task.isCancelled
            // Deliveries still out end (the drain is over, or run() stops at once). The acknowledgement being
            // written finishes; after a drain, what was settled meanwhile is acknowledged before the store stops
            // (a cancelled run stops at once: the store, cancelled beside this loop, keeps those records).
            group.cancelAll()
            var written = 0
            while acknowledgements.running, let event = await group.next() {
                guard case .acknowledged(let actions, let count) = event else { continue }
                for action in actions { perform(action) }
                acknowledgements.running = false
                written += count
            }
            if !acknowledgements.waiting.isEmpty {
                let last = Acknowledgements.coalesced(acknowledgements.waiting)
                if !Task.isCancelled { await acknowledge(last) }
                for action in last { perform(action) }
                written += Acknowledgements.count(acknowledgements.waiting)
            }
            if written > 0 { act { shell in ((), shell.machine.acknowledgementsWritten(written)) } }
            if drained { logs.log(.info, key: "drain", "drained", metadata: context()) }
        }
    }

    /// Performs a read the machine asked for and starts the delivery of what it found; returns the other
    /// actions of the step (an acknowledgement of skipped records, flushes to answer) for the loop.
    private func read(
        after: Store.Position?,
        limit: Int,
        into group: inout TaskGroup<LoopEvent>
    ) async -> [Machine.Action] {
        let batch: StoredBatch<Store.Position>
        do {
            batch = try await store.read(after: after, limit: limit)
        } catch {
            let delay = retry.backoff(
                afterAttempt: shell.withLock { $0.machine.failedReads } + 1,
                random: settings.random()
            )
            act { shell in
                shell.statistics.failedReads += 1
                shell.machine.readFailed(retryAt: clock.elapsed() + delay)
                return ((), [])
            }
            logs.log(
                .warning,
                key: "read-failed",
                "cannot read the record store; retrying, nothing after it is acknowledged",
                metadata: context(error, ["retry_in": "\(delay)"])
            )
            return []
        }
        for problem in batch.problems {
            logs.log(.warning, key: "skipped", "skipped unreadable records", metadata: context(["problem": problem]))
        }
        let actions = shell.withLock { shell in
            shell.statistics.skippedRecords += batch.skipped
            return shell.machine.readCompleted(batch)
        }
        for case .deliver(let id, let records, let json) in actions {
            group.addTask { await self.deliverUntilSettled(id: id, records: records, json: json) }
        }
        return actions.filter { if case .deliver = $0 { false } else { true } }
    }

    /// Gives the store the acknowledgements among `actions`.
    private func acknowledge(_ actions: [Machine.Action]) async {
        for case .acknowledge(let position) in actions {
            do {
                try await store.acknowledge(through: position)
                acknowledgementCount.add(1, ordering: .relaxed)
            } catch {
                logs.log(.warning, key: "ack", "could not record delivery progress", metadata: context(error))
            }
        }
    }

    /// Delivers one batch, retrying what is retryable until every record is settled, the attempts are used
    /// up (the rest is dropped), or the drain deadline passes (the rest stays in the store).
    private func deliverUntilSettled(id: Int, records batch: [AnalyticsRecord], json: RecordsJSON?) async -> LoopEvent {
        var records = batch
        // The records' JSON, for the first attempt (a retry may carry only some of the records).
        var json = json
        var attempt = 0
        var firstRejection: (any Error & Sendable)?
        while !records.isEmpty {
            if Task.isCancelled { return .abandoned }
            attempt += 1
            let result: DeliveryResult
            if let deadline = currentDrainDeadline {
                let (destination, sending, sendingJSON) = (self.destination, records, json)
                guard
                    let answer = await withDeadline(
                        deadline - clock.elapsed(),
                        on: clock,
                        { await destination.deliver(sending, json: sendingJSON) }
                    )
                else { return abandon(id: id, records, error: firstRejection) }
                result = answer
            } else {
                result = await destination.deliver(records, json: json)
            }
            json = nil
            // Cancelled meanwhile (run() stops at once): what the answer said is not acted on; the records stay.
            if Task.isCancelled { return .abandoned }
            report(result)
            firstRejection = firstRejection ?? result.rejected.first?.error
            guard let error = result.retryError, !result.retryable.isEmpty else { break }
            records = result.retryable
            act { shell in
                shell.statistics.failedDeliveries += 1
                return ((), flushFailsOnRetry ? shell.machine.deliveryFailed(error) : [])
            }
            diagnostics.observer?.observe(.deliveryFailed(message: error.message))
            // A refusal of the request says nothing about the records: it uses up no attempt.
            if error.code == .requestRefused { attempt -= 1 }
            if error.code == .shutDown || attempt >= retry.maximumAttempts {
                let dropped = DeliveryError(
                    .retriesExhausted,
                    "\(error.message) after \(attempt) attempts",
                    status: error.status,
                    errors: error.errors
                )
                drop(records, dropped)
                return .settled(id: id, error: firstRejection ?? dropped)
            }
            shell.withLock { $0.statistics.retries += 1 }
            let delay = retry.delay(
                afterAttempt: max(attempt, 1),
                error: error,
                random: settings.random()
            )
            let refused = error.code == .requestRefused
            logs.log(
                refused ? .error : .warning,
                key: refused ? "refused-request" : "retry",
                refused
                    ? "the destination refused the request; the records are kept and delivery pauses"
                    : "delivering records failed; retrying",
                metadata: context(
                    error,
                    ["records": String(records.count), "attempt": String(attempt), "retry_in": "\(delay)"]
                )
            )
            if let deadline = currentDrainDeadline {
                if clock.elapsed() + delay > deadline { return abandon(id: id, records, error: firstRejection) }
                try? await clock.sleep(delay)
            } else {
                // The backoff ends early when the drain starts (which retries within its deadline).
                let drainStarted = self.drainStarted
                _ = await withDeadline(delay, on: clock) { await drainStarted.wait() }
            }
        }
        return .settled(id: id, error: firstRejection)
    }

    /// The drain's deadline passed with `records` of flight `id` unsettled: they stay in the store (a
    /// durable store delivers them on the next run); the flight is not acknowledged.
    private func abandon(id: Int, _ records: [AnalyticsRecord], error: (any Error & Sendable)?) -> LoopEvent {
        logs.log(
            .warning,
            key: "drain",
            "the drain deadline passed; the undelivered records stay in the store",
            metadata: context(["records": String(records.count)])
        )
        return .abandoned
    }

    private func drop(_ records: [AnalyticsRecord], _ error: DeliveryError) {
        shell.withLock { $0.statistics.droppedRecords += records.count }
        diagnostics.observer?.observe(.recordsRejected(count: records.count, reason: error.message))
        logs.log(
            .error,
            key: "dropped",
            "dropped records",
            metadata: context(error, ["records": String(records.count)])
        )
    }

    /// The drain's deadline on ``clock`` once the drain started (read without the lock).
    private var currentDrainDeadline: Duration? {
        let nanoseconds = drainDeadline.load(ordering: .acquiring)
        return nanoseconds == .max ? nil : .nanoseconds(nanoseconds)
    }

    private static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }

    /// Counts and reports what one delivery did (the backlog, under the lock, only when an observer listens).
    private func report(_ result: DeliveryResult) {
        deliveredRecords.add(result.accepted.count, ordering: .relaxed)
        rejectedRecords.add(result.rejectedCount, ordering: .relaxed)
        diagnostics.report(
            result,
            backlog: {
                // The pipeline's counters only: the store's own (``statistics``) take the store's lock too.
                let s = self.pipelineStatistics
                return (max(0, s.durableRecords - s.deliveredRecords - s.rejectedRecords - s.droppedRecords), 0)
            },
            logs: logs,
            label: label
        )
    }

    /// The metadata of a pipeline message: `queue` (the label) and `extra`.
    private func context(_ extra: LogMetadata = [:]) -> LogMetadata {
        extra.merging(["queue": label]) { mine, _ in mine }
    }

    /// The metadata of a message about `error`: `queue`, the error's `code`, `error` and `status`, and `extra`.
    private func context(_ error: DeliveryError, _ extra: LogMetadata = [:]) -> LogMetadata {
        context(extra.merging(error.logMetadata) { mine, _ in mine })
    }
}
