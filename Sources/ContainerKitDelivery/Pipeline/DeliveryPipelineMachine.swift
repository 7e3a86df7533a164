import ContainerKit

/// The delivery pipeline's state, as a pure state machine: no I/O, no locks, no clock of its own (times
/// come in as arguments). It owns the phase (``State``), the durability and flush waiters, the batches in
/// flight and their acknowledgement order, and the counters; each step returns the ``Action``s the shell
/// (``DeliveryPipeline``) performs, so every interleaving can be driven step by step in tests.
///
/// `Waiter` is what the shell resumes (a continuation); the machine only stores and returns it.
struct DeliveryPipelineMachine<Position: Comparable & Hashable & Sendable, Waiter: Sendable>: Sendable {
    /// The pipeline's phase.
    enum State: Sendable, Equatable {
        /// Made, ``DeliveryPipeline/run()`` not called yet: appends are taken, nothing is delivered.
        case idle
        /// Delivering.
        case running
        /// Refusing new records and delivering what is stored until `deadline` (on the shell's clock).
        case draining(deadline: Duration)
        /// Done: nothing is taken or delivered any more.
        case stopped
    }

    /// A batch handed to the destination (or held back, see ``held``) and not yet acknowledged.
    struct Flight: Sendable {
        var id: Int
        var end: Position?
        var settled: Bool
        /// A batch with an `identify` record read while earlier batches were out: it is handed to the
        /// destination only once every batch before it is settled (Braze merges what an alias-only profile
        /// holds when it identifies it, so the alias's records must have arrived). `nil`: handed out.
        var held: (records: [AnalyticsRecord], json: RecordsJSON?)? = nil
    }

    /// What the shell must do after a step.
    enum Action: Sendable {
        /// Resume a durability waiter (`nil`: its records are durable).
        case resumeDurability(Waiter, DurabilityError?)
        /// Resume a flush waiter (`nil`: everything it waited for is settled).
        case resumeFlush(Waiter, (any Error & Sendable)?)
        /// Tell the store that everything through this position is delivered.
        case acknowledge(Position)
        /// Hand this batch to the destination (flight `id`), retrying until it is settled; `json`: the
        /// records' JSON when the store had it (``StoredBatch/json``).
        case deliver(id: Int, records: [AnalyticsRecord], json: RecordsJSON?)
        /// Wake the delivery loop.
        case wakeDelivery

        /// Whether this is an ``acknowledge(_:)``.
        var isAcknowledgement: Bool {
            if case .acknowledge = self { true } else { false }
        }
    }

    /// What the delivery loop does next.
    enum Step: Sendable, Equatable {
        /// Read up to `limit` records after `after` from the store.
        case read(after: Position?, limit: Int)
        /// Nothing to do until woken, or until `until` (on the shell's clock) when set.
        case wait(until: Duration?)
        /// The drain is over (everything delivered, or its deadline passed): stop delivering.
        case finish
    }

    let batchSize: Int
    let maximumInFlight: Int
    /// Fewer committed records than this wait up to ``linger`` for more before a read (1: never wait).
    let lingerCount: Int
    let linger: Duration

    private(set) var state = State.idle
    private var started = false
    /// A start timeout passed (or a graceful shutdown came) before ``DeliveryPipeline/run()`` began.
    private var startMissed = false
    // Durability.
    private(set) var lastTicket: UInt64 = 0
    private(set) var resolvedTicket: UInt64 = 0
    private var failedTickets: [(range: ClosedRange<UInt64>, error: DurabilityError)] = []
    private var durabilityWaiters: [(ticket: UInt64, waiter: Waiter)] = []
    // Delivery.
    private var flights: [Flight] = []
    private var nextFlight = 0
    private var readAfter: Position?
    private var reading = false
    /// Whether the store may hold committed records not read yet (true at start: an earlier run's backlog).
    private var mayHaveRecords = true
    /// A commit or a store's notice (``committed(through:records:)``) came while a read was out: an empty answer
    /// of that read does not mean that nothing is left (the read may have looked before the commit), so the loop
    /// reads again. (A flush needs no such mark: what it waits for was committed before it, or is reported so.)
    private var notifiedWhileReading = false
    /// Committed records not read yet, as far as this run's commits tell (for the linger).
    private var unreadCommitted = 0
    private var lingerSince: Duration?
    private var readAgainAt: Duration?
    private(set) var failedReads = 0
    private var flushWaiters: [(ticket: UInt64, waiter: Waiter, error: (any Error & Sendable)?)] = []
    /// `.acknowledge` actions returned and not reported written (``acknowledgementsWritten(_:)``): a flush is
    /// not answered before they are, and a store may learn meanwhile that it holds more (a PostgreSQL store
    /// whose read passed over partitions with a batch in flight says so when that batch is acknowledged).
    private var unwrittenAcknowledgements = 0

