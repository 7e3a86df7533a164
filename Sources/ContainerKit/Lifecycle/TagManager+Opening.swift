import Foundation

extension TagManager {
    /// GTM's default open timeout: 2 seconds.
    public static let defaultOpenTimeout: TimeInterval = 2

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
    /// let opened = try await manager.open(id: "GTM-XXXX", openType: .preferFresh, timeout: 2)
    /// if opened.isDefault { print("serving the bundled default container for now") }
    /// ```
    /// - Parameters:
    ///   - id: the container ID, `GTM-XXXX`.
    ///   - openType: when to stop waiting (GTM's PreferNonDefault or PreferFresh).
    ///   - timeout: the longest wait, in seconds of the configured ``RefreshClock`` (default 2).
    ///   - callback: told when each saved and network refresh begins, succeeds or fails.
    /// - Throws: ``ContainerError`` with ``ContainerError/Code/invalidContainerID`` when `id` breaks the
    ///   `GTM-XXXX` pattern.
    public func open(
        id: String,
        openType: OpenType = .preferNonDefault,
        timeout: TimeInterval = TagManager.defaultOpenTimeout,
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
    /// (``watch(path:interval:)``) and preview fetches, each as a child task.
    ///
    /// On cancellation it drains: every child is cancelled (a network fetch in progress is abandoned —
    /// ``HTTPContainerSource`` cancels its request — and no refresh is recorded as failed), the pushes that
    /// wait for a container are replayed if one is live, and `run()` returns once the children have
    /// returned. Nothing waits on a timer during the drain.
    ///
    /// The method has the shape of swift-service-lifecycle's `Service`; a host package conforms with one
    /// line: `extension TagManager: @retroactive Service {}`.
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
        let holders = lifecycle.holders.withLock { Array($0.values) }
        await withTaskCancellationHandler {
            await withDiscardingTaskGroup { group in
                for holder in holders { group.addTask { await holder.run() } }
                for await work in stream { group.addTask { await work.run() } }
                group.cancelAll()
            }
        } onCancel: {
            continuation.finish()
        }
        lifecycle.runner.withLock { $0 = nil }
        lifecycle.deferral.replayIfDue(self)
    }

    /// Whether ``run()`` is running (for health checks, and for tests that start it in a task).
    public var isRunning: Bool { lifecycle.runner.withLock { $0 != nil } }

    /// Returns once container `id` is live (at once if it is), or throws when `timeout` seconds of the
    /// configured clock pass first. For readiness checks: `try await manager.waitUntilLive(id: "GTM-XXXX")`.
    /// - Returns: the live container.
    /// - Throws: ``ContainerFetchError`` with ``ContainerFetchError/Code/networkError`` (message
    ///   "… is not live after … seconds") at the timeout; `CancellationError` when the task is cancelled.
    @discardableResult
    public func waitUntilLive(id: String, timeout: TimeInterval) async throws -> Container {
        let clock = lifecycleConfiguration.clock
        let deadline = clock.now.addingTimeInterval(max(0, timeout))
        let waiterID = lifecycle.liveWaiters.withLock { waiters -> Int in
            defer { waiters.next += 1 }
            return waiters.next
        }
        let lifecycle = self.lifecycle
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await clock.sleep(until: deadline) }
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
        throw ContainerFetchError(.networkError, "'\(id)' is not live after \(timeout) seconds")
    }

    /// Opens container `id` like ``open(id:openType:timeout:callback:)`` and calls `notifier` with the
    /// result (GTM's callback shape; the caller's task does the work, so nothing outlives it).
    public func open(
        id: String,
        openType: OpenType = .preferNonDefault,
        timeout: TimeInterval = TagManager.defaultOpenTimeout,
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
