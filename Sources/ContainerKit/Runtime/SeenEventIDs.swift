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
/// Forgetting an ID takes its table entry out (linear probing's backward-shift deletion: the entries after it
/// on its cluster move up), so that the table holds the live entries only, a quarter of it at most, and is never
/// rebuilt but when the ring grows.
///
/// IDs are compared as bytes; the hash is wyhash's 128-bit multiply-and-fold, 16 bytes a step, with a seed drawn
/// per runtime (a
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
    /// low 32 bits of its sequence number, so that probing never reads a slot. Raw storage: every push with an ID reads and writes a few slots, and an array would check its
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
    /// `capacity - 1` and `capacity * 4 - 1`, the masks of ring positions and table buckets (kept, not computed
    /// at each use: every push with an ID uses them several times).
    @exclusivity(unchecked) private var mask: Int
    @exclusivity(unchecked) private var tableMask: Int
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
        mask = capacity - 1
        tableMask = capacity * 4 - 1
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

    /// The entry at ring position `position`.
    func entry(at position: Int) -> Entry {
        Entry(event: event(at: position), durability: slots[position].detail?.durability)
    }

    /// The tag a table entry of `hash` carries in its high half (top bit set: an entry is never 0).
    private static func tag(_ hash: UInt64) -> UInt64 { (hash >> 32 | 1 << 31) << 32 }

    /// The table bucket a hash starts probing at.
    @inline(__always)
    private func home(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash >> 32) & tableMask }

    /// The ring position of the (live) table entry `entry`.
    @inline(__always)
    private func position(ofEntry entry: UInt64) -> Int {
        (head &+ Int(UInt32(truncatingIfNeeded: entry) &- UInt32(truncatingIfNeeded: first))) & mask
    }

    /// What ``admit(_:hash:now:window:maximumCount:remembers:)`` did.
    struct Admission {
        /// The ring position of the entry the ID matched; -1 when it matched none.
        var found = -1
        /// The sequence number of the entry made for the ID; -1 when none was made.
        var sequence = -1
        /// How many entries were forgotten (past the window's time or count).
        var forgotten = 0
    }

    /// A push's one call on the set, with one probe of the table: forgets the IDs older than `window`
    /// milliseconds at `now` and the oldest beyond `maximumCount`, looks `id` (hashed `hash`) up, and when the set
    /// does not hold it and `remembers`, forgets the oldest beyond `maximumCount - 1` and remembers `id`, applied at
    /// `now` (newest), in the bucket its probe ended at.
    ///
    /// (Forgetting an entry empties one bucket, its deletion's last hole, and fills none: the probe's first empty
    /// bucket stays where the new entry goes unless that hole lies before it on the probe path.)
    func admit(
        _ id: String,
        hash: UInt64,
        now: Int64,
        window: Int64,
        maximumCount: Int,
        remembers: Bool
    ) -> Admission {
        var admission = Admission()
        if count > 0, count > maximumCount || times[head] < now &- window {
            admission.forgotten = pruneOldest(now: now, window: window, maximumCount: maximumCount, room: 0)
        }
        let tag = Self.tag(hash)
        let tableMask = tableMask
        let home = home(hash)
        var bucket = home
        while true {
            let entry = table[bucket]
            if entry == 0 { break }
            if entry & 0xFFFF_FFFF_0000_0000 == tag {
                let position = position(ofEntry: entry)
                if hashes[position] == hash, holds(id, at: position) {
                    admission.found = position
                    return admission
                }
            }
            bucket = (bucket &+ 1) & tableMask
        }
        guard remembers else { return admission }
        while count > 0, count >= maximumCount {
            let hole = removeOldest()
            if (hole &- home) & tableMask < (bucket &- home) & tableMask { bucket = hole }
            admission.forgotten &+= 1
        }
        admission.sequence = append(id, time: now, hash: hash, bucket: bucket)
        return admission
    }

    /// Whether the slot at `position` holds the bytes of `id` (out of line: a probe calls it only when a table
    /// entry's tag matches, for a new ID almost never).
    @inline(never)
    private func holds(_ id: String, at position: Int) -> Bool {
        if let long = slots[position].long { return long.hasSameBytes(as: id) }
        let length = Int(slots[position].length)
        guard id.utf8.count == length else { return false }
        return id.withCString { text in
            withUnsafeBytes(of: &slots[position].inline) { memcmp($0.baseAddress!, text, length) == 0 }
        }
    }

    // MARK: Changes

    /// Remembers `id`, applied at `time` (newest); returns its sequence number. `bucket` is the first empty
    /// bucket on its probe path (``admit(_:hash:now:window:maximumCount:remembers:)``'s), or -1. The caller
    /// forgets first, so that the set stays within its bound.
    @inline(__always)
    private func append(_ id: String, time: Int64, hash: UInt64, bucket: Int) -> Int {
        var bucket = bucket
        if count == capacity {
            grow()
            bucket = -1
        }
        let position = (head &+ count) & mask
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
        count &+= 1
        let sequence = first &+ count &- 1
        insert(sequence: sequence, hash: hash, bucket: bucket)
        return sequence
    }

    /// Forgets the IDs older than `window` milliseconds at `now`, then the oldest beyond `maximumCount - room`
    /// (room for the IDs about to be added); returns how many were forgotten.
    @inline(never)
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

    /// Keeps `fired` as what the push of entry `sequence` fired (if the entry is still remembered).
    func setFired(_ fired: [SeenEventID.Tag], of sequence: Int) {
        guard let position = position(ofSequence: sequence) else { return }
        var writer = FiredWriter(self, sequence: sequence, writesTags: true)
        for tag in fired { writer.add(tag) }
        writer.finish(at: position, durability: nil)
    }

    /// Keeps `summary` (complete: ``FiredSummary/isComplete``) as what the push of entry `sequence` fired (if the
    /// entry is still remembered), its words copied into the word ring; the entry's durability is kept.
    ///
    /// `summary` is `inout` only so that the caller's (a turn's, in a lock's closure) is read in place: it is not
    /// changed (as `borrowing`, it was copied whole on every push).
    func setFired(_ summary: inout FiredSummary, of sequence: Int) {
        guard let position = position(ofSequence: sequence) else { return }
        guard sequence >= wordsOwner else {
            setFired(asDetail: summary, of: sequence, at: position)
            return
        }
        wordsOwner = sequence
        let start = wordTail
        let added = summary.count
        // Room for a whole summary: its four words are stored whatever its count (those past it into free words
        // of the ring), four stores rather than a loop.
        while wordTail &- wordHead &+ FiredSummary.capacity > wordCapacity { growWords() }
        summary.store(into: words, at: start, mask: wordCapacity &- 1)
        wordTail = start &+ added
        slots[position].wordStart = start
        slots[position].wordCount = Int32(truncatingIfNeeded: added)
        if slots[position].detail != nil {
            setOutcome(
                at: position,
                writesTags: true,
                wordStart: start,
                wordCount: summary.count,
                tags: nil,
                durability: nil,
                keepsDurability: true
            )
        }
    }

    /// ``setFired(_:of:)`` for an entry a newer entry's words follow: its tags are kept in its detail. (Out of line,
    /// as the other rare paths of a push's calls on the set: inlined, their frames and spills cost every push.)
    @inline(never)
    private func setFired(asDetail summary: borrowing FiredSummary, of sequence: Int, at position: Int) {
        var writer = FiredWriter(self, sequence: sequence, writesTags: true)
        for index in 0..<summary.count { writer.add(FiredWriter.tag(of: summary.word(index))) }
        writer.finish(at: position, durability: nil, keepsDurability: true)
    }

    /// Keeps what the push of entry `sequence` did (if the entry is still remembered), read from `result`: its
    /// tags when `withFired` (a committer's were noted before the commit: ``noteFired(_:of:)``), and what waits
    /// for its records and commit.
    ///
    /// `result` is `inout` only so that a caller holding it `inout` (a turn, in a lock's closure) passes it in place:
    /// it is not changed (as `borrowing`, it was copied whole on every push).
    func finish(_ sequence: Int, _ result: inout PushResult, withFired: Bool) {
        guard let position = position(ofSequence: sequence) else { return }
        if withFired, packPlainFired(&result, of: sequence, at: position) { return }
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

    /// What ``finish(_:_:withFired:)`` does with `withFired` for the common push, without a ``FiredWriter``:
    /// when every tag `result` fired packs into a word (a plain status, no records, nothing to wait for) and no
    /// push hook's output waits for durability, writes the words as the tags of entry `sequence` (at ring
    /// position `position`), drops its detail and returns `true`; otherwise writes nothing and returns `false`.
    /// (`result` is `inout` so that it is read in place, not copied: it is not changed.)
    private func packPlainFired(_ result: inout PushResult, of sequence: Int, at position: Int) -> Bool {
        guard sequence >= wordsOwner else { return false }
        let start = wordTail
        guard result.appendPlainFiredWords(to: self) else {
            wordTail = start
            return false
        }
        wordsOwner = sequence
        slots[position].wordStart = start
        slots[position].wordCount = Int32(truncatingIfNeeded: wordTail &- start)
        if slots[position].detail != nil { slots[position].detail = nil }
        return true
    }

    /// Sets the tags and durability of the slot at `position` from a writer: `words` packed tags from word
    /// `wordStart` on, or `tags` when they do not pack (`nil` with `writesTags` false: the tags are kept).
    @inline(never)
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
        guard sequence >= first, sequence < first &+ count else { return nil }
        return (head &+ sequence &- first) & mask
    }

    /// Forgets the oldest entry, and takes its table entry out; returns the bucket that deletion emptied.
    @discardableResult @inline(__always)
    private func removeOldest() -> Int {
        let hash = hashes[head]
        let hole = removeFromTable(Self.tag(hash) | UInt64(UInt32(truncatingIfNeeded: first)), hash: hash)
        let wordCount = Int(slots[head].wordCount)
        if wordCount > 0 { wordHead = max(wordHead, slots[head].wordStart &+ wordCount) }
        if heavy[head] { release(at: head) }
        head = (head &+ 1) & mask
        count &-= 1
        first &+= 1
        if count == 0 { wordHead = wordTail }
        return hole
    }

    /// Releases what the slot at `position` holds on the heap (a long ID, a detail).
    @inline(never)
    private func release(at position: Int) {
        slots[position].long = nil
        slots[position].detail = nil
        heavy[position] = false
    }

    /// Puts sequence number `sequence` of hash `hash` in the table, at `bucket` when it is not -1.
    @inline(__always)
    private func insert(sequence: Int, hash: UInt64, bucket: Int) {
        var bucket = bucket
        if bucket < 0 {
            let tableMask = tableMask
            bucket = home(hash)
            while table[bucket] != 0 { bucket = (bucket &+ 1) & tableMask }
        }
        table[bucket] = Self.tag(hash) | UInt64(UInt32(truncatingIfNeeded: sequence))
    }

    /// Takes the table entry `entry` (of an ID hashed `hash`) out: the entries after it on its cluster that
    /// could not sit before it move up into the hole, so that every entry stays reachable from its home bucket
    /// without an empty bucket between. Returns the bucket it emptied (the hole the last move left).
    @inline(__always)
    private func removeFromTable(_ entry: UInt64, hash: UInt64) -> Int {
        let tableMask = tableMask
        var hole = home(hash)
        while table[hole] != entry {
            if table[hole] == 0 { return hole }  // not there (cannot happen: every live entry is in the table)
            hole = (hole &+ 1) & tableMask
        }
        var next = (hole &+ 1) & tableMask
        while true {
            let moving = table[next]
            if moving == 0 { break }
            // The moving entry's home, from its hash's high half (the tag): it may fill the hole unless its home
            // lies after the hole, up to where it sits (cyclically).
            let home = Int(truncatingIfNeeded: moving >> 32) & tableMask
            if (next &- home) & tableMask >= (next &- hole) & tableMask {
                table[hole] = moving
                hole = next
            }
            next = (next &+ 1) & tableMask
        }
        table[hole] = 0
        return hole
    }

    /// Empties the table and inserts the live entries again.
    private func rebuildTable() {
        table.update(repeating: 0, count: capacity * 4)
        let tableMask = tableMask
        for offset in 0..<count {
            let hash = hashes[(head + offset) & mask]
            var bucket = home(hash)
            while table[bucket] != 0 { bucket = (bucket + 1) & tableMask }
            table[bucket] = Self.tag(hash) | UInt64(UInt32(truncatingIfNeeded: first + offset))
        }
    }

    @inline(never)
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
        mask = capacity - 1
        tableMask = capacity * 4 - 1
        table = .allocate(capacity: capacity * 4)
        head = 0
        rebuildTable()
    }

    // MARK: Words

    /// Appends `word` to the word ring (growing it when full); returns its number.
    @discardableResult
    func appendWord(_ word: UInt64) -> Int {
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

    @inline(never)
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
    /// one pass, 16 bytes a step (wyhash's: each step multiplies two words into 128 bits and folds the halves; the
    /// bytes after the last whole step are read as the last 16 bytes). Both factors of every multiplication
    /// carry the seed, so that no chosen bytes cancel it.
    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer, seed: UInt64, zeroes: inout UInt64) -> UInt64 {
        let p0: UInt64 = 0xA076_1D64_78BD_642F
        let p1: UInt64 = 0xE703_7ED1_A0B4_28DB
        let count = bytes.count
        let secret = seed ^ p1
        var state = seed ^ p0
        var a: UInt64 = 0
        var b: UInt64 = 0
        if count > 16 {
            var offset = 0
            while count &- offset > 16 {
                let x = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                let y = bytes.loadUnaligned(fromByteOffset: offset &+ 8, as: UInt64.self)
                zeroes |= zeroBytes(x) | zeroBytes(y)
                state = fold(x ^ secret, y ^ state)
                offset &+= 16
            }
            a = bytes.loadUnaligned(fromByteOffset: count &- 16, as: UInt64.self)
            b = bytes.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            zeroes |= zeroBytes(a) | zeroBytes(b)
        } else if count >= 8 {
            a = bytes.loadUnaligned(as: UInt64.self)
            b = bytes.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
            zeroes |= zeroBytes(a) | zeroBytes(b)
        } else if count >= 4 {
            let low = bytes.loadUnaligned(as: UInt32.self)
            let high = bytes.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
            zeroes |= UInt64((low &- 0x0101_0101) & ~low & 0x8080_8080)
            zeroes |= UInt64((high &- 0x0101_0101) & ~high & 0x8080_8080)
            a = UInt64(low) << 32 | UInt64(high)
        } else if count > 0 {
            // One to three bytes: the first, the middle and the last are every byte.
            let first = bytes[0]
            let middle = bytes[count >> 1]
            let last = bytes[count &- 1]
            if first == 0 || middle == 0 || last == 0 { zeroes |= 1 }
            a = UInt64(first) << 16 | UInt64(middle) << 8 | UInt64(last)
        }
        let (high, low) = (a ^ secret).multipliedFullWidth(by: b ^ state)
        return fold(low ^ p0 ^ UInt64(count), high ^ p1)
    }

    /// The two halves of `a × b` (128 bits), folded.
    @inline(__always)
    private static func fold(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (high, low) = a.multipliedFullWidth(by: b)
        return high ^ low
    }

    /// Non-zero when a byte of `word` is 0 (exactly: a borrow reaches a byte's top bit only from a zero byte).
    @inline(__always)
    private static func zeroBytes(_ word: UInt64) -> UInt64 {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080
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

    /// The packed word of `call` (whose tag has `tagID`) when it packs as a plain tag: a plain status, no records
    /// and no durability, and numbers that fit; `nil` otherwise.
    @inline(__always)
    static func plainWord(of call: borrowing FiredCall, tagID: Int?) -> UInt64? {
        guard call.output?.hasNoRecordsOrDurability ?? true, let code = code(of: call.status) else { return nil }
        return word(index: call.tag, tagID: tagID, code: code)
    }

    /// The packed word of a tag call (see the type's documentation); `nil` when its numbers do not fit.
    @inline(__always)
    static func word(index: Int, tagID: Int?, code: Int) -> UInt64? {
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