    init(batchSize: Int, maximumInFlight: Int, lingerCount: Int = 1, linger: Duration = .zero) {
        self.batchSize = max(1, batchSize)
        self.maximumInFlight = max(1, maximumInFlight)
        self.lingerCount = max(1, lingerCount)
        self.linger = max(linger, .zero)
    }

    // MARK: Phase

    /// ``DeliveryPipeline/run()`` began. Throws when it ran before.
    mutating func start() throws(AnalyticsSinkError) {
        guard !started else { throw AnalyticsSinkError(.closed, "the delivery pipeline already ran") }
        started = true
        // A graceful shutdown that came first leaves the pipeline draining: it delivers what is stored.
        if state == .idle { state = .running }
    }

    /// Whether new records are taken.
    var acceptsRecords: Bool {
        switch state {
        case .idle, .running: return true
        case .draining, .stopped: return false
        }
    }

    /// The graceful shutdown: refuse new records, deliver what is stored until `deadline`. Before
    /// ``DeliveryPipeline/run()`` began, whoever waits is answered `.notRunning` at once (a host shutting
    /// down must not wait for a run that never came).
    mutating func drain(deadline: Duration) -> [Action] {
        switch state {
        case .idle, .running:
            state = .draining(deadline: deadline)
            return notRunning() + [.wakeDelivery]
        case .draining, .stopped:
            return []
        }
    }

    /// Stopped (cancelled, or the drain ended): every waiter is answered.
    mutating func stop() -> [Action] {
        state = .stopped
        return answerWaiters(DurabilityError(.stopped, "the delivery pipeline stopped before the records were stored"))
    }

    /// Whether ``DeliveryPipeline/run()`` began.
    var hasStarted: Bool { started }

    /// ``DeliveryPipeline/run()`` has not begun within the time the shell gives it: nothing commits or
    /// delivers, so every waiter is answered `.notRunning` (instead of waiting forever). Nothing happens
    /// once it began.
    mutating func notRunning() -> [Action] {
        guard !started else { return [] }
        startMissed = true
        return answerWaiters(Self.notRunningError)
    }

    /// Whether a wait must fail at once: ``DeliveryPipeline/run()`` has not begun and a start timeout (or a
    /// graceful shutdown) already found it missing — later waits do not wait for it again.
    private var answersNotRunning: Bool { !started && startMissed }

    static var notRunningError: DurabilityError {
        DurabilityError(.notRunning, "the delivery pipeline's run() is not running; nothing stores or delivers records")
    }

    private mutating func answerWaiters(_ error: DurabilityError) -> [Action] {
        var actions: [Action] = durabilityWaiters.map { .resumeDurability($0.waiter, error) }
        actions += flushWaiters.map { .resumeFlush($0.waiter, $0.error ?? error) }
        durabilityWaiters.removeAll()
        flushWaiters.removeAll()
        return actions
    }

    // MARK: Durability

    /// The store took an append as `ticket`.
    mutating func appended(ticket: UInt64) { lastTicket = max(lastTicket, ticket) }

    /// The store committed every ticket through `ticket` (`records` records in this commit).
    mutating func committed(through ticket: UInt64, records: Int) -> [Action] {
        resolvedTicket = max(resolvedTicket, ticket)
        mayHaveRecords = true
        if reading { notifiedWhileReading = true }
        unreadCommitted += records
        return resolveDurability() + [.wakeDelivery]
    }

    /// The commit holding `tickets` failed.
    mutating func commitFailed(_ tickets: ClosedRange<UInt64>, error: DurabilityError) -> [Action] {
        failedTickets.append((tickets, error))
        if failedTickets.count > 4096 { failedTickets.removeFirst(failedTickets.count - 4096) }
        resolvedTicket = max(resolvedTicket, tickets.upperBound)
        return resolveDurability() + [.wakeDelivery]
    }

