import Foundation
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

    private struct State {
        var defaultCandidate: Candidate?
        var loaded: Candidate?
        var etag: String?
        var resolved = false
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiterID = 0
        var callbacks: [any ContainerCallback] = []
        /// When the last network refresh started, as elapsed time of the configured clock.
        var lastNetworkAttempt: Duration?
        /// When the next network refresh is due, as elapsed time of the configured clock.
        var nextRefresh: Duration?
        var lastFailure: RefreshFailure?
        var manualRequested = false
        /// The refresh loop waiting for its next deadline; resumed early by a manual refresh or `close()`.
        var wake: CheckedContinuation<Void, Never>?
        /// Whether the initial load (default, saved, first network fetch) has been claimed by a task.
        var initialLoadClaimed = false
        /// Whether a ``ContainerHolder/run()`` is running for this holder.
        var running = false
        var closed = false
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
            let best = state.loaded ?? state.defaultCandidate
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
        state.withLock { $0.closed ? nil : $0.nextRefresh }.map(configuration.time.wallTime(at:))
    }

    /// Why the last network refresh failed; `nil` after a success.
    public var lastFailure: RefreshFailure? { state.withLock { $0.lastFailure } }

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
        let (accepted, wake) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            if state.closed || state.manualRequested { return (false, nil) }
            if !force, let last = state.lastNetworkAttempt, now - last < minimum {
                return (false, nil)
            }
            state.manualRequested = true
            defer { state.wake = nil }
            return (true, state.wake)
        }
        if accepted {
            wake?.resume()
            logger.info("refresh of '\(containerID)' requested\(force ? " (forced)" : "")")
        } else {
            logger.info("refresh of '\(containerID)' ignored: at most one refresh every \(minimum)")
        }
        return accepted
    }

    /// Stops refreshing. The live container stays live until ``TagManager/remove(id:)``; opening the ID
    /// again starts a new holder.
    public func close() {
        let wake = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closed = true
            defer { state.wake = nil }
            return state.wake
        }
        wake?.resume()
        resolve()
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

    private var isResolved: Bool { state.withLock { $0.resolved } }

    private func claimInitialLoad() -> Bool {
        state.withLock { state -> Bool in
            defer { state.initialLoadClaimed = true }
            return !state.initialLoadClaimed
        }
    }

    /// Loads and refreshes this container until the calling task is cancelled or the holder is closed:
    /// the initial load (unless an `open` already did it), then the refresh schedule. Run by
    /// ``TagManager/run()``; returns at once if another `run()` is already running this holder.
    func run() async {
        let first = state.withLock { state -> Bool in
            defer { state.running = true }
            return !state.running
        }
        guard first else { return }
        defer { state.withLock { $0.running = false } }
        if claimInitialLoad() { await initialLoad() }
        await refreshLoop()
    }

    /// Waits until the open is resolved (the open type is satisfied) or `timeout` passes on the clock,
    /// whichever comes first; a timeout resolves the open with the best version loaded so far.
    func waitUntilResolved(timeout: Duration) async {
        let waiterID = state.withLock { state -> Int? in
            guard !state.resolved else { return nil }
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
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
                        let resumeNow = self.state.withLock { state -> Bool in
                            if state.resolved || Task.isCancelled { return true }
                            state.waiters[waiterID] = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLock { $0.waiters.removeValue(forKey: waiterID) }?.resume()
                }
            }
            _ = await group.next()
            group.cancelAll()
        }
    }

    /// Makes the best version loaded so far live and wakes the waiting opens. Only the first call does
    /// anything.
    private func resolve() {
        let (waiters, first) = state.withLock { state -> ([CheckedContinuation<Void, Never>], Bool) in
            guard !state.resolved else { return ([], false) }
            state.resolved = true
            if let best = state.loaded ?? state.defaultCandidate { publish(best.container) }
            defer { state.waiters.removeAll() }
            return (Array(state.waiters.values), true)
        }
        for waiter in waiters { waiter.resume() }
        if first, let tagManager { tagManager.lifecycle.deferral.openFinished(tagManager) }
        replayDeferredPushes()
    }

    /// Replays the pushes that waited for a container, in this task, now that no lock is held.
    private func replayDeferredPushes() {
        if let tagManager { tagManager.lifecycle.deferral.replayIfDue(tagManager) }
    }

    /// Must be called with the state locked, so that versions go live in the order they were loaded.
    private func publish(_ container: Container) {
        tagManager?.lifecycle.publish(container, on: tagManager)
    }

    /// Records a newly loaded version; once the open is resolved it goes live at once.
    private func offer(_ candidate: Candidate, etag: String?) {
        state.withLock { state in
            state.loaded = candidate
            state.etag = etag
            if state.resolved { publish(candidate.container) }
        }
        replayDeferredPushes()
    }

    private func emit(_ event: ContainerRefreshEvent) {
        logger.debug("\(containerID): refresh \(event)")
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
            state.withLock { $0.nextRefresh = due }
        }
        if saved != nil && (openType == .preferNonDefault || fresh) { resolve() }
        guard configuration.network != nil else {
            resolve()
            return
        }
        if fresh {
            // Refreshed on schedule by the refresh loop.
        } else if Task.isCancelled {
            state.withLock { $0.nextRefresh = now }
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
            state.withLock { $0.defaultCandidate = Candidate(container: container, origin: .default, lastRefresh: nil) }
        } catch  where error.code == .notFound {
            logger.info("no default container for '\(containerID)'")
        } catch {
            logger.warning("the default container '\(containerID)' cannot be used: \(error.message)")
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
            logger.warning("the saved container '\(containerID)' cannot be used: \(error.message)")
            emit(.failed(.saved, error.code == .invalidContainer ? .ioError : error.refreshFailure))
            return nil
        }
    }

    /// Refreshes on schedule until the task is cancelled or the holder closed. Between refreshes it waits
    /// on the clock for ``nextRefresh``, or (with none scheduled) until a manual refresh wakes it.
    private func refreshLoop() async {
        while true {
            let (target, manual, closed) = state.withLock { ($0.nextRefresh, $0.manualRequested, $0.closed) }
            if closed || Task.isCancelled || tagManager == nil || configuration.network == nil { return }
            if !manual {
                if let target, configuration.time.now >= target {
                    await refreshFromNetwork()
                } else {
                    await waitForWake(until: target)
                }
                continue
            }
            await refreshFromNetwork()
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
                        let resumeNow = self.state.withLock { state -> Bool in
                            if state.manualRequested || state.closed || Task.isCancelled { return true }
                            state.wake = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    self.state.withLock { state -> CheckedContinuation<Void, Never>? in
                        defer { state.wake = nil }
                        return state.wake
                    }?.resume()
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
        let etag = state.withLock { state -> String? in
            state.manualRequested = false
            state.lastNetworkAttempt = time.now
            return state.loaded == nil ? nil : state.etag
        }
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
                    guard state.loaded != nil else { return false }
                    state.loaded?.origin = .network
                    state.loaded?.lastRefresh = fetchedAt
                    return true
                }
                guard cached else {
                    throw ContainerFetchError(.badResponse, "'\(containerID)' is not modified, but nothing is cached")
                }
                await touch(fetchedAt: fetchedAt)
            }
            let due = time.now + configuration.refreshPolicy.afterSuccess
            state.withLock { state in
                state.nextRefresh = due
                state.lastFailure = nil
            }
            emit(.succeeded(.network))
        } catch  where Task.isCancelled {
            state.withLock { $0.nextRefresh = time.now }
            logger.info("refreshing '\(containerID)' from the network was cancelled; it is due again")
        } catch {
            let due = time.now + configuration.refreshPolicy.afterFailure
            state.withLock { state in
                state.nextRefresh = due
                state.lastFailure = error.refreshFailure
            }
            logger.warning("refreshing '\(containerID)' from the network failed: \(error.message)")
            emit(.failed(.network, error.refreshFailure))
        }
    }

    private func save(_ bytes: [UInt8], etag: String?, fetchedAt: Date) async {
        guard let store = configuration.savedContainers else { return }
        do throws(ContainerFetchError) {
            try await store.save(id: containerID, bytes: bytes, etag: etag, fetchedAt: fetchedAt)
        } catch {
            logger.warning("cannot save the container '\(containerID)': \(error.message)")
        }
    }

    private func touch(fetchedAt: Date) async {
        guard let store = configuration.savedContainers else { return }
        do throws(ContainerFetchError) {
            try await store.touch(id: containerID, fetchedAt: fetchedAt)
        } catch {
            logger.warning("cannot update the saved container '\(containerID)': \(error.message)")
        }
    }
}
