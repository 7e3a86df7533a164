/// Work an extension does at the end of every push of every session, after the push's tags ran and before
/// the push is committed: its chance to emit records that no tag call of the push made.
///
/// The Braze provider registers one (through its `register(on:)`): a Braze tag in a session without a user
/// keeps its records in the session, and the hook releases them in the push that gave the session its user —
/// a `changeUser` tag of that push, or the host's `setUser` before it.
///
/// ```swift
/// tagManager.register(pushHook: ClosurePushHook { session in
///     guard let held = heldRecords(of: session) else { return nil }
///     return TagOutput(records: held, durability: try? sink.enqueue(held))
/// }, for: "com.example.held")
/// ```
///
/// A hook runs inside the session's turn (no other push of the session runs meanwhile), once the push and
/// the pushes its handlers nested are processed, before a ``PushCommitter`` commits them. What it returns
/// joins the push's result (``PushResult/hookOutputs``, and ``PushResult/outputs``, so the committer
/// commits its records with the push and ``PushResult/waitUntilDurable()`` waits for them). It runs for every
/// push of every session, so it must be cheap when it has nothing to do; it must not push into the session.
public protocol PushHook: Sendable {
    /// Called at the end of each push of `dataLayer` (see the type's documentation).
    /// - Returns: records to add to the push (with their durability, as a tag handler's output), or `nil`.
    func endOfPush(_ dataLayer: DataLayer) -> TagOutput?
}

/// Adapts a closure to ``PushHook``.
public struct ClosurePushHook: PushHook {
    private let body: @Sendable (DataLayer) -> TagOutput?
    /// Creates a hook that returns what `body` returns.
    public init(_ body: @escaping @Sendable (DataLayer) -> TagOutput?) { self.body = body }
    public func endOfPush(_ dataLayer: DataLayer) -> TagOutput? { body(dataLayer) }
}
