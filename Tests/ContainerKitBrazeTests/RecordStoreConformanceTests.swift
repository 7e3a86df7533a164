import ContainerKit
import ContainerKitTesting
import Testing

@testable import ContainerKitDelivery

/// The record-store seam's contract (``RecordStoreConformance``) against the stores that ship: the memory
/// store and the segment log (``SegmentRecordStore``) (PostgreSQL runs the same checks in its own package).
@Suite struct RecordStoreConformanceTests {
    @Test func theMemoryStoreKeepsTheContract() async throws {
        try await RecordStoreConformance(make: { MemoryRecordStore() }).checkAll()
    }

    @Test func theSegmentLogKeepsTheContract() async throws {
        let directory = TemporaryDirectory("conformance")
        defer { directory.remove() }
        let path = directory.path
        try await RecordStoreConformance(make: { try Self.segmentStore(path) }).checkAll()
    }

    @Test func theSegmentLogWithSmallSegmentsAndMemoryKeepsTheContract() async throws {
        let directory = TemporaryDirectory("conformance-small")
        defer { directory.remove() }
        let path = directory.path
        try await RecordStoreConformance(make: {
            try Self.segmentStore(path, segmentBytes: 600, bufferedRecords: 2)
        }).checkAll()
    }

    static func segmentStore(_ path: String, segmentBytes: Int = 8 << 20, bufferedRecords: Int = 10_000) throws
        -> SegmentRecordStore
    {
        var options = SegmentRecordStore.Options()
        options.maximumSegmentBytes = segmentBytes
        options.maximumBufferedRecords = bufferedRecords
        options.acknowledgementSyncInterval = .zero
        return try SegmentRecordStore(directory: path, options: options, batchSize: 100)
    }
}
