#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The event IDs a session remembers (``SeenEventID``), oldest first, in a ring with an open-addressing table
/// of their hashes: a push with an ID looks it up, forgets what fell out of the ``EventIDWindow`` and remembers
/// its own, each in constant time — and, once the ring has grown to the session's bound, without allocating
/// when what the push fired packs into words (tags with a plain status and no records; others take one
/// ``Detail``).
///
/// The ring is about 130 bytes per ID (a slot of 88 bytes: the ID's bytes inline, where its packed tags are in
/// the word ring; beside it the hash, the time and a table of four times the ring's size), plus a word per
/// packed tag and what does not pack: tags with a message or records, durability.
///
/// Forgetting an ID does not touch the table: an entry whose sequence number is older than the ring's oldest is
/// stale, skipped by look-ups and reused by the next insertion on its probe path; the table is rebuilt from the
/// ring when live and stale entries fill half of it (once per ring's size of pushes at most).
///
/// IDs are compared as bytes; the hash is a word-at-a-time multiply-and-mix with a seed drawn per runtime (a
/// client cannot choose IDs that collide in every runtime, and colliding IDs only slow down their own
/// session's look-ups, bounded by ``EventIDWindow/maximumCount``): a hash match is confirmed on the full ID.
///
/// `@unchecked Sendable`: a session allocates it on its first push with an ID and touches it only under its
/// own lock (``DataLayer/State``); a snapshot copies the IDs out. The lock is also why its fields need no
/// dynamic exclusivity checks.
final class SeenEventIDs: @unchecked Sendable {
    /// A remembered ID's original push, for a duplicate.
    struct Entry {
        var event: SeenEventID
        /// What waits for the original push's records and commit, while this process holds them (an entry
        /// loaded from storage has none: it was stored).
        var durability: Durability?
    }

    /// The original push's durability: its tokens, and its commit's failure if the commit failed at once.
    final class Durability: Sendable {
        let tokens: [DurabilityToken]
        let failure: DurabilityError?

        init(tokens: [DurabilityToken], failure: DurabilityError?) {
            self.tokens = tokens
            self.failure = failure
        }
    }

    /// What an entry keeps that does not pack: all its tags when they do not, and its durability.
    final class Detail: Sendable {
        let fired: [SeenEventID.Tag]?
        let durability: Durability?

        init(fired: [SeenEventID.Tag]?, durability: Durability?) {
            self.fired = fired
            self.durability = durability
        }
    }

    /// One remembered ID (88 bytes; its hash and time are kept beside it), its bytes inline when they fit (48 bytes:
    /// a UUID, most message IDs), so that remembering and forgetting an ID neither retains nor releases anything.
    private struct Slot {
        var detail: Detail?
        /// The ID when it is longer than the inline bytes.
        var long: String?
        /// Where its packed tags start in the word ring (an absolute word number), and how many there are.
        var wordStart = 0
        var wordCount: Int32 = 0
        var length: Int32 = 0
        var inline: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
    }

    /// How many bytes of an ID a slot holds inline.
    private static let inlineBytes = 48

    /// The entries, `count` of them from `head` on (wrapping), in `capacity` slots (a power of two), and the
    /// table of their sequence numbers by hash (linear probing from the hash's high half, four times the
    /// capacity): each table entry is the high half of its ID's hash (top bit set, so that 0 is empty) and the
    /// low 32 bits of its sequence number, so that probing never reads a slot and forgetting never writes the
    /// table. Raw storage: every push with an ID reads and writes a few slots, and an array would check its
    /// uniqueness on each write.
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Slot>
    /// Each slot's hash and time, and whether it holds anything on the heap (a long ID, a detail), beside the
    /// slots: what every push reads of the oldest entry stays in a few cache lines, and a slot with nothing on
    /// the heap is forgotten without reading it.
    @exclusivity(unchecked) private var hashes: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var times: UnsafeMutablePointer<Int64>
    @exclusivity(unchecked) private var heavy: UnsafeMutablePointer<Bool>
    @exclusivity(unchecked) private var table: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var capacity: Int
    /// Table entries that are not empty (live or stale).
    @exclusivity(unchecked) private var used = 0
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private(set) var count = 0
    /// The sequence number of the oldest entry: entry `s` (while `s >= first`) is at ring position
    /// `head + s - first`.
    @exclusivity(unchecked) private(set) var first = 0
    /// The packed tags of the entries, in the order they were written (entry by entry, oldest first): word `w`
    /// (`wordHead <= w < wordTail`) is at `words[w & (wordCapacity - 1)]`. A packed tag is one word (see
    /// ``FiredWriter``).
    @exclusivity(unchecked) private var words: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var wordCapacity = 16
    @exclusivity(unchecked) private var wordHead = 0
    @exclusivity(unchecked) private var wordTail = 0
    /// The newest sequence number that has words: an older entry's tags are written as a ``Detail`` instead, so
    /// that the words stay in entry order and forgetting an entry frees the words before its end.
    @exclusivity(unchecked) private var wordsOwner = -1

