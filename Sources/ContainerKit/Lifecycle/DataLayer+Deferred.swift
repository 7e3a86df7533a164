import Foundation

extension DataLayer {
    /// The data layer whose queued pushes the current thread is replaying (delayed initialization): its
    /// pushes, and the pushes its tag handlers make meanwhile, go straight through.
    @TaskLocal static var replayingSession: ObjectIdentifier?

    /// Queues `message` until a container is live, if the tag manager is waiting for one; `nil` when the push
    /// should be processed now. Only called after the one-load check ``LifecycleState/mayDefer``.
    ///
    /// A queued push happened when it arrived: it is replayed with its `eventTime` (seconds since 1970), or the
    /// lifecycle's wall-clock time now when it has none, so that what its handlers record is not stamped with
    /// the time of the replay.
    func deferUntilAvailable(_ message: ValueMap, eventTime: Double?) -> PushResult? {
        tagManager.lifecycle.deferral.hold(message, for: self) {
            eventTime ?? tagManager.lifecycleConfiguration.time.wallNow.timeIntervalSince1970
        }
    }
}
