public import Foundation
import Synchronization

/// One opened container ID: loads the default, saved and network versions, keeps the best one live in its
/// ``TagManager``, and refreshes it on schedule (12 hours after a success, 1 hour after a failure).
///
/// Get one from ``TagManager/containerHolder(id:)`` after ``TagManager/open(id:openType:timeout:callback:)``.
/// A refreshed version replaces the live one atomically with ``TagManager/add(_:)``: a push being
/// evaluated finishes on the version it started with, and a failed refresh keeps the current version.
public final class ContainerHolder: Sendable {
    /// The container ID.
    public let containerID: String
    /// How the first open waited.
    public let openType: OpenType

    /// A loaded version and where it came from.
    struct Candidate: Sendable {
        var container: Container
        var origin: ContainerOrigin
        var lastRefresh: Date?
    }

    /// The holder's state machine: a waiting task is resumed through its continuation.
    typealias Machine = ContainerHolderMachine<Candidate, CheckedContinuation<Void, Never>>

    private struct State {
        var machine = Machine()
        var callbacks: [any ContainerCallback] = []
    }

    private weak let tagManager: TagManager?
    private let configuration: LifecycleConfiguration
    private let logger: any DiagnosticLogger
    private let state = Mutex(State())

    init(id: String, openType: OpenType, tagManager: TagManager, configuration: LifecycleConfiguration) {
        self.containerID = id
        self.openType = openType
        self.tagManager = tagManager
        self.configuration = configuration
        self.logger = tagManager.logger
    }

    // MARK: Public state

    /// The best version so far and where it came from; `container` is `nil` until something loaded.
    public var opened: OpenedContainer {
        state.withLock { state in
            let best = state.machine.best
            return OpenedContainer(
                containerID: containerID,
                container: best?.container,
                origin: best?.origin,
                lastRefresh: best?.lastRefresh
            )
        }
    }

    /// When the next scheduled network refresh is due, as a wall-clock time (see
    /// ``LifecycleConfiguration/wallClockAnchor``); `nil` before the first one is scheduled, without a
    /// network source, and after ``close()``.
    public var nextRefresh: Date? {
        state.withLock { $0.machine.isClosed ? nil : $0.machine.nextRefresh }.map(configuration.time.wallTime(at:))
    }

    /// Why the last network refresh failed; `nil` after a success.
    public var lastFailure: RefreshFailure? { state.withLock { $0.machine.lastFailure } }

    /// Runs one transition of the machine under the lock and performs its actions: `publish` before the
    /// lock is released (versions go live in the order they were loaded), the rest after it.
    private func act<R: Sendable>(_ transition: (inout Machine) -> (R, [Machine.Action])) -> R {
        let (result, later) = state.withLock { state -> (R, [Machine.Action]) in
            let (result, actions) = transition(&state.machine)
            var later: [Machine.Action] = []
            for action in actions {
                if case .publish(let candidate) = action {
                    tagManager?.lifecycle.publish(candidate.container, on: tagManager)
                } else {
                    later.append(action)
                }
            }
            return (result, later)
        }
        for action in later {
            switch action {
            case .publish: break
            case .resume(let waiters): for waiter in waiters { waiter.resume() }
            case .openFinished: if let tagManager { tagManager.lifecycle.deferral.openFinished(tagManager) }
            case .replayDeferred: if let tagManager { tagManager.lifecycle.deferral.replayIfDue(tagManager) }
            }
        }
        return result
    }

    /// Asks for a network refresh now. Refused (`false`, logged at info level) when there is no network
    /// source, the holder is closed, a refresh is already requested, or the last network refresh started
    /// less than ``RefreshPolicy/minimumManualInterval`` (15 minutes) ago.
    ///
    /// The refresh itself is done by ``TagManager/run()``: without it running, the request waits.
    @discardableResult
    public func refresh() -> Bool { refresh(force: false) }

    /// Asks for a network refresh now; with `force`, even if the last one started less than
    /// ``RefreshPolicy/minimumManualInterval`` ago (for operators: a container was just published).
    /// Refused (`false`, logged at info level) when there is no network source, the holder is closed, a
    /// refresh is already requested, or (without `force`) the 15-minute limit applies.
    @discardableResult
    public func refresh(force: Bool) -> Bool {
        guard configuration.network != nil else { return false }
        let now = configuration.time.now
        let minimum = configuration.refreshPolicy.minimumManualInterval
        let accepted = act { machine in
            machine.requestRefresh(now: now, minimumInterval: minimum, force: force)
        }
        if accepted {
            logger.info("refresh requested", metadata: ["container": containerID, "forced": "\(force)"])
        } else {
            logger.info(
                "refresh ignored: at most one refresh per minimum interval",
                metadata: ["container": containerID, "minimum_interval": "\(minimum)"]
            )
        }
        return accepted
    }

    /// Stops refreshing. The live container stays live until ``TagManager/remove(id:)``; opening the ID
    /// again starts a new holder.
    public func close() {
        act { machine in ((), machine.close()) }
        tagManager?.lifecycle.removeHolder(self)
    }

