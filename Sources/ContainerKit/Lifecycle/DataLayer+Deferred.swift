import Foundation

extension DataLayer {
    /// The data layer whose queued pushes the current thread is replaying (delayed initialization): its
    /// pushes, and the pushes its tag handlers make meanwhile, go straight through.
    @TaskLocal static var replayingSession: ObjectIdentifier?

    /// Queues `pending` until a container is live, if the tag manager is waiting for one; `nil` when the push
    /// should be processed now. Only called after the one-load check ``LifecycleState/mayDefer``.
    ///
    /// A queued push is replayed with its event ID (checked then: a retry queued behind its original is a
    /// duplicate of it) and the time it happened: its `eventTime`, or the lifecycle's wall-clock time when it
    /// arrived, so that what its handlers record is not stamped with the time of the replay.
    /// (Only pushes made while a container is awaited come here: the clock is read for them alone.)
    func deferUntilAvailable(_ pending: borrowing Pending) -> PushResult? {
        let held = DeferredPushes.Held(
            message: pending.fullMessage,
            eventID: pending.eventID,
            eventIDHash: pending.eventIDHash,
            eventTime: pending.eventTime ?? tagManager.lifecycleConfiguration.time.wallNow.timeIntervalSince1970
        )
        return tagManager.lifecycle.deferral.hold(held, for: self)
    }
}