    init(capacity: Int = 8) {
        let capacity = max(8, Self.powerOfTwo(atLeast: capacity))
        self.capacity = capacity
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: Slot(), count: capacity)
        hashes = .allocate(capacity: capacity)
        hashes.initialize(repeating: 0, count: capacity)
        times = .allocate(capacity: capacity)
        times.initialize(repeating: 0, count: capacity)
        heavy = .allocate(capacity: capacity)
        heavy.initialize(repeating: false, count: capacity)
        table = .allocate(capacity: capacity * 4)
        table.initialize(repeating: 0, count: capacity * 4)
        words = .allocate(capacity: wordCapacity)
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
        hashes.deallocate()
        times.deallocate()
        heavy.deallocate()
        table.deallocate()
        words.deallocate()
    }

    /// A set holding `events`, oldest first, hashed with `seed` (``TagManager/eventIDSeed``).
    convenience init(_ events: [SeenEventID], seed: UInt64) {
        self.init(capacity: events.count)
        for event in events {
            let sequence = append(event.id, time: event.time, hash: Self.hash(event.id, seed: seed), bucket: -1)
            setFired(event.fired, of: sequence)
        }
    }

    private static func powerOfTwo(atLeast n: Int) -> Int {
        var capacity = 1
        while capacity < n { capacity <<= 1 }
        return capacity
    }

    private var mask: Int { capacity - 1 }
    private var tableMask: Int { capacity * 4 - 1 }

    /// The remembered IDs, oldest first.
    var events: [SeenEventID] { suffix(count) }

    /// The newest `n` IDs, oldest first.
    func suffix(_ n: Int) -> [SeenEventID] {
        let n = min(n, count)
        guard n > 0 else { return [] }
        var list: [SeenEventID] = []
        list.reserveCapacity(n)
        for offset in (count - n)..<count { list.append(event(at: (head + offset) & mask)) }
        return list
    }

    private func event(at position: Int) -> SeenEventID {
        SeenEventID(id: id(at: position), time: times[position], fired: fired(at: position))
    }

    /// The tags of the slot at `position`.
    private func fired(at position: Int) -> [SeenEventID.Tag] {
        if let fired = slots[position].detail?.fired { return fired }
        let start = slots[position].wordStart
        let count = Int(slots[position].wordCount)
        let wordMask = wordCapacity - 1
        return (0..<count).map { FiredWriter.tag(of: words[(start + $0) & wordMask]) }
    }

    /// The ID of the slot at `position`.
    private func id(at position: Int) -> String {
        if let long = slots[position].long { return long }
        let length = Int(slots[position].length)
        return withUnsafeBytes(of: &slots[position].inline) { String(decoding: $0.prefix(length), as: UTF8.self) }
    }

    // MARK: Look-up

    /// Where a look-up ended: the position of the entry found, or the table bucket a new entry of the ID would
    /// go to (the first stale or empty one on its probe path).
    enum Lookup {
        case found(Int)
        case missing(bucket: Int)
    }

    /// The entry of `id` (whose hash is `hash`), if remembered.
    func entry(_ id: String, hash: UInt64) -> Entry? {
        guard case .found(let position) = lookup(id, hash: hash) else { return nil }
        return entry(at: position)
    }

    /// The entry at ring position `position`.
    func entry(at position: Int) -> Entry {
        Entry(event: event(at: position), durability: slots[position].detail?.durability)
    }

    /// The table bucket a hash starts probing at.
    private func home(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash >> 32) & tableMask }

    /// The tag a table entry of `hash` carries in its high half (top bit set: an entry is never 0).
    private static func tag(_ hash: UInt64) -> UInt64 { (hash >> 32 | 1 << 31) << 32 }

    /// The ring position of the table entry `entry` when it is live; `nil` when it is stale.
    @inline(__always)
    private func livePosition(_ entry: UInt64) -> Int? {
        let offset = Int(UInt32(truncatingIfNeeded: entry) &- UInt32(truncatingIfNeeded: first))
        return offset < count ? (head + offset) & mask : nil
    }

    /// Looks `id` (hashed `hash`) up.
    func lookup(_ id: String, hash: UInt64) -> Lookup {
        let tag = Self.tag(hash)
        let tableMask = tableMask
        var bucket = home(hash)
        var free = -1
        while true {
            let entry = table[bucket]
            if entry == 0 { return .missing(bucket: free >= 0 ? free : bucket) }
            if let position = livePosition(entry) {
                if entry & 0xFFFF_FFFF_0000_0000 == tag, hashes[position] == hash, holds(id, at: position) {
                    return .found(position)
                }
            } else if free < 0 {
                free = bucket
            }
            bucket = (bucket + 1) & tableMask
        }
    }

    /// Whether the slot at `position` holds the bytes of `id`.
    private func holds(_ id: String, at position: Int) -> Bool {
        if let long = slots[position].long { return long.hasSameBytes(as: id) }
        let length = Int(slots[position].length)
        guard id.utf8.count == length else { return false }
        return id.withCString { text in
            withUnsafeBytes(of: &slots[position].inline) { memcmp($0.baseAddress!, text, length) == 0 }
        }
    }

    // MARK: Changes

    /// Remembers `id`, applied at `time` (newest); returns its sequence number. `bucket` is where
    /// ``lookup(_:hash:)`` found room for it since the set last changed other than by forgetting, or -1. The
    /// caller prunes first, so that the set stays within its bound.
    func append(_ id: String, time: Int64, hash: UInt64, bucket: Int) -> Int {
        var bucket = bucket
        if count == capacity {
            grow()
            bucket = -1
        }
        let position = (head + count) & mask
        hashes[position] = hash
        times[position] = time
        slots[position].wordCount = 0
        let length = id.utf8.count
        if length <= Self.inlineBytes {
            slots[position].length = Int32(length)
            id.withCString { text in
                withUnsafeMutableBytes(of: &slots[position].inline) { _ = memcpy($0.baseAddress!, text, length) }
            }
        } else {
            slots[position].long = id
            heavy[position] = true
        }
        count += 1
        let sequence = first + count - 1
        insert(sequence: sequence, hash: hash, bucket: bucket)
        return sequence
    }

    /// Forgets the IDs older than `window` milliseconds at `now`, then the oldest beyond `maximumCount - room`
    /// (room for the IDs about to be added); returns how many were forgotten.
    @inline(__always)
    func prune(now: Int64, window: Int64, maximumCount: Int, room: Int) -> Int {
        guard count > 0, count > maximumCount &- room || times[head] < now &- window else { return 0 }
        return pruneOldest(now: now, window: window, maximumCount: maximumCount, room: room)
    }

    private func pruneOldest(now: Int64, window: Int64, maximumCount: Int, room: Int) -> Int {
        let oldest = now &- window
        let keep = max(0, maximumCount - room)
        var removed = 0
        while count > 0, count > keep || times[head] < oldest {
            removeOldest()
            removed += 1
        }
        return removed
    }

    /// ``prune(now:window:maximumCount:room:)`` with `window`'s bounds.
    func prune(now: Int64, window: EventIDWindow, room: Int) -> Int {
        prune(now: now, window: window.milliseconds, maximumCount: window.maximumCount, room: room)
    }

    /// Keeps `fired` as what the push of entry `sequence` fired (if the entry is still remembered).
    func setFired(_ fired: [SeenEventID.Tag], of sequence: Int) {
        guard let position = position(ofSequence: sequence) else { return }
        var writer = FiredWriter(self, sequence: sequence, writesTags: true)
        for tag in fired { writer.add(tag) }
        writer.finish(at: position, durability: nil)
    }

    /// Keeps what the push of entry `sequence` did (if the entry is still remembered), read from `result`: its
    /// tags when `withFired` (a committer's were noted before the commit: ``noteFired(_:of:)``), and what waits
    /// for its records and commit.
    func finish(_ sequence: Int, _ result: borrowing PushResult, withFired: Bool) {
        guard let position = position(ofSequence: sequence) else { return }
        var writer = FiredWriter(self, sequence: sequence, writesTags: withFired)
        result.packFired(into: &writer)
        // A session without a committer (`withFired`) has no commit to wait for.
        var failed = false
        if !withFired, case .some = result.commitFailure { failed = true }
        guard !writer.tokens.isEmpty || (!withFired && (!result.commits.isEmpty || failed)) else {
            if withFired { writer.finish(at: position, durability: nil) }
            return
        }
        writer.tokens += result.commits
        writer.finish(at: position, durability: Durability(tokens: writer.tokens, failure: result.commitFailure))
    }

    /// Keeps the tags `result` fired as what the push of entry `sequence` fired (before its commit takes the delta).
    func noteFired(_ result: borrowing PushResult, of sequence: Int) {
        guard let position = position(ofSequence: sequence) else { return }
        var writer = FiredWriter(self, sequence: sequence, writesTags: true)
        result.packFired(into: &writer)
        writer.finish(at: position, durability: nil, keepsDurability: true)
    }

    /// Sets the tags and durability of the slot at `position` from a writer: `words` packed tags from word
    /// `wordStart` on, or `tags` when they do not pack (`nil` with `writesTags` false: the tags are kept).
    fileprivate func setOutcome(
        at position: Int,
        writesTags: Bool,
        wordStart: Int,
        wordCount: Int,
        tags: [SeenEventID.Tag]?,
        durability: Durability?,
        keepsDurability: Bool
    ) {
        let durability = keepsDurability ? slots[position].detail?.durability : durability
        let kept = writesTags ? tags : slots[position].detail?.fired
        if writesTags {
            slots[position].wordStart = wordStart
            slots[position].wordCount = Int32(wordCount)
        }
        if kept != nil || durability != nil {
            slots[position].detail = Detail(fired: kept, durability: durability)
            heavy[position] = true
        } else if slots[position].detail != nil {
            slots[position].detail = nil
        }
    }

    private func position(ofSequence sequence: Int) -> Int? {
        guard sequence >= first, sequence < first + count else { return nil }
        return (head + sequence - first) & mask
    }

    /// Forgets the oldest entry (its table entry goes stale: see the type's documentation).
    private func removeOldest() {
        if slots[head].wordCount > 0 { wordHead = max(wordHead, slots[head].wordStart + Int(slots[head].wordCount)) }
        if heavy[head] {
            slots[head].long = nil
            slots[head].detail = nil
            heavy[head] = false
        }
        head = (head + 1) & mask
        count -= 1
        first += 1
        if count == 0 { wordHead = wordTail }
    }

    /// Puts sequence number `sequence` of hash `hash` in the table, at `bucket` when it is not -1.
    private func insert(sequence: Int, hash: UInt64, bucket: Int) {
        var bucket = bucket
        if bucket < 0 {
            let tableMask = tableMask
            bucket = home(hash)
            while table[bucket] != 0, livePosition(table[bucket]) != nil { bucket = (bucket + 1) & tableMask }
        }
        if table[bucket] == 0 { used += 1 }
        table[bucket] = Self.tag(hash) | UInt64(UInt32(truncatingIfNeeded: sequence))
        // Live and stale entries fill half the table: rebuilt from the ring (live ones at most a quarter).
        if used > capacity * 2 { rebuildTable() }
    }

    /// Empties the table and inserts the live entries again.
    private func rebuildTable() {
        table.update(repeating: 0, count: capacity * 4)
        used = 0
        let tableMask = tableMask
        for offset in 0..<count {
            let hash = hashes[(head + offset) & mask]
            var bucket = home(hash)
            while table[bucket] != 0 { bucket = (bucket + 1) & tableMask }
            table[bucket] = Self.tag(hash) | UInt64(UInt32(truncatingIfNeeded: first + offset))
            used += 1
        }
    }

    private func grow() {
        func moved<T>(_ old: UnsafeMutablePointer<T>, empty: T) -> UnsafeMutablePointer<T> {
            let larger = UnsafeMutablePointer<T>.allocate(capacity: capacity * 2)
            for offset in 0..<capacity {
                (larger + offset).moveInitialize(from: old + ((head + offset) & mask), count: 1)
            }
            (larger + capacity).initialize(repeating: empty, count: capacity)
            old.deallocate()
            return larger
        }
        slots = moved(slots, empty: Slot())
        hashes = moved(hashes, empty: 0)
        times = moved(times, empty: 0)
        heavy = moved(heavy, empty: false)
        table.deallocate()
        capacity *= 2
        table = .allocate(capacity: capacity * 4)
        head = 0
        rebuildTable()
    }

    // MARK: Words

    /// Appends `word` to the word ring (growing it when full); returns its number.
    fileprivate func appendWord(_ word: UInt64) -> Int {
        if wordTail - wordHead == wordCapacity { growWords() }
        words[wordTail & (wordCapacity - 1)] = word
        wordTail += 1
        return wordTail - 1
    }

    /// The words from `start` on, `count` of them.
    fileprivate func words(from start: Int, count: Int) -> [UInt64] {
        (0..<count).map { words[(start + $0) & (wordCapacity - 1)] }
    }

    /// The first word a new entry's tags would take, when entry `sequence` may take words (see ``wordsOwner``).
    fileprivate func wordStart(for sequence: Int) -> Int? {
        guard sequence >= wordsOwner else { return nil }
        wordsOwner = sequence
        return wordTail
    }

    /// Drops the words from `start` on (the newest): their tags were kept another way.
    fileprivate func dropWords(from start: Int) { wordTail = start }

    private func growWords() {
        let larger = UnsafeMutablePointer<UInt64>.allocate(capacity: wordCapacity * 2)
        for word in wordHead..<wordTail { larger[word & (wordCapacity * 2 - 1)] = words[word & (wordCapacity - 1)] }
        words.deallocate()
        words = larger
        wordCapacity *= 2
    }

    // MARK: Hashing

    /// The hash of `id`'s UTF-8 bytes, with `seed`.
    static func hash(_ id: String, seed: UInt64) -> UInt64 {
        var zeroes: UInt64 = 0
        if let hash = id.utf8.withContiguousStorageIfAvailable({
            hash(UnsafeRawBufferPointer($0), seed: seed, zeroes: &zeroes)
        }) {
            return hash
        }
        return Array(id.utf8).withUnsafeBytes { hash($0, seed: seed, zeroes: &zeroes) }
    }

    /// The hash of the UTF-8 bytes `bytes` with `seed`, and in `zeroes` a non-zero value when a byte is 0 (a NUL):
    /// one pass, a word at a time (the bytes after the last whole word are read as the last eight bytes, shifted).
    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64, zeroes: inout UInt64) -> UInt64 {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        let count = bytes.count
        var h = seed ^ (UInt64(count) &* 0x9E37_79B9_7F4A_7C15)
        var offset = 0
        while offset + 8 <= count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            zeroes |= (word &- ones) & ~word & highs
            h = (h ^ word) &* 0xBF58_476D_1CE4_E5B9
            h ^= h >> 31
            offset += 8
        }
        let rest = count - offset
        if rest > 0 {
            var tail: UInt64 = 0
            if count >= 8 {
                // The last eight bytes: the `rest` new ones are the high bytes (little-endian), the others were
                // hashed (and checked) already. A borrow in the check comes only from a zero byte below.
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: count - 8, as: UInt64.self))
                zeroes |= (word &- ones) & ~word & highs & ~(UInt64.max >> UInt64(rest * 8))
                tail = word >> UInt64((8 - rest) * 8)
            } else {
                var shift: UInt64 = 0
                while offset < count {
                    let byte = bytes[offset]
                    if byte == 0 { zeroes |= 1 }
                    tail |= UInt64(byte) << shift
                    shift += 8
                    offset += 1
                }
            }
            h = (h ^ tail) &* 0xBF58_476D_1CE4_E5B9
        }
        h ^= h >> 33
        h &*= 0xFF51_AFD7_ED55_8CCD
        h ^= h >> 33
        return h
    }
}