    // MARK: Opening

    func addCallback(_ callback: (any ContainerCallback)?) {
        guard let callback else { return }
        state.withLock { $0.callbacks.append(callback) }
    }

    /// Loads the holder for an `open` made while no ``TagManager/run()`` is running: the initial load runs
    /// in the caller's task until the open is resolved or `timeout` passes; what is still loading then is
    /// cancelled and left to ``TagManager/run()`` (the network fetch becomes due at once).
    func openWithoutRunner(timeout: Duration) async {
        let claimed = claimInitialLoad()
        await withTaskGroup(of: Void.self) { group in
            if claimed { group.addTask { await self.initialLoad() } }
            group.addTask { await self.waitUntilResolved(timeout: timeout) }
            _ = await group.next()
            if isResolved {
                group.cancelAll()
            } else {
                _ = await group.next()
            }
        }
    }

    private var isResolved: Bool { state.withLock { $0.machine.isResolved } }

    private func claimInitialLoad() -> Bool { state.withLock { $0.machine.claimInitialLoad() } }

    /// Loads and refreshes this container until the calling task is cancelled or the holder is closed:
    /// the initial load (unless an `open` already did it), then the refresh schedule. Run by
    /// ``TagManager/run()``; returns at once if another `run()` is already running this holder.
    func run() async {
        guard state.withLock({ $0.machine.startRun() }) else { return }
        defer { state.withLock { $0.machine.endRun() } }
        if claimInitialLoad() { await initialLoad() }
        await refreshLoop()
    }