    /// How `ticket`'s commit went: `nil` when durable (or not resolved yet).
    func failure(for ticket: UInt64) -> DurabilityError? {
        failedTickets.last { $0.range.contains(ticket) }?.error
    }

    /// Waits for `ticket`: answered at once when it is resolved or the pipeline stopped.
    mutating func waitUntilDurable(ticket: UInt64, _ waiter: Waiter) -> Action? {
        if ticket <= resolvedTicket { return .resumeDurability(waiter, failure(for: ticket)) }
        if answersNotRunning { return .resumeDurability(waiter, Self.notRunningError) }
        if state == .stopped {
            return .resumeDurability(waiter, DurabilityError(.stopped, "the delivery pipeline stopped"))
        }
        durabilityWaiters.append((ticket, waiter))
        return nil
    }

    private mutating func resolveDurability() -> [Action] {
        var actions: [Action] = []
        var waiting: [(ticket: UInt64, waiter: Waiter)] = []
        for entry in durabilityWaiters {
            if entry.ticket <= resolvedTicket {
                actions.append(.resumeDurability(entry.waiter, failure(for: entry.ticket)))
            } else {
                waiting.append(entry)
            }
        }
        durabilityWaiters = waiting
        return actions
    }

    // MARK: Flush

    /// Waits until everything appended so far is durable and settled: answered once every ticket up to
    /// the latest is resolved and a read finds nothing more with no batch in flight.
    mutating func flush(_ waiter: Waiter) -> [Action] {
        if answersNotRunning { return [.resumeFlush(waiter, Self.notRunningError)] }
        if state == .stopped {
            return [.resumeFlush(waiter, DurabilityError(.stopped, "the delivery pipeline stopped"))]
        }
        flushWaiters.append((lastTicket, waiter, nil))
        mayHaveRecords = true
        return [.wakeDelivery]
    }

    /// Flushes waiting.
    var waitingFlushCount: Int { flushWaiters.count }

    /// Whether a flush or the drain waits (no lingering then).
    private var hurried: Bool {
        if !flushWaiters.isEmpty { return true }
        if case .draining = state { return true }
        return false
    }

    /// Whether everything committed is delivered and acknowledged, and the acknowledgements written.
    var caughtUp: Bool { flights.isEmpty && !reading && !mayHaveRecords && unwrittenAcknowledgements == 0 }

    private mutating func endFlushes() -> [Action] {
        guard caughtUp else { return [] }
        var actions: [Action] = []
        var waiting: [(ticket: UInt64, waiter: Waiter, error: (any Error & Sendable)?)] = []
        for entry in flushWaiters {
            if entry.ticket <= resolvedTicket {
                actions.append(.resumeFlush(entry.waiter, entry.error))
            } else {
                waiting.append(entry)
            }
        }
        flushWaiters = waiting
        return actions
    }

    // MARK: Delivery

    /// The delivery loop's next step at time `now`.
    mutating func nextStep(now: Duration) -> Step {
        if case .draining(let deadline) = state {
            if now >= deadline || (caughtUp && lastTicket <= resolvedTicket) { return .finish }
        }
        if state == .stopped { return .finish }
        guard !reading, flights.count < maximumInFlight, mayHaveRecords else { return .wait(until: drainDeadline) }
        if let at = readAgainAt {
            if now < at { return .wait(until: earliest(at, drainDeadline)) }
            readAgainAt = nil
        }
        // Fewer committed records than a batch while appended ones are being committed: the batch waits for
        // that commit, whose report wakes the loop (one request instead of two, no timer), unless a flush or
        // the drain waits. A store that commits at once (memory) never has appends left to commit.
        if !hurried, unreadCommitted > 0, unreadCommitted < batchSize, lastTicket > resolvedTicket {
            return .wait(until: nil)
        }
        if linger > .zero, !hurried, unreadCommitted > 0, unreadCommitted < lingerCount {
            let since = lingerSince ?? now
            lingerSince = since
            if now < since + linger { return .wait(until: earliest(since + linger, drainDeadline)) }
        }
        lingerSince = nil
        reading = true
        notifiedWhileReading = false
        return .read(after: readAfter, limit: batchSize)
    }

