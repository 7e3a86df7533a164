import Synchronization

/// A ``TagManager``'s lifecycle and preview state: its configuration, the opened containers, the container
/// in preview, the pushes waiting for a container, and the debug flag.
///
/// Lock order (outer first): a holder's state, ``preview``, the tag manager's live list, ``deferral``.
final class LifecycleState: Sendable {
    /// The container in preview and the live version it replaced.
    struct Preview: Sendable {
        var containerID: String
        var live: Container?
        var debug: Bool
    }

    let configuration = Mutex(LifecycleConfiguration())
    let holders = Mutex<[String: ContainerHolder]>([:])
    /// The file watches ``TagManager/run()`` runs.
    let watchers = Mutex<[ContainerFileWatcher]>([])
    let preview = Mutex<Preview?>(nil)
    let deferral = DeferredPushes()
    let debugMode = Atomic<Bool>(false)
    /// The work queue of the running ``TagManager/run()``, if one is running.
    let runner = Mutex<AsyncStream<LifecycleWork>.Continuation?>(nil)
    /// ``TagManager/gracefulShutdown()`` was called and the ``TagManager/run()`` it ends has not returned yet
    /// (set under ``runner``'s lock).
    let shutdownRequested = Atomic<Bool>(false)
    /// The ``TagManager/waitUntilLive(id:timeout:)`` calls waiting, by container ID and waiter number.
    let liveWaiters = Mutex<(next: Int, waiting: [String: [Int: CheckedContinuation<Void, Never>]])>((0, [:]))

    /// Whether a push must take the slow path that may queue it: one atomic load.
    var mayDefer: Bool { deferral.mayDefer.load(ordering: .acquiring) }

    /// Makes `container` live unless its ID is in preview, in which case it becomes the version that
    /// exiting preview restores.
    ///
    /// Called with a holder's state locked: the pushes that waited for a container are not replayed here,
    /// but by the caller once it holds no lock (``DeferredPushes/replayIfDue(_:)``).
    func publish(_ container: Container, on tagManager: TagManager?) {
        guard let tagManager else { return }
        Self.$publishing.withValue(true) {
            preview.withLock { preview in
                if preview?.containerID == container.id {
                    preview?.live = container
                } else {
                    tagManager.add(container)
                }
            }
        }
    }

    /// True while the lifecycle makes a container live with a lock held, so that ``TagManager/add(_:)``
    /// leaves the replay of deferred pushes to its caller.
    @TaskLocal static var publishing = false

    /// Hands `work` to the running ``TagManager/run()``; returns `false` when none is running.
    func submit(_ work: LifecycleWork) -> Bool {
        runner.withLock { runner -> Bool in
            guard let runner else { return false }
            if case .enqueued = runner.yield(work) { return true }
            return false
        }
    }

    /// Wakes the readiness waits for container `id`, which just went live.
    func wentLive(_ id: String) {
        let waiters = liveWaiters.withLock { $0.waiting.removeValue(forKey: id) }
        for waiter in waiters?.values ?? [:].values { waiter.resume() }
    }

    func removeHolder(_ holder: ContainerHolder) {
        holders.withLock { holders in
            if holders[holder.containerID] === holder { holders[holder.containerID] = nil }
        }
    }
}

/// A piece of long-lived work that ``TagManager/run()`` runs as a child task until it is cancelled.
struct LifecycleWork: Sendable {
    let run: @Sendable () async -> Void
}
