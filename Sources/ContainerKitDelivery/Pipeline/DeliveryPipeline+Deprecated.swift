/// The durable front of earlier releases: now a ``DeliveryPipeline`` over the segment log, made with
/// ``DeliveryPipeline/durable(directory:destination:settings:storage:clock:)``. Kept for one release.
@available(
    *,
    deprecated,
    message: "make one with DeliveryPipeline.durable(directory:destination:settings:storage:clock:)"
)
public typealias DurableQueue = DeliveryPipeline<SegmentRecordStore>

/// The in-memory front of earlier releases: now a ``DeliveryPipeline`` over a ``MemoryRecordStore``, made with
/// ``DeliveryPipeline/inMemory(destination:settings:maximumRecords:clock:)``. Kept for one release.
@available(
    *,
    deprecated,
    message: "make one with DeliveryPipeline.inMemory(destination:settings:maximumRecords:clock:)"
)
public typealias InMemoryQueue = DeliveryPipeline<MemoryRecordStore>
