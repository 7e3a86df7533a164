@_spi(Hot) import ContainerKit

/// The segment log's state, as a pure state machine: no I/O, no locks, no clock. It keeps what a log
/// needs and nothing else — appends waiting for the writer, the commit being written, the segments and
/// their rotation, the sessions the lines hold, the memory buffer of recently committed records and the
/// read cursor — and each step returns the ``Action``s the shell (``SegmentRecordStore``) performs, so
/// every interleaving, crash points included, can be driven step by step in tests.
///
/// Who waits for what (durability tickets, flushes), the batches in flight, their acknowledgement order
/// and every wake-up of the delivery loop live in ``DeliveryPipelineMachine`` only: the store hands out a
/// ticket per append (``enqueue(_:records:lineEnds:sessions:)``) and reports each commit to the pipeline,
/// the pipeline reads batches (``nextRead(limit:)``) and acknowledges through a position
/// (``acknowledge(through:)``) once a batch and every batch before it are settled.
///
/// Producers enqueue encoded lines; the writer takes them as one ``Commit`` (group commit) with
/// ``takeCommit()`` and reports ``committed(_:)`` or ``commitFailed(_:segmentUsable:)``; a read returns
/// committed records from memory, or asks for a disk read whose result comes back through
/// ``diskRead(_:from:)``.
struct SegmentLogMachine: Sendable {
    typealias Position = SegmentLog.Position

    /// A segment the machine knows: its index, committed (good) size and whether it is sealed.
    struct Segment: Sendable, Hashable {
        var index: UInt64
        var size: Int
        var sealed: Bool
    }

    /// Lines for the writer to append with one `write` and one `fsync`.
    struct Commit: Sendable {
        var bytes: [UInt8]
        /// The records, as the appends handed them over (one array per append: taking them copies no record).
        var chunks: [[AnalyticsRecord]]
        /// Where each chunk's first record line starts in ``bytes`` (an append's session lines follow its records).
        var chunkStarts: [Int]
        /// How many records ``chunks`` hold.
        var recordCount: Int
        var lineEnds: [Int]
        var tickets: ClosedRange<UInt64>
        /// Tickets of the range whose appends were refused because a session line of theirs is fenced (their
        /// lines are not in ``bytes``): they fail with `.superseded`.
        var refused: [UInt64] = []
        /// The session lines in ``bytes``.
        var sessionLines: [(header: SessionLine, range: Range<Int>)] = []
        /// The segment to append to (a new one when it is not the active segment).
        var segment: UInt64
        /// Where in it the commit starts (its good size).
        var offset: Int

        /// The records, in order (a copy: for tests and diagnostics).
        var records: [AnalyticsRecord] { chunks.flatMap { $0 } }
    }

    /// Records to deliver and the position after the last of them; from memory, with each record's JSON
    /// as its commit wrote it (the same records: batches compare by records and end).
    struct Batch: Sendable, Hashable {
        var records: [AnalyticsRecord]
        var end: Position
        var json: RecordsJSON? = nil

        static func == (a: Batch, b: Batch) -> Bool { a.end == b.end && a.records == b.records }

        func hash(into hasher: inout Hasher) {
            hasher.combine(records)
            hasher.combine(end)
        }
    }

    /// What the shell must do after a step.
    enum Action: Sendable, Hashable {
        /// Wake the writer thread: there are lines to commit.
        case wakeWriter
        /// Write the ack and delete the segments it leaves behind.
        case acknowledge(Position, deleting: [UInt64])
        /// More than ``maximumRetainedSegments`` delivered segments are kept only for session lines: fold the
        /// chains in the oldest into new snapshots (``sessionsToCompact``) so that it can go.
        case compactSessions
    }

    /// How many delivered segments may be kept for session lines before a compaction folds the oldest.
    static let maximumRetainedSegments = 2

    /// What a read does.
    enum ReadStep: Sendable, Hashable {
        /// Deliver these records, taken from memory (the read cursor is past them).
        case batch(Batch)
        /// Read up to the batch size from disk, from this position through these segments.
        case readDisk(from: Position, segments: [SegmentLog.SegmentExtent], sealed: Set<UInt64>)
        /// Nothing committed after the read cursor.
        case nothing
    }

