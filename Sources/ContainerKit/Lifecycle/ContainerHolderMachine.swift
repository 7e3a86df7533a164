/// The state of one ``ContainerHolder`` as a state machine without I/O, clocks or locks: transitions take
/// the time as an argument and return ``Action``s, which the holder performs (see its `act` helper).
/// Generic over what a loaded version is and over how a waiting task is resumed, so tests drive it with
/// plain values.
///
/// Three questions, three enum states, instead of flags:
/// - **resolution** — is the `open` still waiting for a version (and who waits on it), or resolved;
/// - **lifecycle** — is a `run()` refreshing this holder, or is it closed (for good);
/// - **wake** — is a manual refresh requested, or is the refresh loop asleep until its next deadline.
struct ContainerHolderMachine<Candidate, Waiter> {
    /// Whether the open is resolved.
    enum Resolution {
        /// Waiting for a version (or the open's timeout); these tasks wait for it, by id.
        case pending(waiters: [Int: Waiter])
        case resolved
    }

    /// Whether a `run()` refreshes the holder.
    enum Lifecycle: Equatable {
        case idle
        case running
        /// Closed for good: no refresh, no run.
        case closed
    }

    /// The refresh loop's wake-up state.
    enum Wake {
        /// Nothing asked; the loop is not asleep.
        case quiet
        /// A manual refresh was asked for and not started yet.
        case requested
        /// The loop sleeps until its deadline or until woken.
        case sleeping(Waiter)
    }

    /// Side effects for the holder to perform.
    enum Action {
        /// Make this version live (performed before the lock is released, so that versions go live in the
        /// order they were loaded).
        case publish(Candidate)
        /// Resume these waiting tasks.
        case resume([Waiter])
        /// The open resolved for the first time: tell the runtime (deferred pushes may run).
        case openFinished
        /// Replay the pushes that waited for a container, if due.
        case replayDeferred
    }

    /// What the refresh loop does next.
    enum LoopStep: Equatable {
        /// Stop: closed.
        case stop
        /// Fetch from the network now.
        case refresh
        /// Sleep until this elapsed time (`nil`: until woken).
        case sleep(until: Duration?)
    }

    private(set) var resolution = Resolution.pending(waiters: [:])
    private(set) var lifecycle = Lifecycle.idle
    private(set) var wake = Wake.quiet
    /// Whether a task has taken on the initial load (default, saved, first network fetch).
    private(set) var initialLoadClaimed = false
    private var nextWaiterID = 0

    /// The bundled default version.
    var defaultCandidate: Candidate?
    /// The latest version loaded (saved or network).
    private(set) var loaded: Candidate?
    /// The entity tag of ``loaded``.
    private(set) var etag: String?
    /// When the last network refresh started (elapsed time of the holder's clock).
    private(set) var lastNetworkAttempt: Duration?
    /// When the next network refresh is due (elapsed time of the holder's clock).
    var nextRefresh: Duration?
    /// Why the last network refresh failed.
    var lastFailure: RefreshFailure?

    /// The best version so far: the loaded one, else the default.
    var best: Candidate? { loaded ?? defaultCandidate }

    var isResolved: Bool {
        if case .resolved = resolution { return true }
        return false
    }

    var isClosed: Bool { lifecycle == .closed }

    // MARK: Opening

    /// Claims the initial load; `true` for the first caller only.
    mutating func claimInitialLoad() -> Bool {
        defer { initialLoadClaimed = true }
        return !initialLoadClaimed
    }

    /// A new waiter id for ``wait(_:id:)``, or `nil` when the open is already resolved.
    mutating func makeWaiterID() -> Int? {
        guard case .pending = resolution else { return nil }
        nextWaiterID += 1
        return nextWaiterID
    }

    /// A task waits for the resolution; `false` when it need not (resolved already): resume it at once.
    mutating func wait(_ waiter: Waiter, id: Int) -> Bool {
        guard case .pending(var waiters) = resolution else { return false }
        waiters[id] = waiter
        resolution = .pending(waiters: waiters)
        return true
    }

    /// A waiting task stopped waiting (cancelled): it is returned to be resumed.
    mutating func stopWaiting(id: Int) -> Waiter? {
        guard case .pending(var waiters) = resolution, let waiter = waiters.removeValue(forKey: id) else {
            return nil
        }
        resolution = .pending(waiters: waiters)
        return waiter
    }

