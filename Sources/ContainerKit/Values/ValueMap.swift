/// A string-keyed map of ``Value``s that remembers the order keys were first inserted.
///
/// Order matters to people reading output (a function-call tag's arguments print in the order the
/// container lists them); equality and hashing ignore it, as JSON object equality does.
public struct ValueMap: Sendable {
    /// The keys, in insertion order.
    public private(set) var keys: [String] = []
    private var storage: [String: Value] = [:]

    /// Creates an empty map.
    public init() {}

    /// Creates an empty map with room for `capacity` entries.
    public init(minimumCapacity capacity: Int) {
        keys.reserveCapacity(capacity)
        storage.reserveCapacity(capacity)
    }

    /// The number of entries.
    public var count: Int { keys.count }

    /// Whether the map has no entries.
    public var isEmpty: Bool { keys.isEmpty }

    /// Reads or writes the value for `key`. Writing `nil` removes the entry.
    public subscript(key: String) -> Value? {
        get { storage[key] }
        set {
            if let newValue {
                if storage.updateValue(newValue, forKey: key) == nil { keys.append(key) }
            } else if storage.removeValue(forKey: key) != nil {
                keys.removeAll { $0 == key }
            }
        }
    }

    /// Removes the entry for `key` and returns its value.
    @discardableResult
    public mutating func removeValue(forKey key: String) -> Value? {
        let old = storage.removeValue(forKey: key)
        if old != nil { keys.removeAll { $0 == key } }
        return old
    }

    /// Changes the value of an existing entry in place, or inserts `defaultValue` and changes that.
    public mutating func modify<R>(
        _ key: String,
        default defaultValue: @autoclosure () -> Value,
        _ body: (inout Value) throws -> R
    ) rethrows -> R {
        if storage[key] == nil { keys.append(key) }
        return try body(&storage[key, default: defaultValue()])
    }
}

extension ValueMap: Sequence {
    /// Iterates `(key, value)` pairs in insertion order.
    public struct Iterator: IteratorProtocol {
        fileprivate var keyIterator: IndexingIterator<[String]>
        fileprivate let storage: [String: Value]
        public mutating func next() -> (key: String, value: Value)? {
            guard let key = keyIterator.next(), let value = storage[key] else { return nil }
            return (key, value)
        }
    }

    public func makeIterator() -> Iterator {
        Iterator(keyIterator: keys.makeIterator(), storage: storage)
    }

    public var underestimatedCount: Int { keys.count }
}

extension ValueMap: Hashable {
    public static func == (lhs: ValueMap, rhs: ValueMap) -> Bool { lhs.storage == rhs.storage }
    public func hash(into hasher: inout Hasher) { hasher.combine(storage) }
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