/// Writes what a push fired into its entry of a ``SeenEventIDs``: tags with a plain status (`ok`, `unhandled`,
/// `unsupported`), no records and small numbers pack into one word each, written straight into the set's word
/// ring; once one does not, every tag is kept as a ``SeenEventID/Tag`` in the entry's ``SeenEventIDs/Detail``.
/// Also collects the durability tokens of the tags' records.
///
/// A packed tag is one word: bit 63 set, its status in bits 60–62, bit 59 whether it has a `tag_id`, its index
/// in bits 32–58 and its `tag_id` in bits 0–31.
struct FiredWriter {
    /// Unretained: the writer lives within a call on the set.
    unowned(unsafe) let set: SeenEventIDs
    /// Whether the tags are written (a turn with a committer notes them before its commit instead).
    let writesTags: Bool
    /// Where the entry's words start; `nil` when the entry cannot take words (its tags go to ``tags``).
    private var start: Int?
    private var count = 0
    /// Every tag, once one does not pack.
    private(set) var tags: [SeenEventID.Tag]?
    /// The tokens of the records the tags made (and the push hooks').
    var tokens: [DurabilityToken] = []

    init(_ set: SeenEventIDs, sequence: Int, writesTags: Bool) {
        self.set = set
        self.writesTags = writesTags
        if writesTags {
            start = set.wordStart(for: sequence)
            if start == nil { tags = [] }
        }
    }

