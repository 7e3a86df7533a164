/// Something that happened inside the runtime that a service may count: the hooks for metrics.
///
/// Events and tags are reported as they happen, on the thread that made them happen (a push's thread), so an
/// observer must be cheap and thread-safe: increment a counter, set a gauge. What the delivery pipeline does
/// with records is reported separately (`DeliveryEvent` in `ContainerKitDelivery`); an observer that is also
/// a `DeliveryObserver` receives those too from the queues whose provider is registered on its tag manager.
/// The example service maps both onto swift-metrics.
public enum RuntimeEvent: Sendable, Hashable {
    /// One event was evaluated in one container.
    case eventEvaluated(containerID: String, eventName: String?)
    /// A tag fired: its status says whether it ran (`ok`), failed, was dropped, had no handler or was blocked by
    /// consent. `tagIndex` is the tag's index in the compiled container (see ``Container/tags``).
    case tagFired(containerID: String, tagIndex: Int, tagID: Int?, classPath: String?, status: FiredTag.Status)
    /// A passing blocking trigger (exception) removed a tag from the event: reported once per tag and evaluated
    /// event, as the blocking trigger passes (before the event's tags fire). Nothing is reported for the tags that
    /// no trigger added: a tag that neither fired nor was blocked in an ``eventEvaluated(containerID:eventName:)``
    /// of its container did not fire.
    case tagBlocked(containerID: String, tagIndex: Int, tagID: Int?)
}

/// Receives ``RuntimeEvent``s: give one to ``TagManager/init(logger:defaultContext:observer:)`` for events
/// and tags (the queue fronts take a `DeliveryObserver` for records).
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