    /// The machine's flags, one set.
    struct Flags: OptionSet, Sendable, Hashable {
        let rawValue: UInt8
        /// A commit taken by ``takeCommit()`` is being written (one at a time).
        static let writing = Flags(rawValue: 1 << 0)
        /// The writer found nothing to commit and sleeps until ``Action/wakeWriter``.
        static let writerAsleep = Flags(rawValue: 1 << 1)
        /// New appends are refused (the store stops).
        static let closed = Flags(rawValue: 1 << 2)
        /// Committed records are on disk that the memory buffer does not hold: reads go to disk until they
        /// reach the end of the committed data.
        static let backlogOnDisk = Flags(rawValue: 1 << 3)
    }

    /// The records of one append, committed and kept for delivery: the append's own array (never copied
    /// record by record until a batch takes them), where each line ends, and where the commit was written.
    private struct MemoryChunk: Sendable {
        var records: [AnalyticsRecord]
        /// Each record's line end, relative to ``offset`` (and in ``bytes``).
        var lineEnds: ArraySlice<Int>
        /// Where the first record's line starts in ``bytes``.
        var lineStart: Int
        /// The commit's lines (shared by the chunks of one commit, not copied).
        var bytes: [UInt8]
        var segment: UInt64
        var offset: Int

        /// Where record `index`'s line starts in ``bytes``.
        func start(of index: Int) -> Int { index == 0 ? lineStart : lineEnds[lineEnds.startIndex + index - 1] }

        func end(of index: Int) -> Position {
            Position(segment: segment, offset: offset + lineEnds[lineEnds.startIndex + index])
        }
    }

    let maximumSegmentBytes: Int
    let maximumQueueBytes: Int
    let maximumBufferedRecords: Int
    let batchSize: Int

    /// One append waiting for the writer: its lines (records first, then session lines), as handed over.
    private struct PendingAppend: Sendable {
        var bytes: [UInt8]
        var records: [AnalyticsRecord]
        /// Each record's line end in ``bytes``.
        var lineEnds: [Int]
        var ticket: UInt64
        var sessions: [(header: SessionLine, range: Range<Int>)]
    }

    private(set) var flags: Flags = []
    // Appending.
    /// The ticket of the latest append (the store's count of appends: what it reports commits by).
    private(set) var lastTicket: UInt64 = 0
    private var pending: [PendingAppend] = []
    private var pendingRecordCount = 0
    private var pendingByteCount = 0
    /// The sessions in the log (their committed lines).
    private(set) var sessions: SessionIndex
    /// The end of the last committed record line (session lines may follow it): what delivery must reach.
    private var recordsEnd: Position
    // Files.
    private(set) var segments: [Segment]
    private(set) var nextSegmentIndex: UInt64
    private(set) var queueBytes: Int
    // Delivery.
    /// Where delivery is acknowledged (what the ack file says).
    private(set) var cursor: Position
    /// Where the next read starts: after the last record handed out (at or after ``cursor``).
    private(set) var readCursor: Position
    /// Committed records not read yet, one chunk per append, from the first chunk's record
    /// ``memoryRecordHead`` on.
    private var memory = HeadIndexQueue<MemoryChunk>()
    private var memoryRecordHead = 0
    /// How many records ``memory`` holds that were not read.
    private var bufferedRecords = 0

    /// A machine over what ``SegmentLog`` recovered: `segments` (sealed) and the acknowledged `cursor`.
    init(
        segments: [SegmentLog.SegmentExtent],
        cursor: Position,
        nextSegmentIndex: UInt64,
        maximumSegmentBytes: Int,
        maximumQueueBytes: Int,
        maximumBufferedRecords: Int,
        batchSize: Int,
        sessions: SessionIndex = SessionIndex()
    ) {
        self.segments = segments.map { Segment(index: $0.index, size: $0.size, sealed: true) }
        self.sessions = sessions
        self.recordsEnd = cursor
        self.cursor = cursor
        self.readCursor = cursor
        self.nextSegmentIndex = nextSegmentIndex
        self.queueBytes = segments.reduce(0) { $0 + $1.size }
        if !segments.isEmpty { flags.insert(.backlogOnDisk) }
        self.maximumSegmentBytes = max(1, maximumSegmentBytes)
        self.maximumQueueBytes = maximumQueueBytes
        self.maximumBufferedRecords = maximumBufferedRecords
        self.batchSize = max(1, batchSize)
        normalizeCursor()
    }

