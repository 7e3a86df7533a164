/// Whether pushes made before any container is live wait for one (Braze's "delayed initialization").
///
/// While a ``TagManager`` has no live container and either an ``TagManager/open(id:openType:timeout:callback:)``
/// is in progress or ``isEnabled`` is set, every push is queued per data layer (and reported with
/// ``PushResult/deferred``). When a container goes live, each data layer replays its queue in order.
/// A full queue drops its oldest push, with a warning.
public struct DelayedInitialization: Sendable, Hashable {
    /// Queue pushes whenever no container is live, even when no open is in progress (default `false`:
    /// queue only while an open is in progress).
    public var isEnabled: Bool
    /// The most pushes one data layer queues (default 1,000).
    public var maximumQueuedPushes: Int

    /// Creates the setting.
    public init(isEnabled: Bool = false, maximumQueuedPushes: Int = 1000) {
        self.isEnabled = isEnabled
        self.maximumQueuedPushes = max(1, maximumQueuedPushes)
    }
}
