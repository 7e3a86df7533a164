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
        logger: any Logger = StandardErrorLogger(),
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
    /// The returned container is live in this tag manager; loading goes on in the background and a better
    /// version replaces it atomically, then the container is refreshed every 12 hours (1 hour after a
    /// failure). Opening an ID that is already open returns its current state (after waiting as above) and
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
        if created {
            lifecycle.deferral.openStarted(self)
            holder.start()
        }
        await holder.waitUntilResolved(timeout: timeout)
        return holder.opened
    }

    /// Opens container `id` like ``open(id:openType:timeout:callback:)`` and calls `notifier` (on another
    /// thread) with the result, instead of suspending the caller.
    public func open(
        id: String,
        openType: OpenType = .preferNonDefault,
        timeout: TimeInterval = TagManager.defaultOpenTimeout,
        callback: (any ContainerCallback)? = nil,
        notifier: @escaping @Sendable (Result<OpenedContainer, ContainerError>) -> Void
    ) {
        Task {
            do throws(ContainerError) {
                notifier(.success(try await open(id: id, openType: openType, timeout: timeout, callback: callback)))
            } catch {
                notifier(.failure(error))
            }
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

    /// Whether data layers created from now on record an ``EvaluationTrace`` for every event; entering
    /// preview with `gtm_debug=x` sets it, exiting preview clears it.
    public var isDebugMode: Bool {
        get { lifecycle.debugMode.load(ordering: .relaxed) }
        set { lifecycle.debugMode.store(newValue, ordering: .relaxed) }
    }
}