    // MARK: Appending

    /// Takes encoded lines (`lineEnds`: where each record's line ends in `bytes`; `sessions`: the session
    /// lines after them) and gives them the next ticket. Refuses them when the queue is closed or its bytes
    /// would pass the maximum. Session lines are fenced when the writer takes them (``takeCommit()``).
    mutating func enqueue(
        _ bytes: [UInt8],
        records: [AnalyticsRecord],
        lineEnds: [Int],
        sessions sessionLines: [(header: SessionLine, range: Range<Int>)] = []
    ) throws(AnalyticsSinkError) -> (ticket: UInt64, actions: [Action]) {
        guard !flags.contains(.closed) else { throw AnalyticsSinkError(.closed, "the durable queue is shut down") }
        guard queueBytes + bytes.count <= maximumQueueBytes else {
            throw AnalyticsSinkError(
                .queueFull,
                "the durable queue holds \(queueBytes) bytes; \(bytes.count) more would pass its maximum of "
                    + "\(maximumQueueBytes)"
            )
        }
        lastTicket += 1
        // The append's arrays are kept as they are (one reference each), not copied.
        pending.append(
            PendingAppend(
                bytes: bytes,
                records: records,
                lineEnds: lineEnds,
                ticket: lastTicket,
                sessions: sessionLines
            )
        )
        pendingRecordCount += records.count
        pendingByteCount += bytes.count
        queueBytes += bytes.count
        return (lastTicket, wakeWriter())
    }

    /// Refuses records from now on (the store stops); the writer still commits what is pending.
    mutating func close() -> [Action] {
        flags.insert(.closed)
        return wakeWriter()
    }

    /// ``Action/wakeWriter`` when the writer sleeps (it is then awake).
    private mutating func wakeWriter() -> [Action] {
        guard flags.contains(.writerAsleep) else { return [] }
        flags.remove(.writerAsleep)
        return [.wakeWriter]
    }

    /// The writer's next commit: every pending line, for the active segment, or a new one when the
    /// active segment is full (or unusable). `nil` (and the writer waits for ``Action/wakeWriter``) when
    /// nothing is pending, or a commit is being written.
    mutating func takeCommit() -> Commit? {
        guard !flags.contains(.writing) else { return nil }
        guard let first = pending.first else {
            flags.insert(.writerAsleep)
            return nil
        }
        flags.remove(.writerAsleep)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(pendingByteCount)
        var chunks: [[AnalyticsRecord]] = []
        chunks.reserveCapacity(pending.count)
        var chunkStarts: [Int] = []
        chunkStarts.reserveCapacity(pending.count)
        var lineEnds: [Int] = []
        lineEnds.reserveCapacity(pendingRecordCount)
        var recordCount = 0
        var refused: [UInt64] = []
        var sessionLines: [(header: SessionLine, range: Range<Int>)] = []
        // The heads this commit's earlier lines made.
        var heads: [SessionKey: SessionIndex.HeadState] = [:]
        for append in pending {
            if !append.sessions.isEmpty, !admits(append.sessions, heads: &heads) {
                refused.append(append.ticket)
                queueBytes -= append.bytes.count
                continue
            }
            let base = bytes.count
            bytes.append(contentsOf: append.bytes)
            if !append.records.isEmpty {
                chunks.append(append.records)
                chunkStarts.append(base)
                recordCount += append.records.count
                for end in append.lineEnds { lineEnds.append(end + base) }
            }
            for (header, range) in append.sessions {
                sessionLines.append((header, (range.lowerBound + base)..<(range.upperBound + base)))
            }
        }
        let target: (UInt64, Int)
        if let active = segments.last, !active.sealed,
            active.size == 0 || active.size + bytes.count <= maximumSegmentBytes
        {
            target = (active.index, active.size)
        } else {
            target = (nextSegmentIndex, 0)
        }
        var commit = Commit(
            bytes: bytes,
            chunks: chunks,
            chunkStarts: chunkStarts,
            recordCount: recordCount,
            lineEnds: lineEnds,
            tickets: first.ticket...lastTicket,
            segment: target.0,
            offset: target.1
        )
        commit.refused = refused
        commit.sessionLines = sessionLines
        pending.removeAll(keepingCapacity: true)
        pendingRecordCount = 0
        pendingByteCount = 0
        flags.insert(.writing)
        return commit
    }