    /// Keeps `token`, which the push's durability waits for.
    mutating func addToken(_ token: DurabilityToken) { tokens.append(token) }

    /// Packs the tag call with index `index`, `tag_id` `tagID` and plain status `code` (0 `ok`, 1 `unhandled`,
    /// 2 `unsupported`) when it packs; `false` when it does not (then ``add(index:tagID:status:output:)``).
    @inline(__always)
    mutating func packPlain(index: Int, tagID: Int?, code: Int) -> Bool {
        guard writesTags else { return true }
        guard tags == nil, let word = Self.word(index: index, tagID: tagID, code: code) else { return false }
        _ = set.appendWord(word)
        count += 1
        return true
    }

    private static let statuses = ["ok", "unhandled", "unsupported"]

    /// The packing code of a plain status; `nil` for the others.
    @inline(__always)
    static func code(of status: borrowing FiredTag.Status) -> Int? {
        switch status {
        case .ok: return 0
        case .unhandled: return 1
        case .unsupported: return 2
        default: return nil
        }
    }

    /// Adds a tag call: its index, `tag_id`, status and output.
    mutating func add(index: Int, tagID: Int?, status: FiredTag.Status, output: TagOutput?) {
        if let token = output?.durability { addToken(token) }
        guard writesTags else { return }
        if output?.records.isEmpty ?? true, let code = Self.code(of: status),
            packPlain(index: index, tagID: tagID, code: code)
        {
            return
        }
        var recordIDs: [String] = []
        if let records = output?.records, !records.isEmpty {
            recordIDs.reserveCapacity(records.count)
            for record in records { if let id = record.recordID { recordIDs.append(id) } }
        }
        add(
            SeenEventID.Tag(
                index: index,
                tagID: tagID,
                status: status.name,
                message: status.message,
                recordIDs: recordIDs
            )
        )
    }

