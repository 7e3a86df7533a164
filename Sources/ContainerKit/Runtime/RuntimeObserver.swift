/// Something that happened inside ContainerKit that a service may count: the hooks for metrics.
///
/// Events, tags and records are reported as they happen, on the thread that made them happen (a push's
/// thread, a queue's writer or delivery loop), so an observer must be cheap and thread-safe: increment a
/// counter, set a gauge. The example service maps these onto swift-metrics.
public enum RuntimeEvent: Sendable, Hashable {
    /// One event was evaluated in one container.
    case eventEvaluated(containerID: String, eventName: String?)
    /// A tag fired: its status says whether it ran (`ok`), failed, was dropped or had no handler.
    case tagFired(containerID: String, tagID: Int?, classPath: String?, status: FiredTag.Status)
    /// A front took records for delivery (they are in memory, or on their way to disk).
    case recordsEnqueued(count: Int)
    /// Records were written and synced by a durable queue.
    case recordsDurable(count: Int)
    /// A destination accepted records.
    case recordsDelivered(count: Int)
    /// A destination permanently refused records (they are dropped), or a front refused to take them.
    case recordsRejected(count: Int, reason: String)
    /// What a front holds that is not delivered yet: records (for a durable queue, those this process made
    /// durable; records left by an earlier run show only in the bytes) and bytes on disk (0 in memory).
    case queueBacklog(records: Int, bytes: Int)
    /// A delivery attempt failed and will be retried.
    case deliveryFailed(message: String)
}

/// Receives ``RuntimeEvent``s: give one to ``TagManager/init(logger:defaultContext:observer:)`` for events
/// and tags, and to the queue fronts' configurations for records.
///
/// ```swift
/// let fired = Atomic<Int>(0)
/// let observer = ClosureRuntimeObserver { event in
///     if case .tagFired = event { fired.add(1, ordering: .relaxed) }
/// }
/// let manager = TagManager(observer: observer)
/// ```
public protocol RuntimeObserver: Sendable {
    /// Called for every event; must return quickly and be safe from any thread.
    func observe(_ event: RuntimeEvent)
}

/// Adapts a closure to ``RuntimeObserver``.
public struct ClosureRuntimeObserver: RuntimeObserver {
    private let body: @Sendable (RuntimeEvent) -> Void
    /// Creates an observer that calls `body` for every event.
    public init(_ body: @escaping @Sendable (RuntimeEvent) -> Void) { self.body = body }
    public func observe(_ event: RuntimeEvent) { body(event) }
}