    private var drainDeadline: Duration? {
        if case .draining(let deadline) = state { return deadline }
        return nil
    }

    private func earliest(_ a: Duration, _ b: Duration?) -> Duration { b.map { min(a, $0) } ?? a }

    /// A read asked for by ``nextStep(now:)`` came back with `batch`.
    mutating func readCompleted(_ batch: StoredBatch<Position>) -> [Action] {
        reading = false
        failedReads = 0
        unreadCommitted = max(0, unreadCommitted - batch.records.count - batch.skipped)
        guard let end = batch.end else {
            // Nothing committed after the last batch when the store looked. A commit reported since may hold what
            // it could not see yet: read again (its records stay counted for the linger).
            if notifiedWhileReading {
                notifiedWhileReading = false
                return [.wakeDelivery]
            }
            // Otherwise wait for a commit (or a flush).
            mayHaveRecords = false
            unreadCommitted = 0
            return endFlushes()
        }
        readAfter = end
        nextFlight += 1
        let settled = batch.records.isEmpty
        if !settled, flights.contains(where: { !$0.settled }), batch.records.contains(where: \.isIdentify) {
            flights.append(Flight(id: nextFlight, end: end, settled: false, held: (batch.records, batch.json)))
            return [.wakeDelivery]
        }
        flights.append(Flight(id: nextFlight, end: end, settled: settled))
        if settled { return acknowledgeSettled() + [.wakeDelivery] }
        return [.deliver(id: nextFlight, records: batch.records, json: batch.json), .wakeDelivery]
    }

    /// Hands out the held batch (see ``Flight/held``) whose earlier batches are all settled now, if any.
    private mutating func releaseHeld() -> [Action] {
        guard let index = flights.firstIndex(where: { !$0.settled }), let held = flights[index].held else {
            return []
        }
        flights[index].held = nil
        return [.deliver(id: flights[index].id, records: held.records, json: held.json)]
    }

    /// A read failed (the store cannot be read right now): read again at `retryAt`; nothing is
    /// acknowledged meanwhile.
    mutating func readFailed(retryAt: Duration) {
        reading = false
        failedReads += 1
        readAgainAt = retryAt
    }

    /// The destination settled flight `id` (delivered or rejected every record); `error` is the first
    /// rejection, for the flushes waiting.
    mutating func settled(id: Int, error: (any Error & Sendable)?) -> [Action] {
        guard let index = flights.firstIndex(where: { $0.id == id }) else { return [] }
        flights[index].settled = true
        if let error {
            for i in flushWaiters.indices where flushWaiters[i].error == nil { flushWaiters[i].error = error }
        }
        return acknowledgeSettled() + releaseHeld() + [.wakeDelivery]
    }

    /// A delivery failed in a retryable way: the flushes waiting learn it at once (the records stay).
    mutating func deliveryFailed(_ error: any Error & Sendable) -> [Action] {
        defer { flushWaiters.removeAll() }
        return flushWaiters.map { .resumeFlush($0.waiter, error) }
    }

    /// Acknowledges the end of the longest settled prefix of the flights.
    private mutating func acknowledgeSettled() -> [Action] {
        let count = flights.prefix { $0.settled }.count
        guard count > 0 else { return [] }
        let end = flights[count - 1].end
        flights.removeFirst(count)
        var actions: [Action] = []
        if let end {
            actions.append(.acknowledge(end))
            unwrittenAcknowledgements += 1
        }
        return actions + endFlushes()
    }

    /// The store wrote `count` of the acknowledgements this machine asked for (or failed to: the records are
    /// then delivered again, at least once): the flushes they held back may be answered.
    mutating func acknowledgementsWritten(_ count: Int) -> [Action] {
        unwrittenAcknowledgements = max(0, unwrittenAcknowledgements - count)
        return endFlushes() + [.wakeDelivery]
    }

    /// The flights not settled yet (for tests).
    var inFlight: Int { flights.filter { !$0.settled }.count }

    /// The flights held back until the batches before them are settled (for tests).
    var heldBack: Int { flights.filter { $0.held != nil }.count }
}
