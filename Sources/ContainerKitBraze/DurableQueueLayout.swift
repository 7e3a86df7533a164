import ContainerKit

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The files of a ``DurableQueueSink`` directory and how to read them.
///
/// - `segment-<20-digit index>.jsonl`: append-only segments of record lines (``AnalyticsRecord/jsonLine``
///   plus a line feed). Only the newest segment of a running queue is written; a queue opening the
///   directory always starts a new one, so a torn line can only be the last line of a sealed segment.
/// - `ack`: `v1 <segment> <offset>\n`, the position just after the last record the downstream confirmed,
///   replaced atomically (temporary file, `fsync`, `rename`, `fsync` of the directory).
/// - `lock`: held with `flock` while a queue has the directory open.
enum DurableQueueLayout {
    /// A place in the queue: a segment and a byte offset in it. Ordered by segment, then offset.
    struct Position: Sendable, Hashable, Comparable, CustomStringConvertible {
        var segment: UInt64
        var offset: Int

        static func < (lhs: Position, rhs: Position) -> Bool {
            (lhs.segment, lhs.offset) < (rhs.segment, rhs.offset)
        }

        var description: String { "\(segment):\(offset)" }
    }

    /// A segment's index and how many of its bytes may be read.
    struct SegmentExtent: Sendable, Hashable {
        var index: UInt64
        var size: Int
    }

    /// Records read from segments, the position after the last line consumed, and how many lines
    /// were skipped (torn or unreadable).
    struct ReadResult: Sendable {
        var records: [AnalyticsRecord] = []
        var end: Position
        var skippedLines = 0
        var messages: [String] = []
    }

    static let ackFileName = "ack"
    static let lockFileName = "lock"

    static func segmentName(_ index: UInt64) -> String {
        let digits = String(index)
        return "segment-" + String(repeating: "0", count: max(0, 20 - digits.utf8.count)) + digits + ".jsonl"
    }

    static func segmentIndex(fromName name: String) -> UInt64? {
        guard name.hasPrefix("segment-"), name.hasSuffix(".jsonl") else { return nil }
        return UInt64(name.dropFirst(8).dropLast(6))
    }

    static func path(_ directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// The segments in `directory`, oldest first, with their sizes on disk.
    static func listSegments(_ directory: String) throws(AnalyticsSinkError) -> [SegmentExtent] {
        var segments: [SegmentExtent] = []
        for name in try FileIO.listDirectory(directory) {
            guard let index = segmentIndex(fromName: name) else { continue }
            var info = stat()
            let path = path(directory, name)
            guard stat(path, &info) == 0 else {
                // A running queue deletes segments once they are confirmed; one may vanish meanwhile.
                if errno == ENOENT { continue }
                throw FileIO.error("reading", path)
            }
            segments.append(SegmentExtent(index: index, size: Int(info.st_size)))
        }
        return segments.sorted { $0.index < $1.index }
    }

    static func ackText(_ position: Position) -> String { "v1 \(position.segment) \(position.offset)\n" }

    /// The confirmed position, or `nil` when there is no readable ack file (then everything is replayed).
    static func readAck(_ directory: String) throws(AnalyticsSinkError) -> Position? {
        guard let bytes = try FileIO.readFile(path(directory, ackFileName)) else { return nil }
        let parts = String(decoding: bytes, as: UTF8.self).split(separator: " ")
        guard parts.count == 3, parts[0] == "v1", let segment = UInt64(parts[1]),
            parts[2].hasSuffix("\n"), let offset = Int(parts[2].dropLast()), offset >= 0
        else { return nil }
        return Position(segment: segment, offset: offset)
    }

    /// Where reading starts given the ack and the segments present: the ack if its segment exists,
    /// otherwise the start of the first segment after it.
    static func startPosition(ack: Position?, segments: [SegmentExtent], nextIndex: UInt64) -> Position {
        if let ack, let segment = segments.first(where: { $0.index == ack.segment }) {
            return Position(segment: ack.segment, offset: min(ack.offset, segment.size))
        }
        let floor = ack?.segment ?? 0
        if let first = segments.first(where: { $0.index >= floor }) { return Position(segment: first.index, offset: 0) }
        return Position(segment: nextIndex, offset: 0)
    }

    /// Reads up to `limit` records from `start`, through `segments` (oldest first), never past each
    /// segment's `size`. A segment's unterminated last line is skipped as torn when `sealed(index)`;
    /// in an open segment it is left for later.
    static func read(
        _ directory: String,
        from start: Position,
        segments: [SegmentExtent],
        limit: Int,
        sealed: (UInt64) -> Bool
    ) throws(AnalyticsSinkError) -> ReadResult {
        var result = ReadResult(end: start)
        var position = start
        for segment in segments where segment.index >= position.segment {
            if segment.index > position.segment { position = Position(segment: segment.index, offset: 0) }
            guard position.offset < segment.size else {
                result.end = position
                continue
            }
            let path = path(directory, segmentName(segment.index))
            let fd: Int32
            do {
                fd = try FileIO.openFile(path, O_RDONLY)
            } catch {
                // Deleted by a running queue after the listing: it was fully confirmed.
                guard error.errorNumber == ENOENT else { throw error }
                position = Position(segment: segment.index, offset: segment.size)
                result.end = position
                continue
            }
            defer { close(fd) }
            var chunkSize = 1 << 20
            while position.offset < segment.size && result.records.count < limit {
                let count = min(chunkSize, segment.size - position.offset)
                let bytes = try FileIO.readBytes(fd, count: count, at: position.offset, path: path)
                guard !bytes.isEmpty else { break }
                var lineStart = 0
                var consumedAny = false
                while result.records.count < limit, let newline = bytes[lineStart...].firstIndex(of: 0x0A) {
                    let line = Array(bytes[lineStart..<newline])
                    if !line.isEmpty {
                        do {
                            result.records.append(try AnalyticsRecord(jsonBytes: line))
                        } catch {
                            result.skippedLines += 1
                            result.messages.append(
                                "skipped an unreadable line at '\(segmentName(segment.index))' offset "
                                    + "\(position.offset + lineStart): \(error.message)"
                            )
                        }
                    }
                    lineStart = newline + 1
                    consumedAny = true
                }
                position.offset += lineStart
                if !consumedAny {
                    if position.offset + bytes.count >= segment.size {
                        // No line feed before the end: a torn last line (never acknowledged).
                        if sealed(segment.index) {
                            result.skippedLines += 1
                            result.messages.append(
                                "ignored a torn last line of \(segment.size - position.offset) bytes in "
                                    + "'\(segmentName(segment.index))'"
                            )
                            position.offset = segment.size
                        }
                        break
                    }
                    chunkSize *= 2
                }
            }
            result.end = position
            if result.records.count >= limit || position.offset < segment.size { break }
        }
        return result
    }
}
