/// A string-keyed map of ``Value``s that remembers the order keys were first inserted.
///
/// Order matters to people reading output (a function-call tag's arguments print in the order the
/// container lists them); equality and hashing ignore it, as JSON object equality does.
///
/// Keys are compared by their UTF-8 bytes, as JavaScript compares property names (code units), not by
/// Unicode canonical equivalence: `"caf\u{E9}"` and `"cafe\u{301}"` are two keys.
///
/// Small maps — a push, a tag's arguments — are two parallel arrays searched linearly, which costs less
/// than hashing; a map that grows past ``indexThreshold`` entries also keeps a hash index.
public struct ValueMap: Sendable {
    /// The keys, in insertion order.
    public private(set) var keys: [String] = []
    private var values: [Value] = []
    /// Open addressing over ``keys`` by ``ByteHash``: a power-of-two table of entry positions plus one (0 is
    /// an empty slot), at most half full. Cheaper to probe and to build than a `Dictionary` (no SipHash, no
    /// copies of the keys).
    private var index: [Int32]?

    /// Maps with more entries than this keep a hash index.
    static let indexThreshold = 12

    /// Creates an empty map.
    public init() {}

    /// Creates an empty map with room for `capacity` entries.
    public init(minimumCapacity capacity: Int) {
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
    }

    /// The number of entries.
    public var count: Int { keys.count }

    /// Whether the map has no entries.
    public var isEmpty: Bool { keys.isEmpty }

    /// Creates a map of `keys` (distinct, which the caller guarantees) and `values`, in that order.
    init(distinctKeys keys: [String], values: [Value]) {
        self.keys = keys
        self.values = values
        if keys.count > ValueMap.indexThreshold { index = ValueMap.makeIndex(keys) }
    }

    /// The position of `key`, if present.
    @inline(__always)
    private func position(of key: String) -> Int? {
        if index != nil { return indexedPosition(of: key) }
        for i in keys.indices where keys[i].hasSameBytes(as: key) { return i }
        return nil
    }

    private func indexedPosition(of key: String) -> Int? {
        guard let index else { return nil }
        let mask = index.count &- 1
        var slot = Int(truncatingIfNeeded: ByteHash.hash(key)) & mask
        while true {
            let entry = Int(index[slot])
            if entry == 0 { return nil }
            if keys[entry &- 1].hasSameBytes(as: key) { return entry &- 1 }
            slot = (slot &+ 1) & mask
        }
    }

    /// An index of `keys` with room for twice as many.
    private static func makeIndex(_ keys: [String]) -> [Int32] {
        var capacity = 32
        while capacity < keys.count * 2 { capacity <<= 1 }
        var table = [Int32](repeating: 0, count: capacity)
        for i in keys.indices { insert(i, key: keys[i], into: &table) }
        return table
    }

    /// Records that `key` is at `position` (the key is not in the table yet, and the table has room).
    private static func insert(_ position: Int, key: String, into table: inout [Int32]) {
        let mask = table.count &- 1
        var slot = Int(truncatingIfNeeded: ByteHash.hash(key)) & mask
        while table[slot] != 0 { slot = (slot &+ 1) & mask }
        table[slot] = Int32(truncatingIfNeeded: position &+ 1)
    }

    /// Reads or writes the value for `key`. Writing `nil` removes the entry.
    public subscript(key: String) -> Value? {
        get {
            guard let i = position(of: key) else { return nil }
            return values[i]
        }
        set {
            if let newValue {
                set(newValue, forKey: key)
            } else {
                removeValue(forKey: key)
            }
        }
    }

    /// Sets the value of `key` (one look-up; no `Optional` in between, unlike the subscript).
    mutating func setValue(_ value: Value, forKey key: String) { set(value, forKey: key) }

