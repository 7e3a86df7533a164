import Foundation
import Synchronization

extension TagManager {
    /// GTM's default open timeout: 2 seconds.
    public static let defaultOpenTimeout: Duration = .seconds(2)

    /// Creates a runtime that opens containers as `lifecycle` describes.
    /// - Parameters:
    ///   - logger: where diagnostics go; by default warnings and errors to standard error.
    ///   - defaultContext: the client context of data layers created without one; by default
    ///     ``ClientContext/server``, which reports nothing about the machine this runs on.
    ///   - lifecycle: where containers come from and when they are refreshed.
    public convenience init(
        logger: any DiagnosticLogger = StandardErrorLogger(),
        defaultContext: ClientContext = .server,
        lifecycle: LifecycleConfiguration
    ) {
        self.init(logger: logger, defaultContext: defaultContext)
        lifecycleConfiguration = lifecycle
    }

    /// Where containers come from and when they are refreshed. A change applies to containers opened
    /// afterwards (``LifecycleConfiguration/delayedInitialization`` and ``LifecycleConfiguration/preview``
    /// apply at once).
    public var lifecycleConfiguration: LifecycleConfiguration {
        get { lifecycle.configuration.withLock { $0 } }
        set {
            lifecycle.configuration.withLock { $0 = newValue }
            lifecycle.deferral.configure(newValue.delayedInitialization, tagManager: self)
        }
    }

    /// Opens container `id`: loads the bundled default container, then the saved one, then the network
    /// version, and returns the best one available when `openType` is satisfied or `timeout` passes.
    ///
    /// The returned container is live in this tag manager. While ``run()`` runs, loading goes on there after
    /// `open` returns and a better version replaces it atomically, then the container is refreshed every
    /// 12 hours (1 hour after a failure). Without ``run()`` running, the loading happens in this call: what
    /// has not loaded when it returns is cancelled, and the network fetch is due at once when ``run()``
    /// starts. Opening an ID that is already open returns its current state (after waiting as above) and
    /// adds `callback`; `openType` then has no effect.
    ///
    /// ```swift
    /// let opened = try await manager.open(id: "GTM-XXXX", openType: .preferFresh, timeout: .seconds(2))
    /// if opened.isDefault { print("serving the bundled default container for now") }
    /// ```
    /// - Parameters:
    ///   - id: the container ID, `GTM-XXXX`.
    ///   - openType: when to stop waiting (GTM's PreferNonDefault or PreferFresh).
    ///   - timeout: the longest wait, on the configured ``LifecycleConfiguration/clock`` (default 2 seconds).
    ///   - callback: told when each saved and network refresh begins, succeeds or fails.
    /// - Throws: ``ContainerError`` with ``ContainerError/Code/invalidContainerID`` when `id` breaks the
    ///   `GTM-XXXX` pattern.
    public func open(
        id: String,
        openType: OpenType = .preferNonDefault,
        timeout: Duration = TagManager.defaultOpenTimeout,
        callback: (any ContainerCallback)? = nil
    ) async throws(ContainerError) -> OpenedContainer {
        guard ContainerLoader.isContainerID(id) else {
            throw ContainerError(.invalidContainerID, "'\(id)' is not a container id (GTM-XXXX)")
        }
        let configuration = lifecycleConfiguration
        let (holder, created) = lifecycle.holders.withLock { holders -> (ContainerHolder, Bool) in
            if let holder = holders[id] { return (holder, false) }
            let holder = ContainerHolder(id: id, openType: openType, tagManager: self, configuration: configuration)
            holders[id] = holder
            return (holder, true)
        }
        holder.addCallback(callback)
        if created { lifecycle.deferral.openStarted(self) }
        if created && lifecycle.submit(LifecycleWork(run: holder.run)) {
            await holder.waitUntilResolved(timeout: timeout)
        } else if lifecycle.runner.withLock({ $0 == nil }) {
            await holder.openWithoutRunner(timeout: timeout)
        } else {
            await holder.waitUntilResolved(timeout: timeout)
        }
        lifecycle.deferral.replayIfDue(self)
        return holder.opened
    }

