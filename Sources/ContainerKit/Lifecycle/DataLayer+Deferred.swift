extension DataLayer {
    /// The data layer whose queued pushes the current thread is replaying (delayed initialization): its
    /// pushes, and the pushes its tag handlers make meanwhile, go straight through.
    @TaskLocal static var replayingSession: ObjectIdentifier?

    /// Queues `message` until a container is live, if the tag manager is waiting for one; `nil` when the push
    /// should be processed now. Only called after the one-load check ``LifecycleState/mayDefer``.
    func deferUntilAvailable(_ message: ValueMap) -> PushResult? {
        tagManager.lifecycle.deferral.hold(message, for: self)
    }
}