    /// Whether an append's session lines may follow the heads (the log's, changed by this commit's earlier
    /// lines in `heads`); when they may, `heads` takes their versions.
    private func admits(
        _ lines: [(header: SessionLine, range: Range<Int>)],
        heads: inout [SessionKey: SessionIndex.HeadState]
    ) -> Bool {
        var taken: [(SessionKey, SessionIndex.HeadState)] = []
        for (header, _) in lines {
            let key = SessionKey(header.userID)
            let head = taken.last { $0.0 == key }?.1 ?? heads[key] ?? sessions.headState(key)
            guard header.isAdmitted(afterHead: head.version, headID: head.id, ended: head.ended) else { return false }
            var next = head
            if header.kind != .compaction {
                next = SessionIndex.HeadState(
                    version: max(head.version, header.version),
                    id: header.version >= head.version ? header.id : head.id,
                    ended: header.kind == .removal
                )
            }
            taken.append((key, next))
        }
        for (key, head) in taken { heads[key] = head }
        return true
    }

    /// The writer appended and synced `commit` (the writer takes the next commit itself: no wake-up). The store
    /// reports its tickets to the pipeline (the refused ones failed, `.superseded`).
    mutating func committed(_ commit: Commit) -> [Action] {
        flags.remove(.writing)
        // Every append was refused: nothing was written.
        guard !commit.bytes.isEmpty else { return [] }
        let startsSegment = segments.last?.index != commit.segment
        if startsSegment {
            if !segments.isEmpty { segments[segments.count - 1].sealed = true }
            segments.append(Segment(index: commit.segment, size: 0, sealed: false))
            nextSegmentIndex = commit.segment + 1
        }
        // Nothing waits for delivery before a commit without records: the cursor may pass it (its session
        // lines are not delivered), so that the segments before it can go.
        let passes = commit.recordCount == 0 && caughtUp
        segments[segments.count - 1].size = commit.offset + commit.bytes.count
        var actions: [Action] = []
        if let last = commit.lineEnds.last {
            recordsEnd = max(recordsEnd, Position(segment: commit.segment, offset: commit.offset + last))
        }
        if !flags.contains(.backlogOnDisk) && bufferedRecords + commit.recordCount <= maximumBufferedRecords {
            var index = 0
            for (chunk, records) in commit.chunks.enumerated() where !records.isEmpty {
                memory.append(
                    MemoryChunk(
                        records: records,
                        lineEnds: commit.lineEnds[index..<(index + records.count)],
                        lineStart: commit.chunkStarts.isEmpty
                            ? (index == 0 ? 0 : commit.lineEnds[index - 1])
                            : commit.chunkStarts[chunk],
                        bytes: commit.bytes,
                        segment: commit.segment,
                        offset: commit.offset
                    )
                )
                index += records.count
            }
            bufferedRecords += commit.recordCount
        } else {
            flags.insert(.backlogOnDisk)
        }
        var released: [UInt64] = []
        for (header, range) in commit.sessionLines {
            let ref = SessionLineRef(
                segment: commit.segment,
                offset: commit.offset + range.lowerBound,
                length: range.count,
                version: header.version,
                kind: header.kind
            )
            released += sessions.add(header, at: ref)
        }
        let cursorSegment = cursor.segment
        if passes {
            cursor = max(cursor, Position(segment: commit.segment, offset: commit.offset + commit.bytes.count))
            recordsEnd = max(recordsEnd, cursor)
        }
        normalizeCursor()
        if !released.isEmpty || cursor.segment != cursorSegment, let deletion = deleteUnpinned() {
            actions.append(deletion)
        }
        if startsSegment && retainedForSessions.count > Self.maximumRetainedSegments {
            actions.append(.compactSessions)
        }
        return actions
    }