    /// Waits until the open is resolved (the open type is satisfied) or `timeout` passes on the clock,
    /// whichever comes first; a timeout resolves the open with the best version loaded so far.
    func waitUntilResolved(timeout: Duration) async {
        let waiterID = state.withLock { $0.machine.makeWaiterID() }
        guard let waiterID else { return }
        let time = configuration.time
        let deadline = time.now + max(.zero, timeout)
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await time.sleepUntil(deadline)
                if !Task.isCancelled { self.resolve() }
            }
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let waiting = self.state.withLock { state -> Bool in
                            !Task.isCancelled && state.machine.wait(continuation, id: waiterID)
                        }
                        if !waiting { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLock { $0.machine.stopWaiting(id: waiterID) }?.resume()
                }
            }
            _ = await group.next()
            group.cancelAll()
        }
    }

    /// Makes the best version loaded so far live and wakes the waiting opens. Only the first call does
    /// anything (but replay the deferred pushes that are due).
    private func resolve() { act { machine in ((), machine.resolve()) } }

    /// Records a newly loaded version; once the open is resolved it goes live at once.
    private func offer(_ candidate: Candidate, etag: String?) {
        act { machine in ((), machine.offer(candidate, etag: etag)) }
    }

    private func emit(_ event: ContainerRefreshEvent) {
        logger.debug("refresh", metadata: ["container": containerID, "event": "\(event)"])
        for callback in state.withLock({ $0.callbacks }) { callback.containerRefresh(containerID, event) }
    }

    // MARK: Loading

    /// Loads the default and saved versions, then the network one unless the saved one is fresh, and
    /// resolves the open. A network fetch cancelled on the way (an `open` without ``TagManager/run()`` that
    /// returned) leaves the refresh due at once.
    private func initialLoad() async {
        await loadDefault()
        let saved = await loadSaved()
        let now = configuration.time.now
        let wallNow = configuration.time.wallTime(at: now)
        let age = saved?.fetchedAt.map { Duration.seconds(wallNow.timeIntervalSince($0)) }
        let fresh = age.map { $0 >= .zero && $0 < configuration.refreshPolicy.afterSuccess } ?? false
        if fresh, let age, configuration.network != nil {
            // Scheduled before the open resolves, so that the open's caller sees it.
            let due = now + (configuration.refreshPolicy.afterSuccess - age)
            state.withLock { $0.machine.nextRefresh = due }
        }
        if saved != nil && (openType == .preferNonDefault || fresh) { resolve() }
        guard configuration.network != nil else {
            resolve()
            return
        }
        if fresh {
            // Refreshed on schedule by the refresh loop.
        } else if Task.isCancelled {
            state.withLock { $0.machine.nextRefresh = now }
        } else {
            await refreshFromNetwork()
        }
        resolve()
    }

    private func loadDefault() async {
        guard let source = configuration.defaultContainers else { return }
        do throws(ContainerFetchError) {
            guard case .container(let bytes, _) = try await source.fetch(id: containerID, ifNoneMatch: nil) else {
                return
            }
            let container = try configuration.compile(bytes, id: containerID, origin: "default")
            state.withLock {
                $0.machine.defaultCandidate = Candidate(container: container, origin: .default, lastRefresh: nil)
            }
        } catch  where error.code == .notFound {
            logger.info("no default container", metadata: ["container": containerID])
        } catch {
            logger.warning("the default container cannot be used", metadata: Self.metadata(containerID, error))
        }
    }

    private func loadSaved() async -> SavedContainer? {
        guard let store = configuration.savedContainers else { return nil }
        emit(.began(.saved))
        do throws(ContainerFetchError) {
            guard let saved = try await store.load(id: containerID) else {
                emit(.failed(.saved, .noSavedContainer))
                return nil
            }
            let container = try configuration.compile(saved.bytes, id: containerID, origin: "saved")
            offer(Candidate(container: container, origin: .saved, lastRefresh: saved.fetchedAt), etag: saved.etag)
            emit(.succeeded(.saved))
            return saved
        } catch {
            logger.warning("the saved container cannot be used", metadata: Self.metadata(containerID, error))
            emit(.failed(.saved, error.code == .invalidContainer ? .ioError : error.refreshFailure))
            return nil
        }
    }

    /// Refreshes on schedule until the task is cancelled or the holder closed. Between refreshes it waits
    /// on the clock for ``nextRefresh``, or (with none scheduled) until a manual refresh wakes it.
    private func refreshLoop() async {
        while true {
            if Task.isCancelled || tagManager == nil || configuration.network == nil { return }
            let now = configuration.time.now
            switch state.withLock({ $0.machine.loopStep(now: now) }) {
            case .stop:
                return
            case .refresh:
                await refreshFromNetwork()
            case .sleep(let until):
                await waitForWake(until: until)
            }
        }
    }

    /// Returns at `deadline` (never, if `nil`), when ``refresh(force:)`` or ``close()`` wakes the loop, or
    /// when the task is cancelled.
    private func waitForWake(until deadline: Duration?) async {
        let time = configuration.time
        await withTaskGroup(of: Void.self) { group in
            if let deadline { group.addTask { await time.sleepUntil(deadline) } }
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let sleeping = self.state.withLock { state -> Bool in
                            !Task.isCancelled && state.machine.sleep(continuation)
                        }
                        if !sleeping { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLock { $0.machine.endSleep() }?.resume()
                }
            }
            _ = await group.next()
            group.cancelAll()
        }
    }

    /// Fetches the container from the network source, offers it, saves it, and schedules the next refresh.
    private func refreshFromNetwork() async {
        guard let network = configuration.network else { return }
        let time = configuration.time
        let started = time.now
        let etag = state.withLock { $0.machine.startNetworkRefresh(now: started) }
        emit(.began(.network))
        do throws(ContainerFetchError) {
            switch try await network.fetch(id: containerID, ifNoneMatch: etag) {
            case .container(let bytes, let newETag):
                let container = try configuration.compile(bytes, id: containerID, origin: "network")
                let fetchedAt = time.wallNow
                offer(Candidate(container: container, origin: .network, lastRefresh: fetchedAt), etag: newETag)
                await save(bytes, etag: newETag, fetchedAt: fetchedAt)
            case .notModified:
                let fetchedAt = time.wallNow
                let cached = state.withLock { state -> Bool in
                    state.machine.updateLoaded { loaded in
                        loaded.origin = .network
                        loaded.lastRefresh = fetchedAt
                    }
                }
                guard cached else {
                    throw ContainerFetchError(.badResponse, "'\(containerID)' is not modified, but nothing is cached")
                }
                await touch(fetchedAt: fetchedAt)
            }
            let due = time.now + configuration.refreshPolicy.afterSuccess
            state.withLock { state in
                state.machine.nextRefresh = due
                state.machine.lastFailure = nil
            }
            emit(.succeeded(.network))
        } catch  where Task.isCancelled {
            state.withLock { $0.machine.nextRefresh = time.now }
            logger.info(
                "refreshing from the network was cancelled; it is due again",
                metadata: ["container": containerID]
            )
        } catch {
            let due = time.now + configuration.refreshPolicy.afterFailure
            state.withLock { state in
                state.machine.nextRefresh = due
                state.machine.lastFailure = error.refreshFailure
            }
            logger.warning("refreshing from the network failed", metadata: Self.metadata(containerID, error))
            emit(.failed(.network, error.refreshFailure))
        }
    }

    private func save(_ bytes: [UInt8], etag: String?, fetchedAt: Date) async {
        guard let store = configuration.savedContainers else { return }
        do throws(ContainerFetchError) {
            try await store.save(id: containerID, bytes: bytes, etag: etag, fetchedAt: fetchedAt)
        } catch {
            logger.warning("cannot save the container", metadata: Self.metadata(containerID, error))
        }
    }

    private func touch(fetchedAt: Date) async {
        guard let store = configuration.savedContainers else { return }
        do throws(ContainerFetchError) {
            try await store.touch(id: containerID, fetchedAt: fetchedAt)
        } catch {
            logger.warning("cannot update the saved container", metadata: Self.metadata(containerID, error))
        }
    }

    /// The log metadata of a failure concerning `containerID`.
    private static func metadata(_ containerID: String, _ error: ContainerFetchError) -> LogMetadata {
        ["container": containerID, "code": error.code.rawValue, "error": error.message]
    }
}
