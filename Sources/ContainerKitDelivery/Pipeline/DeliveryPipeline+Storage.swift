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

extension DeliveryPipeline where Store == SegmentRecordStore {
    /// A crash-safe pipeline: records are appended to a segment log in `directory` (a
    /// ``SegmentRecordStore``) and reported durable only once they are `fsync`ed; each batch the destination
    /// settled is acknowledged; after a restart (even a `kill -9`) the unacknowledged records are delivered
    /// again. Delivery is therefore **at least once**, and a crash re-delivers at most the batches in flight
    /// (one, unless ``DeliverySettings/maximumConcurrentDeliveries`` allows more) and one settled batch whose
    /// acknowledgement was being written.
    ///
    /// ```swift
    /// let braze = BrazeUsersTrackDestination(endpoint: url, apiKey: key)
    /// let pipeline = try DeliveryPipeline.durable(directory: "/var/lib/app/braze-queue", destination: braze)
    /// BrazeTagProvider(sink: pipeline).register(on: tagManager)
    /// // in the service's task group:  try await pipeline.run()
    /// let result = session.push(event: "purchase")   // the tag's records are appended, not yet durable
    /// try await result.waitUntilDurable()             // now they survive a crash
    /// ```
    ///
    /// ## Lifetime
    /// Opening takes the directory's lock and recovers what a previous run left; it starts nothing.
    /// ``run()`` starts the store's writer and reader threads and the delivery loop, and logs what recovery
    /// found wrong on disk. Cancelling its task stops at once: deliveries in flight are abandoned, what is
    /// appended is committed, the threads are joined, and every committed record stays on disk for the next
    /// run. ``gracefulShutdown()`` **drains** instead: new records are refused; everything appended is
    /// committed; what is on disk is delivered within ``DeliverySettings/drainTimeout`` (the rest stays on
    /// disk); the directory is released and ``run()`` returns.
    ///
    /// ## Durability barrier and group commit
    /// ``enqueue(_:)-([AnalyticsRecord])`` returns at once with a ``DurabilityToken`` (the provider puts it in
    /// the tag's ``TagOutput``, so `PushResult.waitUntilDurable()` waits for it); ``waitUntilDurable(ticket:)``
    /// returns once that ticket's records are written and `fsync`ed, or throws if **that** commit failed —
    /// other commits are unaffected (after a full disk, operation resumes when space returns). The writer
    /// thread takes every line appended while its previous `fsync` ran and writes them with one `write` and
    /// one `fsync`; lines are encoded on the producer's thread, outside any lock.
    ///
    /// ## Bounded disk use and delivery
    /// When segments plus pending lines would exceed ``SegmentRecordStore/Options/maximumQueueBytes``, new
    /// records are refused (`.queueFull`); records already stored are never dropped. Recently committed
    /// records are delivered from memory (up to ``SegmentRecordStore/Options/maximumBufferedRecords``); a
    /// backlog beyond that, and what a previous run left, is read back from disk. Unless
    /// ``DeliverySettings/retry`` says otherwise, retryable failures are retried without limit
    /// (``DeliveryRetryPolicy/unlimited``); rejections are dropped with the destination's message. An
    /// unreadable segment is reported with its name and skipped; the good records are still delivered.
    ///
    /// The segment log also keeps sessions (``sessions``) and is read without opening it by
    /// ``SegmentRecordStore/pendingRecords(in:)``.
    ///
    /// - Parameters:
    ///   - directory: The segment log's directory (created if needed); also the `queue` metadata of the
    ///     pipeline's log messages unless ``DeliverySettings/name`` is set.
    ///   - destination: Where records are delivered.
    ///   - settings: How they are delivered.
    ///   - storage: The segment log's own settings (segment size, disk bound, memory buffer, commit delay).
    ///   - clock: The clock of lingers, backoffs and the drain (tests pass a manual one).
    /// - Throws: ``AnalyticsSinkError``: `.unwritable` or `.io` when the directory cannot be used, `.locked`
    ///   when another pipeline has it open, `.corruptFile` (naming the file) for an ack or segment index out of
    ///   range.
    public static func durable<C: Clock>(
        directory: String,
        destination: any AnalyticsDestination,
        settings: DeliverySettings = DeliverySettings(),
        storage: SegmentRecordStore.Options = SegmentRecordStore.Options(),
        clock: C = ContinuousClock()
    ) throws(AnalyticsSinkError) -> DeliveryPipeline where C.Duration == Duration {
        let store = try SegmentRecordStore(
            directory: directory,
            options: storage,
            batchSize: batchSize(settings, destination)
        )
        return DeliveryPipeline(
            store: store,
            destination: destination,
            settings: settings,
            label: directory,
            clock: clock
        )
    }
}