    /// The sessions with a live line in the oldest delivered segment kept for them (see
    /// ``Action/compactSessions``), with their chains; empty when none is kept.
    var sessionsToCompact: [(SessionKey, SessionIndex.Chain)] {
        guard let oldest = retainedForSessions.first else { return [] }
        return sessions.users(pinning: oldest)
    }

    /// The writer could not commit `commit`; the log removed every trace of it. The store reports its tickets
    /// failed; when `segmentUsable` is false the active segment is sealed and the next commit starts a new one.
    mutating func commitFailed(_ commit: Commit, segmentUsable: Bool) {
        flags.remove(.writing)
        queueBytes -= commit.bytes.count
        if !segmentUsable, let last = segments.last, last.index == commit.segment {
            segments[segments.count - 1].sealed = true
            nextSegmentIndex = max(nextSegmentIndex, commit.segment + 1)
        }
    }

    // MARK: Reading

    /// The end of the committed data.
    var durableEnd: Position {
        guard let active = segments.last else { return cursor }
        return max(cursor, Position(segment: active.index, offset: active.size))
    }

    /// Whether everything committed is read and acknowledged (nothing is out to the destination).
    var caughtUp: Bool {
        readCursor <= cursor && bufferedRecords == 0 && !flags.contains(.backlogOnDisk) && cursor >= recordsEnd
    }

    /// The next read of at most `limit` records (the batch size by default): a batch from memory (the read
    /// cursor moves past it), a disk read to perform, or nothing when everything committed was read.
    mutating func nextRead(limit: Int? = nil) -> ReadStep {
        if bufferedRecords > 0 {
            let batch = takeFromMemory(limit: max(1, min(limit ?? batchSize, batchSize)))
            readCursor = batch.end
            return .batch(batch)
        }
        if flags.contains(.backlogOnDisk) {
            return .readDisk(
                from: readCursor,
                segments: segments.map { SegmentLog.SegmentExtent(index: $0.index, size: $0.size) },
                sealed: Set(segments.filter(\.sealed).map(\.index))
            )
        }
        return .nothing
    }

    /// Up to a batch of the committed records in memory, in order, with their JSON: the commit's own buffer
    /// when one commit wrote them all (no copy), else each commit's lines copied with one append (a checksum
    /// and line feed stay between two records' JSON). A batch that is exactly one append's records reuses
    /// that append's array; otherwise each record is copied once, here.
    private mutating func takeFromMemory(limit: Int) -> Batch {
        var taken: [AnalyticsRecord] = []
        // Each record's JSON in its commit's buffer, and the lines taken from each commit.
        var ranges: [Range<Int>] = []
        ranges.reserveCapacity(min(limit, bufferedRecords))
        var pieces: [(chunk: MemoryChunk, lines: Range<Int>, records: Int)] = []
        var end = readCursor
        var remaining = limit
        while remaining > 0, let chunk = memory.first {
            let count = min(chunk.records.count - memoryRecordHead, remaining)
            if taken.isEmpty && memoryRecordHead == 0 && count == chunk.records.count {
                taken = chunk.records
            } else {
                taken.reserveCapacity(min(limit, taken.count + bufferedRecords))
                taken.append(contentsOf: chunk.records[memoryRecordHead..<(memoryRecordHead + count)])
            }
            var start = chunk.start(of: memoryRecordHead)
            let first = start
            for index in 0..<count {
                let lineEnd = chunk.lineEnds[chunk.lineEnds.startIndex + memoryRecordHead + index]
                // The JSON without the line's checksum (a tab, eight hexadecimal digits) and line feed.
                let checksummed = lineEnd - start > 10 && chunk.bytes[lineEnd - 10] == SegmentLog.checksumSeparator
                ranges.append(start..<(lineEnd - (checksummed ? 10 : 1)))
                start = lineEnd
            }
            if let last = pieces.last, last.chunk.segment == chunk.segment, last.chunk.offset == chunk.offset,
                last.lines.upperBound == first
            {
                // The same commit, right after: one piece.
                pieces[pieces.count - 1].lines = last.lines.lowerBound..<start
                pieces[pieces.count - 1].records += count
            } else {
                pieces.append((chunk, first..<start, count))
            }
            end = chunk.end(of: memoryRecordHead + count - 1)
            remaining -= count
            bufferedRecords -= count
            memoryRecordHead += count
            if memoryRecordHead == chunk.records.count {
                _ = memory.popFirst()
                memoryRecordHead = 0
            }
        }
        guard pieces.count > 1 else {
            return Batch(
                records: taken,
                end: end,
                json: pieces.first.map { RecordsJSON(bytes: $0.chunk.bytes, ranges: ranges) }
            )
        }
        // Several commits: their lines, one after the other, in a buffer of the batch's own.
        var json: [UInt8] = []
        json.reserveCapacity(pieces.reduce(0) { $0 + $1.lines.count })
        var index = 0
        for piece in pieces {
            let shift = json.count - piece.lines.lowerBound
            for position in index..<(index + piece.records) {
                ranges[position] = (ranges[position].lowerBound + shift)..<(ranges[position].upperBound + shift)
            }
            index += piece.records
            json.append(contentsOf: piece.chunk.bytes[piece.lines])
        }
        return Batch(records: taken, end: end, json: RecordsJSON(bytes: json, ranges: ranges))
    }

