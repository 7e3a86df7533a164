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
    let preview = Mutex<Preview?>(nil)
    let deferral = DeferredPushes()
    let debugMode = Atomic<Bool>(false)

    /// Whether a push must take the slow path that may queue it: one atomic load.
    var mayDefer: Bool { deferral.mayDefer.load(ordering: .acquiring) }

    /// Makes `container` live unless its ID is in preview, in which case it becomes the version that
    /// exiting preview restores.
    func publish(_ container: Container, on tagManager: TagManager?) {
        guard let tagManager else { return }
        preview.withLock { preview in
            if preview?.containerID == container.id {
                preview?.live = container
            } else {
                tagManager.add(container)
            }
        }
    }

    func removeHolder(_ holder: ContainerHolder) {
        holders.withLock { holders in
            if holders[holder.containerID] === holder { holders[holder.containerID] = nil }
        }
    }
}
