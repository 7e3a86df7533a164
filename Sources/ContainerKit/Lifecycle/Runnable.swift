/// A long-lived component a host runs beside its work: the tag manager's lifecycle (``TagManager``), the
/// session store (``SessionStore``), the delivery pipeline (`DeliveryPipeline`, in memory or
/// durable).
///
/// Every component answers two signals the same way:
/// - **Cancellation** of the task running ``run()`` means *stop now*: work in hand is abandoned (what is
///   durable stays durable; nothing is drained, saved or replayed) and ``run()`` returns promptly.
/// - ``gracefulShutdown()`` means *finish up*: the component stops taking new work, finishes what it holds
///   within its own bound (the pipeline's drain timeout, the session store's last save), and then ``run()``
///   returns by itself.
///
/// It has the shape of swift-service-lifecycle's `Service` plus its graceful-shutdown signal, so a host that
/// uses that package bridges every component with one helper:
///
/// ```swift
/// struct RunnableService<Component: Runnable>: Service {
///     let component: Component
///     func run() async throws {
///         try await withGracefulShutdownHandler {
///             try await component.run()
///         } onGracefulShutdown: {
///             component.gracefulShutdown()
///         }
///     }
/// }
/// ```
public protocol Runnable: AnyObject, Sendable {
    /// Works until the task is cancelled (then stops at once) or until ``gracefulShutdown()`` finished
    /// what the component holds.
    func run() async throws

    /// Stops taking new work and lets ``run()`` finish what it holds (bounded), then return. Safe to call
    /// at any time — before ``run()`` starts (it then returns at once when it does), and more than once.
    func gracefulShutdown()
}

extension TagManager: Runnable {}
extension SessionStore: Runnable {}