    /// Sets the value of `key`, looking at position `hint` first (where the caller found the key last time);
    /// `hint` is then the key's position. For a key set on every push (the session model's `event`).
    mutating func setValue(_ value: Value, forKey key: String, hint: inout Int) {
        if hint >= 0, hint < keys.count, keys[hint].hasSameBytes(as: key) {
            values[hint] = value
            return
        }
        hint = set(value, forKey: key)
    }

    /// Sets the value of `key` with one search, whether the key is there or not; returns its position.
    @discardableResult
    private mutating func set(_ value: Value, forKey key: String) -> Int {
        if let i = position(of: key) {
            values[i] = value
            return i
        }
        append(key, value)
        return keys.count - 1
    }

    /// The value of the entry at `position` (an index into ``keys``): a walk over `keys.indices` reads the
    /// entries without the iterator's copies of both arrays.
    package func value(at position: Int) -> Value { values[position] }

    /// Calls `body` with the value of the entry at `position`, borrowed (not copied).
    @inline(__always)
    package func withValue<R>(at position: Int, _ body: (borrowing Value) -> R) -> R { body(values[position]) }

    /// Appends an entry whose key the caller knows is not in the map (no search).
    package mutating func appendNew(_ key: String, _ value: Value) { append(key, value) }

    private mutating func append(_ key: String, _ value: Value) {
        keys.append(key)
        values.append(value)
        if index != nil {
            if keys.count * 2 > index!.count {
                index = ValueMap.makeIndex(keys)
            } else {
                ValueMap.insert(keys.count - 1, key: key, into: &index!)
            }
        } else if keys.count > ValueMap.indexThreshold {
            index = ValueMap.makeIndex(keys)
        }
    }

    /// Removes the entry for `key` and returns its value.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> Value? {
        guard let i = position(of: key) else { return nil }
        keys.remove(at: i)
        let old = values.remove(at: i)
        if index != nil { index = keys.count > ValueMap.indexThreshold ? ValueMap.makeIndex(keys) : nil }
        return old
    }

    /// Changes the value of an existing entry in place, or inserts `defaultValue` and changes that.
    public mutating func modify<R>(
        _ key: String,
        default defaultValue: @autoclosure () -> Value,
        _ body: (inout Value) throws -> R
    ) rethrows -> R {
        let i: Int
        if let found = position(of: key) {
            i = found
        } else {
            append(key, defaultValue())
            i = keys.count - 1
        }
        return try body(&values[i])
    }
}

extension ValueMap: Sequence {
    /// Iterates `(key, value)` pairs in insertion order.
    public struct Iterator: IteratorProtocol {
        fileprivate let keys: [String]
        fileprivate let values: [Value]
        fileprivate var position = 0
        public mutating func next() -> (key: String, value: Value)? {
            guard position < keys.count else { return nil }
            defer { position += 1 }
            return (keys[position], values[position])
        }
    }

    public func makeIterator() -> Iterator { Iterator(keys: keys, values: values) }

    public var underestimatedCount: Int { keys.count }
}

extension ValueMap: Hashable {
    public static func == (lhs: ValueMap, rhs: ValueMap) -> Bool {
        guard lhs.count == rhs.count else { return false }
        if lhs.keys.elementsEqual(rhs.keys, by: { $0.hasSameBytes(as: $1) }) { return lhs.values == rhs.values }
        for (i, key) in lhs.keys.enumerated() {
            guard let other = rhs[key], other == lhs.values[i] else { return false }
        }
        return true
    }

    public func hash(into hasher: inout Hasher) {
        // Order-insensitive, like Dictionary's hash.
        var combined = 0
        for i in keys.indices {
            var entry = Hasher()
            entry.combine(ByteKey(keys[i]))
            entry.combine(values[i])
            combined ^= entry.finalize()
        }
        hasher.combine(count)
        hasher.combine(combined)
    }
}

extension ValueMap: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, Value)...) {
        self.init(minimumCapacity: elements.count)
        for (key, value) in elements { self[key] = value }
    }
}

extension ValueMap: CustomStringConvertible {
    public var description: String { Value.object(self).description }
}