    /// Runs the lifecycle's long-lived work until the calling task is cancelled: the loading and refresh
    /// schedule of every opened container (opened before or during the call), file watches
    /// (``watch(path:interval:containerID:callback:)``) and preview fetches, each as a child task.
    ///
    /// It ends on ``gracefulShutdown()`` or on the task's cancellation; either way every child is cancelled
    /// (a network fetch in progress is abandoned — ``HTTPContainerSource`` cancels its request — and no
    /// refresh is recorded as failed) and `run()` returns once the children have returned. After
    /// ``gracefulShutdown()`` the pushes that wait for a container are replayed first if one is live;
    /// cancelled, it stops at once (they stay queued: the next push replays them). Nothing waits on a timer.
    ///
    /// A ``Runnable``: a swift-service-lifecycle host bridges it like every other component (see
    /// ``Runnable``).
    ///
    /// - Throws: ``ContainerFetchError`` with ``ContainerFetchError/Code/notConfigured`` when another
    ///   `run()` of this tag manager is already running.
    public func run() async throws {
        let (stream, continuation) = AsyncStream.makeStream(of: LifecycleWork.self)
        let started = lifecycle.runner.withLock { runner -> Bool in
            guard runner == nil else { return false }
            runner = continuation
            return true
        }
        guard started else {
            throw ContainerFetchError(.notConfigured, "this tag manager's run() is already running")
        }
        // A graceful shutdown that came first: the run ends at once.
        if lifecycle.shutdownRequested.load(ordering: .acquiring) { continuation.finish() }
        let holders = lifecycle.holders.withLock { Array($0.values) }
        let watchers = lifecycle.watchers.withLock { $0 }
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for holder in holders { group.addTask { await holder.run() } }
                for watcher in watchers { group.addTask { try? await watcher.run() } }
                for await work in stream { group.addTask { await work.run() } }
                group.cancelAll()
            }
        } onCancel: {
            continuation.finish()
        }
        lifecycle.runner.withLock { $0 = nil }
        // The request is used up: a later run() runs until its own shutdown.
        let graceful = lifecycle.shutdownRequested.exchange(false, ordering: .acquiringAndReleasing)
        if graceful && !Task.isCancelled { lifecycle.deferral.replayIfDue(self) }
    }

    /// Ends ``run()`` gracefully: its children are cancelled, the pushes that wait for a container are
    /// replayed if one is live, and it returns. Safe to call at any time: before ``run()`` starts, that run
    /// returns at once.
    public func gracefulShutdown() {
        lifecycle.runner.withLock { runner in
            lifecycle.shutdownRequested.store(true, ordering: .releasing)
            runner?.finish()
        }
    }

    /// Loads the container in the file at `path`, makes it live, and keeps watching the file: ``run()``
    /// (now, if it is running, or when it starts) checks it every `interval` on the configured clock and
    /// replaces the live version when the file changes and loads; see ``ContainerFileWatcher``.
    ///
    /// ```swift
    /// try await manager.watch(path: "/etc/myservice/GTM-XXXX.json")
    /// ```
    /// - Parameters:
    ///   - path: the container file.
    ///   - interval: the time between two checks (default 2 seconds).
    ///   - containerID: the ID the file must hold; by default the one its first version holds.
    ///   - callback: told when each changed version is read and whether it loaded.
    /// - Returns: the watch (its ``ContainerFileWatcher/lastError`` says why a change was not taken).
    /// - Throws: ``ContainerFetchError`` when the file cannot be read or does not load now; nothing is
    ///   watched then.
    @discardableResult
    public func watch(
        path: String,
        interval: Duration = .seconds(2),
        containerID: String? = nil,
        callback: (any ContainerCallback)? = nil
    ) async throws(ContainerFetchError) -> ContainerFileWatcher {
        let watcher = ContainerFileWatcher(
            path: path,
            tagManager: self,
            interval: interval,
            containerID: containerID,
            callback: callback
        )
        try await watcher.check()
        lifecycle.watchers.withLock { $0.append(watcher) }
        _ = lifecycle.submit(LifecycleWork(run: { try? await watcher.run() }))
        return watcher
    }

    /// Whether ``run()`` is running (for health checks, and for tests that start it in a task).
    public var isRunning: Bool { lifecycle.runner.withLock { $0 != nil } }

    /// Returns once container `id` is live (at once if it is), or throws when `timeout` passes first on the
    /// configured clock. For readiness checks:
    /// `try await manager.waitUntilLive(id: "GTM-XXXX", timeout: .seconds(10))`.
    /// - Returns: the live container.
    /// - Throws: ``ContainerFetchError`` with ``ContainerFetchError/Code/networkError`` (message
    ///   "… is not live after …") at the timeout; `CancellationError` when the task is cancelled.
    @discardableResult
    public func waitUntilLive(id: String, timeout: Duration) async throws -> Container {
        let time = lifecycleConfiguration.time
        let deadline = time.now + max(.zero, timeout)
        let waiterID = lifecycle.liveWaiters.withLock { waiters -> Int in
            defer { waiters.next += 1 }
            return waiters.next
        }
        let lifecycle = self.lifecycle
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await time.sleepUntil(deadline) }
            group.addTask {
                await withTaskCancellationHandler {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        let resumeNow = lifecycle.liveWaiters.withLock { waiters -> Bool in
                            if self.container(id: id) != nil || Task.isCancelled { return true }
                            waiters.waiting[id, default: [:]][waiterID] = continuation
                            return false
                        }
                        if resumeNow { continuation.resume() }
                    }
                } onCancel: {
                    lifecycle.liveWaiters.withLock { $0.waiting[id]?.removeValue(forKey: waiterID) }?.resume()
                }
            }
            _ = await group.next()
            group.cancelAll()
        }
        if let container = container(id: id) { return container }
        try Task.checkCancellation()
        throw ContainerFetchError(.networkError, "'\(id)' is not live after \(timeout)")
    }

    /// Opens container `id` like ``open(id:openType:timeout:callback:)`` and calls `notifier` with the
    /// result (GTM's callback shape; the caller's task does the work, so nothing outlives it).
    public func open(
        id: String,
        openType: OpenType = .preferNonDefault,
        timeout: Duration = TagManager.defaultOpenTimeout,
        callback: (any ContainerCallback)? = nil,
        notifier: @escaping @Sendable (Result<OpenedContainer, ContainerError>) -> Void
    ) async {
        do throws(ContainerError) {
            notifier(.success(try await open(id: id, openType: openType, timeout: timeout, callback: callback)))
        } catch {
            notifier(.failure(error))
        }
    }

    /// The holder of opened container `id`: its state, manual refresh and close.
    public func containerHolder(id: String) -> ContainerHolder? {
        lifecycle.holders.withLock { $0[id] }
    }

    /// Asks for a network refresh of opened container `id` now; see ``ContainerHolder/refresh()``.
    /// - Returns: whether a refresh was started (at most one every 15 minutes).
    @discardableResult
    public func refresh(id: String) -> Bool {
        containerHolder(id: id)?.refresh() ?? false
    }

    /// Asks for a network refresh of opened container `id` now, for operators; with `force`, even within
    /// 15 minutes of the last one. See ``ContainerHolder/refresh(force:)``; the refresh runs in ``run()``.
    /// - Returns: whether a refresh was requested; `false` when `id` is not open.
    @discardableResult
    public func refresh(id: String, force: Bool) -> Bool {
        containerHolder(id: id)?.refresh(force: force) ?? false
    }

    /// Whether data layers created from now on record an ``EvaluationTrace`` for every event; entering
    /// preview with `gtm_debug=x` sets it, exiting preview clears it.
    public var isDebugMode: Bool {
        get { lifecycle.debugMode.load(ordering: .relaxed) }
        set { lifecycle.debugMode.store(newValue, ordering: .relaxed) }
    }
}
