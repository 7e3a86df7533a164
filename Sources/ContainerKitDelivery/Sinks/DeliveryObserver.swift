import ContainerKit

/// Something the delivery pipeline did with records that a service may count: the pipeline's hooks for
/// metrics, beside the runtime's ``RuntimeEvent``s.
///
/// Reported as it happens, on the thread that made it happen (a push's thread, a queue's writer or delivery
/// loop), so an observer must be cheap and thread-safe: increment a counter, set a gauge.
public enum DeliveryEvent: Sendable, Hashable {
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

/// Receives ``DeliveryEvent``s: give one to a pipeline's settings (``DeliverySettings/observer``). A
/// pipeline without one reports to its tag manager's ``RuntimeObserver`` when that is also a `DeliveryObserver`.
///
/// ```swift
/// let delivered = Atomic<Int>(0)
/// var settings = DeliverySettings()
/// settings.observer = ClosureDeliveryObserver { event in
///     if case .recordsDelivered(let count) = event { delivered.add(count, ordering: .relaxed) }
/// }
/// ```
public protocol DeliveryObserver: Sendable {
    /// Called for every event; must return quickly and be safe from any thread.
    func observe(_ event: DeliveryEvent)
}

/// Adapts a closure to ``DeliveryObserver``.
public struct ClosureDeliveryObserver: DeliveryObserver {
    private let body: @Sendable (DeliveryEvent) -> Void
    /// Creates an observer that calls `body` for every event.
    public init(_ body: @escaping @Sendable (DeliveryEvent) -> Void) { self.body = body }
    public func observe(_ event: DeliveryEvent) { body(event) }
}
