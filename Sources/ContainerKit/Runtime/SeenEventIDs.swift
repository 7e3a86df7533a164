#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The event IDs a session remembers (``SeenEventID``), oldest first, in a ring with an open-addressing table
/// of their hashes: a push with an ID looks it up, forgets what fell out of the ``EventIDWindow`` and remembers
/// its own, each in constant time — and, once the ring has grown to the session's bound, without allocating
/// when what the push fired packs into its entry (up to four tags with a plain status and no records; others
/// take one ``Detail``).
///
/// The ring is about 130 bytes per ID (a slot of 112 bytes: the ID's bytes and packed tags; beside it the hash,
/// the time and a table of twice the ring's size), plus what does not pack: tags with a message or records,
/// durability.
///
/// IDs are compared as bytes; the hash is a word-at-a-time multiply-and-mix with a seed drawn per process (a
/// client cannot choose IDs that collide in every process, and colliding IDs only slow down their own
/// session's look-ups, bounded by ``EventIDWindow/maximumCount``).
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

    /// Up to four fired tags, one per word (see ``FiredPacker``; 0 is no tag). A trivial value: more tags, or
    /// tags that do not pack, are kept in the slot's ``Detail``.
    struct Packed: Equatable {
        var a: UInt64 = 0
        var b: UInt64 = 0
        var c: UInt64 = 0
        var d: UInt64 = 0
    }

    /// One remembered ID (112 bytes; its hash and time are kept beside it), its bytes inline when they fit (48 bytes:
    /// a UUID, most message IDs), so that remembering and forgetting an ID neither retains nor releases anything.
    private struct Slot {
        var packed = Packed()
        var detail: Detail?
        var length = 0
        var inline: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
        /// The ID when it is longer than the inline bytes.
        var long: String?
    }

    /// How many bytes of an ID a slot holds inline.
    private static let inlineBytes = 48

    /// The entries, `count` of them from `head` on (wrapping), in `capacity` slots (a power of two), and the
    /// table of their positions by hash (linear probing from the hash's high half, twice the capacity): each
    /// entry is the high half of its ID's hash and its position + 1 (0 is empty), so that probing and moving
    /// entries never reads a slot. Raw storage: every push with an ID reads and writes a few slots, and an array
    /// would check its uniqueness on each write.
    @exclusivity(unchecked) private var slots: UnsafeMutablePointer<Slot>
    /// Each slot's hash and time, and whether it holds anything on the heap (a long ID, tags that do not pack in
    /// its words, a detail), beside the slots: what every push reads of the oldest entry stays in a few cache
    /// lines (16 KiB for 1,000 IDs), and a slot with nothing on the heap is forgotten without reading it.
    @exclusivity(unchecked) private var hashes: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var times: UnsafeMutablePointer<Int64>
    @exclusivity(unchecked) private var heavy: UnsafeMutablePointer<Bool>
    @exclusivity(unchecked) private var table: UnsafeMutablePointer<UInt64>
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private(set) var count = 0
    /// The sequence number of the oldest entry: entry `s` (while `s >= first`) is at ring position
    /// `head + s - first`.
    @exclusivity(unchecked) private(set) var first = 0

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
        table = .allocate(capacity: capacity * 2)
        table.initialize(repeating: 0, count: capacity * 2)
    }

    deinit {
        slots.deinitialize(count: capacity)
        slots.deallocate()
        hashes.deallocate()
        times.deallocate()
        heavy.deallocate()
        table.deallocate()
    }

    /// A set holding `events`, oldest first.
    convenience init(_ events: [SeenEventID]) {
        self.init(capacity: events.count)
        for event in events {
            let sequence = append(event.id, time: event.time, hash: Self.hash(event.id))
            var packer = FiredPacker()
            for tag in event.fired { packer.add(tag) }
            setFired(packer, of: sequence)
        }
    }

    private static func powerOfTwo(atLeast n: Int) -> Int {
        var capacity = 1
        while capacity < n { capacity <<= 1 }
        return capacity
    }

    private var mask: Int { capacity - 1 }
    private var tableMask: Int { capacity * 2 - 1 }

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
        SeenEventID(
            id: id(at: position),
            time: times[position],
            fired: slots[position].detail?.fired ?? FiredPacker.tags(of: slots[position].packed)
        )
    }

    /// The ID of the slot at `position`.
    private func id(at position: Int) -> String {
        if let long = slots[position].long { return long }
        let length = slots[position].length
        return withUnsafeBytes(of: &slots[position].inline) { String(decoding: $0.prefix(length), as: UTF8.self) }
    }

    // MARK: Look-up

    /// The entry of `id` (whose hash is `hash`), if remembered.
    func entry(_ id: String, hash: UInt64) -> Entry? {
        guard let position = position(of: id, hash: hash) else { return nil }
        return Entry(event: event(at: position), durability: slots[position].detail?.durability)
    }

    /// The table bucket a hash starts probing at, and the tag its entries carry.
    private func home(_ hash: UInt64) -> Int { Int(truncatingIfNeeded: hash >> 32) & tableMask }

    private func position(of id: String, hash: UInt64) -> Int? {
        let tag = hash >> 32
        let tableMask = tableMask
        var bucket = home(hash)
        while true {
            let entry = table[bucket]
            if entry == 0 { return nil }
            if entry >> 32 == tag {
                let position = Int(truncatingIfNeeded: entry & 0xFFFF_FFFF) - 1
                if hashes[position] == hash, holds(id, at: position) { return position }
            }
            bucket = (bucket + 1) & tableMask
        }
    }

    /// Whether the slot at `position` holds the bytes of `id`.
    private func holds(_ id: String, at position: Int) -> Bool {
        if let long = slots[position].long { return long.hasSameBytes(as: id) }
        let length = slots[position].length
        guard id.utf8.count == length else { return false }
        return id.withCString { text in
            withUnsafeBytes(of: &slots[position].inline) { memcmp($0.baseAddress!, text, length) == 0 }
        }
    }

    // MARK: Changes

    /// Remembers `id`, applied at `time` (newest); returns its sequence number. The caller prunes first, so that
    /// the set stays within its bound.
    func append(_ id: String, time: Int64, hash: UInt64) -> Int {
        if count == capacity { grow() }
        let position = (head + count) & mask
        hashes[position] = hash
        times[position] = time
        slots[position].packed = Packed()
        let length = id.utf8.count
        if length <= Self.inlineBytes {
            slots[position].length = length
            id.withCString { text in
                withUnsafeMutableBytes(of: &slots[position].inline) { _ = memcpy($0.baseAddress!, text, length) }
            }
        } else {
            slots[position].long = id
            heavy[position] = true
        }
        count += 1
        insert(position: position, hash: hash)
        return first + count - 1
    }

    /// Forgets the IDs older than `window` milliseconds at `now`, then the oldest beyond `maximumCount - room`
    /// (room for the IDs about to be added); returns how many were forgotten.
    func prune(now: Int64, window: Int64, maximumCount: Int, room: Int) -> Int {
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

    /// Keeps what the push of entry `sequence` fired (if the entry is still remembered).
    func setFired(_ fired: FiredPacker, of sequence: Int) {
        guard let position = position(ofSequence: sequence) else { return }
        slots[position].packed = fired.packed
        if fired.tags != nil || slots[position].detail != nil {
            slots[position].detail = Detail(fired: fired.tags, durability: slots[position].detail?.durability)
            heavy[position] = true
        }
    }

    /// Keeps what waits for the original push of entry `sequence` (if still remembered).
    func setDurability(_ durability: Durability, of sequence: Int) {
        guard let position = position(ofSequence: sequence) else { return }
        slots[position].detail = Detail(fired: slots[position].detail?.fired, durability: durability)
        heavy[position] = true
    }

    private func position(ofSequence sequence: Int) -> Int? {
        guard sequence >= first, sequence < first + count else { return nil }
        return (head + sequence - first) & mask
    }

    private func removeOldest() {
        let tableMask = tableMask
        var bucket = home(hashes[head])
        let target = UInt64(head + 1)
        while table[bucket] & 0xFFFF_FFFF != target { bucket = (bucket + 1) & tableMask }
        // Backward-shift deletion: later entries of the probe run move into the hole, so no tombstones build up.
        var hole = bucket
        var probe = (bucket + 1) & tableMask
        while table[probe] != 0 {
            let home = Int(truncatingIfNeeded: table[probe] >> 32) & tableMask
            // The entry at `probe` may fill the hole when the hole is on its way from its home to `probe`.
            if (probe - home) & tableMask >= (probe - hole) & tableMask {
                table[hole] = table[probe]
                hole = probe
            }
            probe = (probe + 1) & tableMask
        }
        table[hole] = 0
        if heavy[head] {
            slots[head].long = nil
            slots[head].detail = nil
            heavy[head] = false
        }
        head = (head + 1) & mask
        count -= 1
        first += 1
    }

    private func insert(position: Int, hash: UInt64) {
        let tableMask = tableMask
        var bucket = home(hash)
        while table[bucket] != 0 { bucket = (bucket + 1) & tableMask }
        table[bucket] = (hash >> 32) << 32 | UInt64(position + 1)
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
        table = .allocate(capacity: capacity * 2)
        table.initialize(repeating: 0, count: capacity * 2)
        head = 0
        for position in 0..<count { insert(position: position, hash: hashes[position]) }
    }

    // MARK: Hashing

    /// The process's seed.
    private static let seed: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next() | 1
    }()

    /// The hash of `id`'s UTF-8 bytes.
    static func hash(_ id: String) -> UInt64 {
        var zeroes: UInt64 = 0
        if let hash = id.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0), zeroes: &zeroes) }) {
            return hash
        }
        return Array(id.utf8).withUnsafeBytes { hash($0, zeroes: &zeroes) }
    }

    /// Keeps what the push of entry `sequence` did (if the entry is still remembered), taking `outcome`'s parts:
    /// its packed tags (unless it noted none: a committer's were noted before the commit), the tags that do not
    /// pack, and its durability.
    func finish(_ sequence: Int, _ outcome: inout FiredPacker) {
        guard let position = position(ofSequence: sequence) else { return }
        if outcome.notesFired { slots[position].packed = outcome.packed }
        guard let extra = outcome.extra, extra.tags != nil || extra.durability != nil else { return }
        slots[position].detail = Detail(
            fired: outcome.notesFired ? extra.tags : slots[position].detail?.fired,
            durability: extra.durability
        )
        heavy[position] = true
    }

    /// The hash of the UTF-8 bytes `bytes`, and in `zeroes` a non-zero value when a byte is 0 (a NUL): one pass,
    /// a word at a time (the bytes after the last whole word are read as the last eight bytes, shifted).
    @inline(__always)
    static func hash(_ bytes: UnsafeRawBufferPointer, zeroes: inout UInt64) -> UInt64 {
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

/// Collects what a push fired for its ``SeenEventID``: up to four tags with a plain status (`ok`, `unhandled`,
/// `unsupported`), no records, no durability and small numbers pack into ``SeenEventIDs/Packed`` words; otherwise
/// every tag is kept as a ``SeenEventID/Tag``. Also collects the durability tokens of the tags' records.
///
/// The common case (a few plain tags) is a trivial value: what does not pack lives in ``extra``, allocated only when
/// something does not, so that noting and dropping a packer retains and releases nothing else.
///
/// A packed tag is one word: bit 63 set, its status in bits 60–62, bit 59 whether it has a `tag_id`, its index
/// in bits 32–58 and its `tag_id` in bits 0–31.
struct FiredPacker {
    /// What does not pack: every tag once one does not, the records' tokens, what waits for the push.
    final class Extra {
        /// Every tag, once one does not pack (or a fifth comes).
        var tags: [SeenEventID.Tag]?
        /// The tokens of the records the tags made (and the push hooks', and the commit's).
        var tokens: [DurabilityToken] = []
        /// What waits for the push's records and commit, when anything does.
        var durability: SeenEventIDs.Durability?
    }

    var packed = SeenEventIDs.Packed()
    private var packedCount = 0
    /// Whether the tags were packed here (a turn with a committer notes them before its commit instead).
    var notesFired = true
    /// `nil` while everything packs.
    private(set) var extra: Extra?

    /// Every tag, once one does not pack.
    var tags: [SeenEventID.Tag]? { extra?.tags }
    /// What waits for the push's records and commit, when anything does.
    var durability: SeenEventIDs.Durability? { extra?.durability }

    private mutating func makeExtra() -> Extra {
        if let extra { return extra }
        let made = Extra()
        extra = made
        return made
    }

    /// Keeps `token`, which the push's durability waits for.
    mutating func addToken(_ token: DurabilityToken) { makeExtra().tokens.append(token) }

    /// Keeps `tokens`, which the push's durability waits for.
    mutating func addTokens(_ tokens: [DurabilityToken]) { makeExtra().tokens += tokens }

    /// Builds the durability from the tokens kept and `failure` (nothing when there are neither).
    mutating func noteDurability(failure: DurabilityError?) {
        guard failure != nil || !(extra?.tokens.isEmpty ?? true) else { return }
        let extra = makeExtra()
        extra.durability = SeenEventIDs.Durability(tokens: extra.tokens, failure: failure)
    }

    /// Packs the tag call with index `index`, `tag_id` `tagID` and plain status `code` (0 `ok`, 1 `unhandled`,
    /// 2 `unsupported`) when it packs; `false` when it does not (then ``add(index:tagID:status:output:)``).
    @inline(__always)
    mutating func packPlain(index: Int, tagID: Int?, code: Int) -> Bool {
        guard extra?.tags == nil, packedCount < 4, let word = Self.word(index: index, tagID: tagID, code: code) else {
            return false
        }
        pack(word)
        return true
    }

    /// Keeps `word`, the next packed tag.
    private mutating func pack(_ word: UInt64) {
        switch packedCount {
        case 0: packed.a = word
        case 1: packed.b = word
        case 2: packed.c = word
        default: packed.d = word
        }
        packedCount += 1
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
        let extra = makeExtra()
        if extra.tags == nil {
            extra.tags = Self.tags(of: packed)
            packed = SeenEventIDs.Packed()
            packedCount = 0
        }
        extra.tags!.append(tag)
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

    /// The tags `packed` holds, in order.
    static func tags(of packed: SeenEventIDs.Packed) -> [SeenEventID.Tag] {
        var tags: [SeenEventID.Tag] = []
        for word in [packed.a, packed.b, packed.c, packed.d] where word >> 63 == 1 {
            tags.append(
                SeenEventID.Tag(
                    index: Int((word >> 32) & (1 << 27 - 1)),
                    tagID: word & (1 << 59) != 0 ? Int(word & 0xFFFF_FFFF) : nil,
                    status: statuses[Int((word >> 60) & 7)]
                )
            )
        }
        return tags
    }
}
