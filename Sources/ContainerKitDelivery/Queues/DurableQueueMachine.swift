@_spi(Hot) import ContainerKit

/// The durable queue's state, as a pure state machine: no I/O, no locks, no clock. Each step takes what
/// happened and returns the ``Action``s the shell (``DurableQueue``) must perform, so every interleaving —
/// crash points included — can be driven step by step in tests.
///
/// Producers ``enqueue(_:records:lineEnds:)`` encoded lines; the writer takes them as one
/// ``Commit`` (group commit) with ``takeCommit()`` and reports ``committed(_:)`` or
/// ``commitFailed(_:_:segmentUsable:)``; the delivery loop asks ``nextBatch()`` (from memory, or a disk
/// read to perform), hands disk reads back with ``diskRead(_:from:)`` and reports ``confirm(_:)`` once the
/// destination settled a batch. Up to `maximumInFlight` batches are out at once (one by default); their
/// ends are acknowledged in order, as soon as a batch and every batch before it are settled, so a crash
/// re-delivers at most the batches in flight.
struct DurableQueueMachine: Sendable {
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
        /// Wake the delivery loop: there are records to deliver.
        case wakeDelivery
        /// Durability waiters up to this ticket can be answered (``failure(for:)`` says how).
        case resolveDurability(through: UInt64)
        /// Write the ack and delete the segments it leaves behind.
        case acknowledge(Position, deleting: [UInt64])
        /// Everything committed is delivered, although nothing new was acknowledged (a disk read found the
        /// backlog already confirmed, as after a restart whose ack is at the end of the log): flushes end.
        case caughtUp
        /// More than ``maximumRetainedSegments`` delivered segments are kept only for session lines: fold the
        /// chains in the oldest into new snapshots (``sessionsToCompact``) so that it can go.
        case compactSessions
    }

    /// How many delivered segments may be kept for session lines before a compaction folds the oldest.
    static let maximumRetainedSegments = 2

    /// What the delivery loop does next.
    enum DeliveryStep: Sendable, Hashable {
        /// Deliver this batch (it is in flight until ``confirm(_:)``).
        case deliver(Batch)
        /// Read up to the batch size from disk, from this position through these segments.
        case readDisk(from: Position, segments: [SegmentLog.SegmentExtent], sealed: Set<UInt64>)
        /// Nothing to deliver.
        case wait
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
    /// How many batches may be in flight at once.
    let maximumInFlight: Int

    /// One append waiting for the writer: its lines (records first, then session lines), as handed over.
    private struct PendingAppend: Sendable {
        var bytes: [UInt8]
        var records: [AnalyticsRecord]
        /// Each record's line end in ``bytes``.
        var lineEnds: [Int]
        var ticket: UInt64
        var sessions: [(header: SessionLine, range: Range<Int>)]
    }

    // Appending.
    private(set) var lastTicket: UInt64 = 0
    private var pending: [PendingAppend] = []
    private var pendingRecordCount = 0
    private var pendingByteCount = 0
    /// The sessions in the log (their committed lines).
    private(set) var sessions: SessionIndex
    /// The end of the last committed record line (session lines may follow it): what delivery must reach.
    private var recordsEnd: Position
    private(set) var writing: Commit?
    private(set) var writerWaiting = false
    private(set) var resolvedTicket: UInt64 = 0
    private var failedTickets: [(range: ClosedRange<UInt64>, error: AnalyticsSinkError)] = []
    private(set) var closed = false
    // Files.
    private(set) var segments: [Segment]
    private(set) var nextSegmentIndex: UInt64
    private(set) var queueBytes: Int
    // Delivery.
    private(set) var cursor: Position
    /// The batches handed out and not yet acknowledged, in log order; `settled` once confirmed (a settled
    /// batch waits here until every batch before it is settled too).
    private var flights: [(batch: Batch, settled: Bool)] = []
    /// Committed records not handed out yet, one chunk per commit, from the first chunk's record
    /// ``memoryRecordHead`` on.
    private var memory = HeadIndexQueue<MemoryChunk>()
    private var memoryRecordHead = 0
    /// How many records ``memory`` holds that were not handed out.
    private var bufferedRecords = 0
    private(set) var diskBacklog: Bool

    /// A machine over what ``SegmentLog`` recovered: `segments` (sealed) and the acknowledged `cursor`.
    init(
        segments: [SegmentLog.SegmentExtent],
        cursor: Position,
        nextSegmentIndex: UInt64,
        maximumSegmentBytes: Int,
        maximumQueueBytes: Int,
        maximumBufferedRecords: Int,
        batchSize: Int,
        maximumInFlight: Int = 1,
        sessions: SessionIndex = SessionIndex()
    ) {
        self.segments = segments.map { Segment(index: $0.index, size: $0.size, sealed: true) }
        self.sessions = sessions
        self.recordsEnd = cursor
        self.cursor = cursor
        self.nextSegmentIndex = nextSegmentIndex
        self.queueBytes = segments.reduce(0) { $0 + $1.size }
        self.diskBacklog = !segments.isEmpty
        self.maximumSegmentBytes = max(1, maximumSegmentBytes)
        self.maximumQueueBytes = maximumQueueBytes
        self.maximumBufferedRecords = maximumBufferedRecords
        self.batchSize = max(1, batchSize)
        self.maximumInFlight = max(1, maximumInFlight)
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
        guard !closed else { throw AnalyticsSinkError(.closed, "the durable queue is shut down") }
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
        var actions: [Action] = []
        if writerWaiting {
            writerWaiting = false
            actions.append(.wakeWriter)
        }
        return (lastTicket, actions)
    }

    /// Refuses records from now on (the drain).
    mutating func close() -> [Action] {
        closed = true
        if writerWaiting {
            writerWaiting = false
            return [.wakeWriter]
        }
        return []
    }

    /// The writer's next commit: every pending line, for the active segment, or a new one when the
    /// active segment is full (or unusable). `nil` (and the writer waits for ``Action/wakeWriter``) when
    /// nothing is pending.
    mutating func takeCommit() -> Commit? {
        guard writing == nil else { return nil }
        guard let first = pending.first else {
            writerWaiting = true
            return nil
        }
        writerWaiting = false
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
        writing = commit
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

    /// The writer appended and synced `commit`.
    mutating func committed(_ commit: Commit) -> [Action] {
        writing = nil
        recordRefusals(commit)
        guard !commit.bytes.isEmpty else {
            // Every append was refused: nothing was written.
            resolvedTicket = commit.tickets.upperBound
            var actions: [Action] = [.resolveDurability(through: resolvedTicket)]
            if !pending.isEmpty { actions.append(.wakeWriter) }
            return actions
        }
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
        resolvedTicket = commit.tickets.upperBound
        var actions: [Action] = [.resolveDurability(through: resolvedTicket)]
        if let last = commit.lineEnds.last {
            recordsEnd = max(recordsEnd, Position(segment: commit.segment, offset: commit.offset + last))
        }
        if !diskBacklog && bufferedRecords + commit.recordCount <= maximumBufferedRecords {
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
            diskBacklog = true
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
        if commit.recordCount > 0 { actions.append(.wakeDelivery) }
        if !pending.isEmpty { actions.append(.wakeWriter) }
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

    /// Fails the tickets of `commit`'s refused appends (their session lines were fenced).
    private mutating func recordRefusals(_ commit: Commit) {
        for ticket in commit.refused {
            failedTickets.append(
                (
                    ticket...ticket,
                    AnalyticsSinkError(
                        .superseded,
                        "a newer version of the session is stored; the push was not written"
                    )
                )
            )
        }
        if failedTickets.count > 4096 { failedTickets.removeFirst(failedTickets.count - 4096) }
    }

    /// The writer could not commit `commit`; the log removed every trace of it. Only the tickets of this
    /// commit fail; when `segmentUsable` is false the active segment is sealed and the next commit starts
    /// a new one.
    mutating func commitFailed(_ commit: Commit, _ error: AnalyticsSinkError, segmentUsable: Bool) -> [Action] {
        writing = nil
        recordRefusals(commit)
        queueBytes -= commit.bytes.count
        if !segmentUsable, let last = segments.last, last.index == commit.segment {
            segments[segments.count - 1].sealed = true
            nextSegmentIndex = max(nextSegmentIndex, commit.segment + 1)
        }
        failedTickets.append((commit.tickets, error))
        if failedTickets.count > 4096 { failedTickets.removeFirst(failedTickets.count - 4096) }
        resolvedTicket = commit.tickets.upperBound
        var actions: [Action] = [.resolveDurability(through: resolvedTicket)]
        if !pending.isEmpty { actions.append(.wakeWriter) }
        return actions
    }

    /// How `ticket`'s commit went: `nil` when it is durable (or not resolved yet), else the error of the
    /// commit that held it.
    func failure(for ticket: UInt64) -> AnalyticsSinkError? {
        failedTickets.last { $0.range.contains(ticket) }?.error
    }

    /// Whether every enqueued line has been committed (or failed).
    var everythingResolved: Bool { pending.isEmpty && writing == nil }

    // MARK: Delivery

    /// The end of the committed data.
    var durableEnd: Position {
        guard let active = segments.last else { return cursor }
        return max(cursor, Position(segment: active.index, offset: active.size))
    }

    /// Whether everything committed is delivered.
    var caughtUp: Bool { flights.isEmpty && bufferedRecords == 0 && !diskBacklog && cursor >= recordsEnd }

    /// The batches handed out by ``nextBatch()`` and not yet confirmed, oldest first.
    var inFlight: [Batch] { flights.filter { !$0.settled }.map(\.batch) }

    /// Where the next batch starts: after the last batch handed out, or at the acknowledged cursor.
    private var front: Position { flights.last?.batch.end ?? cursor }

    /// Whether the next batch would be a partial one from memory: a delivery slot is free, no disk backlog,
    /// and fewer committed records waiting than a batch holds (the delivery loop may linger for more).
    var holdsPartialBatch: Bool {
        flights.count < maximumInFlight && !diskBacklog && bufferedRecords > 0 && bufferedRecords < batchSize
    }

    /// The delivery loop's next step: a new batch to deliver (in flight until ``confirm(_:)``; the shell
    /// retries it until the destination settles it), a disk read to perform, or `.wait` when nothing new is
    /// committed or `maximumInFlight` batches are already out.
    /// The next batch to deliver, of at most `limit` records (the batch size by default).
    mutating func nextBatch(limit: Int? = nil) -> DeliveryStep {
        guard flights.count < maximumInFlight else { return .wait }
        if bufferedRecords > 0 {
            let batch = takeFromMemory(limit: max(1, min(limit ?? batchSize, batchSize)))
            flights.append((batch, false))
            return .deliver(batch)
        }
        if diskBacklog {
            return .readDisk(
                from: front,
                segments: segments.map { SegmentLog.SegmentExtent(index: $0.index, size: $0.size) },
                sealed: Set(segments.filter(\.sealed).map(\.index))
            )
        }
        return .wait
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
        var end = cursor
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

    /// A disk read asked for by ``nextBatch()`` came back. Returns the batch to deliver, or `nil` (ask
    /// ``nextBatch()`` again; `stale` when the read found nothing new, so the loop should not spin), and
    /// the actions (an acknowledgement when the read only skipped lines or unreadable segments).
    mutating func diskRead(_ result: SegmentLog.ReadResult, from start: Position)
        -> (batch: Batch?, stale: Bool, actions: [Action])
    {
        guard start == front, flights.count < maximumInFlight else { return (nil, false, []) }
        if !result.records.isEmpty {
            let batch = Batch(records: result.records, end: result.end)
            flights.append((batch, false))
            return (batch, false, [])
        }
        var actions: [Action] = []
        if result.end > start {
            // Only skipped lines or unreadable segments: acknowledged in turn, like a settled batch.
            flights.append((Batch(records: [], end: result.end), true))
            actions = acknowledgeSettled()
        }
        if result.end >= durableEnd {
            diskBacklog = false
            if actions.isEmpty && caughtUp { actions.append(.caughtUp) }
            return (nil, false, actions)
        }
        return (nil, result.end <= start, actions)
    }

    /// The destination settled `batch` (accepted or rejected every record). Its end is acknowledged once
    /// every batch before it is settled too — at once when it is the oldest in flight.
    mutating func confirm(_ batch: Batch) -> [Action] {
        // Batches in flight have distinct ends: the end names the batch (comparing the records themselves
        // would compare every field of every record).
        guard let index = flights.firstIndex(where: { !$0.settled && $0.batch.end == batch.end }) else { return [] }
        flights[index].settled = true
        return acknowledgeSettled()
    }

    /// Confirms every batch in flight that ends at or before `position` (the pipeline acknowledges through
    /// a batch's end once it and every batch before it are settled).
    mutating func confirm(through position: Position) -> [Action] {
        var any = false
        for index in flights.indices where !flights[index].settled && flights[index].batch.end <= position {
            flights[index].settled = true
            any = true
        }
        return any ? acknowledgeSettled() : []
    }

    /// Acknowledges the end of the longest settled prefix of the batches in flight.
    private mutating func acknowledgeSettled() -> [Action] {
        let settled = flights.prefix { $0.settled }.count
        guard settled > 0 else { return [] }
        let end = flights[settled - 1].batch.end
        flights.removeFirst(settled)
        return advance(to: end)
    }

    private mutating func advance(to end: Position) -> [Action] {
        if end > cursor { cursor = end }
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

    /// Moves the cursor past sealed segments it has reached the end of.
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
    }
}
