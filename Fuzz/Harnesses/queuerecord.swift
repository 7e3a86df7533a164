// The durable queue's record reader: the first byte picks a mode — one record line
// (`AnalyticsRecord(jsonBytes:)`, and what it writes back must read back equal), or a whole segment file read
// the way a starting queue reads it (`SegmentRecordStore.pendingRecords(in:)`).
import ContainerKit
import ContainerKitBraze
import Foundation

let queueDirectory: String = {
    let path = NSTemporaryDirectory() + "containerkit-fuzz-queue-\(getpid())"
    try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzQueueRecord(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzBytes(data, size)
    guard let mode = bytes.first else { return 0 }
    let rest = Array(bytes.dropFirst())
    if mode & 1 == 0 {
        if let record = try? AnalyticsRecord(jsonBytes: rest) {
            let again = try? AnalyticsRecord(jsonLine: record.jsonLine)
            precondition(again == record, "a record does not read back as written: \(record.jsonLine)")
        }
        return 0
    }
    let segment = queueDirectory + "/segment-00000000000000000001.jsonl"
    guard FileManager.default.createFile(atPath: segment, contents: Data(rest)) else { return 0 }
    _ = try? SegmentRecordStore.pendingRecords(in: queueDirectory)
    return 0
}
