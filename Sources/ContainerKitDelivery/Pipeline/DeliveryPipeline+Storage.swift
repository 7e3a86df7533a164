import ContainerKit

extension DeliveryPipeline where Store == MemoryRecordStore {
    /// A pipeline whose records live in memory (a ``MemoryRecordStore``): they are lost if the process dies —
    /// make it ``durable(directory:destination:settings:storage:clock:)`` for at-least-once delivery.
    ///
    /// ```swift
    /// let pipeline = DeliveryPipeline.inMemory(destination: braze)
    /// BrazeTagProvider(sink: pipeline).register(on: tagManager)
    /// try await withThrowingDiscardingTaskGroup { group in
    ///     group.addTask { try await pipeline.run() }     // delivers until gracefulShutdown() drained it
    ///     …
    ///     pipeline.gracefulShutdown()                    // at exit: drain (bounded), then run() returns
    /// }
    /// ```
    ///
    /// ## Batching
    /// The loop sends once ``DeliverySettings/lingerCount`` records are stored (75 unless set), once the oldest
    /// of them waited ``DeliverySettings/linger`` (10 s unless set, like Braze's SDKs), on ``flush()`` and while
    /// draining; each delivery carries at most ``DeliverySettings/batchSize`` records (by default the
    /// destination's preferred batch size).
    ///
    /// ## Failures
    /// Retryable failures (429 with `Retry-After`, 5xx, timeouts) are retried after ``DeliveryRetryPolicy``'s
    /// jittered backoff, up to ``DeliveryRetryPolicy/maximumAttempts`` attempts (5 unless
    /// ``DeliverySettings/retry`` is set); then the records are dropped with an error. Rejected records (for
    /// Braze, a 4xx) are dropped at once with the destination's message.
    ///
    /// ## Stopping
    /// Cancelling ``run()``'s task stops at once: what is stored is dropped (counted in
    /// ``DeliveryStatistics/droppedRecords`` and logged). ``gracefulShutdown()`` drains what is stored for at
    /// most ``DeliverySettings/drainTimeout`` (what is left then is dropped with an error); records appended
    /// after the drain began are refused.
    ///
    /// - Parameters:
    ///   - destination: Where records are delivered.
    ///   - settings: How they are delivered.
    ///   - maximumRecords: The most records stored and not yet delivered; more are refused (`.queueFull`).
    ///   - clock: The clock of lingers, backoffs and the drain (tests pass a manual one).
    public static func inMemory<C: Clock>(
        destination: any AnalyticsDestination,
        settings: DeliverySettings = DeliverySettings(),
        maximumRecords: Int = 50_000,
        clock: C = ContinuousClock()
    ) -> DeliveryPipeline where C.Duration == Duration {
        let store = MemoryRecordStore(maximumRecords: maximumRecords)
        return DeliveryPipeline(
            store: store,
            destination: destination,
            settings: settings,
            label: "queue",
            defaultLinger: .seconds(10),
            defaultLingerCount: 75,
            heldRecords: { store.count },
            clock: clock
        )
    }
}