    /// A disk read asked for by ``nextRead(limit:)`` came back. Returns the batch to hand out — records, or
    /// only lines skipped as unreadable (a batch with no record, acknowledged like any other) — or `nil`
    /// (read again: `stale` when the read found nothing new, so the caller should not spin).
    mutating func diskRead(_ result: SegmentLog.ReadResult, from start: Position) -> (batch: Batch?, stale: Bool) {
        guard start == readCursor else { return (nil, false) }
        if result.end >= durableEnd { flags.remove(.backlogOnDisk) }
        guard result.end > start else { return (nil, flags.contains(.backlogOnDisk)) }
        readCursor = result.end
        return (Batch(records: result.records, end: result.end), false)
    }

    /// Everything through `position` (the end of a batch read) is delivered: the cursor moves there, and the
    /// ack is written with the segments it leaves behind deleted. The pipeline calls it in order, once a
    /// batch and every batch before it are settled.
    mutating func acknowledge(through position: Position) -> [Action] {
        guard position > cursor else { return [] }
        cursor = position
        if cursor > recordsEnd { recordsEnd = cursor }
        normalizeCursor()
        return [.acknowledge(cursor, deleting: takeDeletable())]
    }

    /// The sealed segments before the cursor that hold no live session line, taken out of the queue.
    private mutating func takeDeletable() -> [UInt64] {
        let done = segments.filter { $0.sealed && $0.index < cursor.segment && !sessions.isPinned($0.index) }
        guard !done.isEmpty else { return [] }
        segments.removeAll { $0.sealed && $0.index < cursor.segment && !sessions.isPinned($0.index) }
        queueBytes -= done.reduce(0) { $0 + $1.size }
        return done.map(\.index)
    }

    /// An acknowledgement that deletes the delivered segments a commit's snapshots released, if any.
    private mutating func deleteUnpinned() -> Action? {
        let deleting = takeDeletable()
        return deleting.isEmpty ? nil : .acknowledge(cursor, deleting: deleting)
    }

    /// Delivered segments kept only for their session lines, oldest first: what a compaction folds away.
    var retainedForSessions: [UInt64] {
        segments.filter { $0.sealed && $0.index < cursor.segment && sessions.isPinned($0.index) }.map(\.index)
    }

    /// Moves the cursor past sealed segments it has reached the end of (and the read cursor with it).
    private mutating func normalizeCursor() {
        while let segment = segments.first(where: { $0.index == cursor.segment }), segment.sealed,
            cursor.offset >= segment.size,
            let next = segments.first(where: { $0.index > cursor.segment })
        {
            cursor = Position(segment: next.index, offset: 0)
        }
        if !segments.contains(where: { $0.index == cursor.segment }),
            let next = segments.first(where: { $0.index > cursor.segment })
        {
            cursor = Position(segment: next.index, offset: 0)
        }
        if readCursor < cursor { readCursor = cursor }
    }
}