    /// Resolves the open: the best version goes live and the waiters are resumed (the first time only);
    /// deferred pushes are replayed if due.
    mutating func resolve() -> [Action] {
        guard case .pending(let waiters) = resolution else { return [.replayDeferred] }
        resolution = .resolved
        var actions: [Action] = []
        if let best { actions.append(.publish(best)) }
        actions.append(.resume(Array(waiters.values)))
        actions.append(.openFinished)
        actions.append(.replayDeferred)
        return actions
    }

    /// A version was loaded: it goes live at once once the open is resolved.
    mutating func offer(_ candidate: Candidate, etag: String?) -> [Action] {
        loaded = candidate
        self.etag = etag
        return isResolved ? [.publish(candidate), .replayDeferred] : [.replayDeferred]
    }

    /// Changes the loaded version in place (a `304 Not Modified` refreshes its origin and time); `false`
    /// when nothing is loaded.
    mutating func updateLoaded(_ change: (inout Candidate) -> Void) -> Bool {
        guard var candidate = loaded else { return false }
        change(&candidate)
        loaded = candidate
        return true
    }

    // MARK: Running

    /// A `run()` starts; `false` when another one runs or the holder is closed (it returns at once).
    mutating func startRun() -> Bool {
        guard lifecycle == .idle else { return false }
        lifecycle = .running
        return true
    }

    /// The `run()` ended.
    mutating func endRun() {
        if lifecycle == .running { lifecycle = .idle }
    }

    /// Closes the holder for good: the loop is woken to stop, and the open resolves.
    mutating func close() -> [Action] {
        lifecycle = .closed
        var actions: [Action] = []
        if case .sleeping(let waiter) = wake { actions.append(.resume([waiter])) }
        wake = .quiet
        return actions + resolve()
    }

    // MARK: Refreshing

    /// Asks for a network refresh at elapsed time `now`; refused when closed, already asked, or (without
    /// `force`) when the last one started less than `minimumInterval` ago.
    mutating func requestRefresh(now: Duration, minimumInterval: Duration, force: Bool) -> (
        accepted: Bool, actions: [Action]
    ) {
        if lifecycle == .closed { return (false, []) }
        if case .requested = wake { return (false, []) }
        if !force, let last = lastNetworkAttempt, now - last < minimumInterval { return (false, []) }
        var actions: [Action] = []
        if case .sleeping(let waiter) = wake { actions.append(.resume([waiter])) }
        wake = .requested
        return (true, actions)
    }

    /// The refresh loop's next step at elapsed time `now`.
    func loopStep(now: Duration) -> LoopStep {
        if lifecycle == .closed { return .stop }
        if case .requested = wake { return .refresh }
        if let nextRefresh, now >= nextRefresh { return .refresh }
        return .sleep(until: nextRefresh)
    }

    /// The loop goes to sleep; `false` when it must not (a refresh was asked for, or closed): resume it.
    mutating func sleep(_ waiter: Waiter) -> Bool {
        guard lifecycle != .closed, case .quiet = wake else { return false }
        wake = .sleeping(waiter)
        return true
    }

    /// The loop's sleep ended on its own (deadline, cancellation): the waiter to resume, if still asleep.
    mutating func endSleep() -> Waiter? {
        guard case .sleeping(let waiter) = wake else { return nil }
        wake = .quiet
        return waiter
    }

    /// A network refresh starts at `now`; returns the entity tag to send (only when a version is loaded).
    mutating func startNetworkRefresh(now: Duration) -> String? {
        if case .requested = wake { wake = .quiet }
        lastNetworkAttempt = now
        return loaded == nil ? nil : etag
    }
}

extension ContainerHolderMachine: Sendable where Candidate: Sendable, Waiter: Sendable {}
extension ContainerHolderMachine.Resolution: Sendable where Candidate: Sendable, Waiter: Sendable {}
extension ContainerHolderMachine.Wake: Sendable where Candidate: Sendable, Waiter: Sendable {}
extension ContainerHolderMachine.Action: Sendable where Candidate: Sendable, Waiter: Sendable {}