    /// Adds a tag's summary.
    mutating func add(_ tag: SeenEventID.Tag) {
        if tag.message == nil, tag.recordIDs.isEmpty, let code = Self.statuses.firstIndex(of: tag.status),
            packPlain(index: tag.index, tagID: tag.tagID, code: code)
        {
            return
        }
        if tags == nil {
            // The words written so far become tags, and their room is given back.
            if let start {
                tags = set.words(from: start, count: count).map(Self.tag(of:))
                set.dropWords(from: start)
            } else {
                tags = []
            }
            count = 0
        }
        tags!.append(tag)
    }

    /// Writes the tags to the entry at `position`, with `durability` (or, when `keepsDurability`, the one the
    /// entry has).
    func finish(at position: Int, durability: SeenEventIDs.Durability?, keepsDurability: Bool = false) {
        set.setOutcome(
            at: position,
            writesTags: writesTags,
            wordStart: start ?? 0,
            wordCount: tags == nil ? count : 0,
            tags: tags,
            durability: durability,
            keepsDurability: keepsDurability
        )
    }

    private static func word(index: Int, tagID: Int?, code: Int) -> UInt64? {
        guard index >= 0, index < 1 << 27 else { return nil }
        var word = UInt64(1) << 63 | UInt64(code) << 60 | UInt64(index) << 32
        if let tagID {
            guard tagID >= 0, tagID <= Int(UInt32.max) else { return nil }
            word |= 1 << 59 | UInt64(tagID)
        }
        return word
    }

    /// The tag a packed word holds.
    static func tag(of word: UInt64) -> SeenEventID.Tag {
        SeenEventID.Tag(
            index: Int((word >> 32) & (1 << 27 - 1)),
            tagID: word & (1 << 59) != 0 ? Int(word & 0xFFFF_FFFF) : nil,
            status: statuses[Int((word >> 60) & 7)]
        )
    }
}
