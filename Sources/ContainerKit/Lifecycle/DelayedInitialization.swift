/// Whether pushes made before any container is live wait for one (Braze's "delayed initialization").
///
/// While a ``TagManager`` has no live container and either an ``TagManager/open(id:openType:timeout:callback:)``
/// is in progress or ``isEnabled`` is set, every push is queued per data layer (and reported with
/// ``PushResult/deferred``). When a container goes live, each data layer replays its queue in order.
/// A full queue drops its oldest push, with a warning; beyond the cap across all data layers new pushes
/// are dropped.
public struct DelayedInitialization: Sendable, Hashable {
    /// Queue pushes whenever no container is live, even when no open is in progress (default `false`:
    /// queue only while an open is in progress).
    public var isEnabled: Bool
    /// The most pushes one data layer queues (default 1,000).
    public var maximumQueuedPushes: Int
    /// The most pushes queued across all data layers of one ``TagManager`` (default 100,000). A push
    /// beyond it is dropped: ``PushResult/dropped`` is set, the first drop of a waiting period is logged
    /// as a warning and the count at the replay.
    public var maximumTotalQueuedPushes: Int

    /// Creates the setting.
    public init(isEnabled: Bool = false, maximumQueuedPushes: Int = 1000, maximumTotalQueuedPushes: Int = 100_000) {
        self.isEnabled = isEnabled
        self.maximumQueuedPushes = max(1, maximumQueuedPushes)
        self.maximumTotalQueuedPushes = max(1, maximumTotalQueuedPushes)
    }
}
