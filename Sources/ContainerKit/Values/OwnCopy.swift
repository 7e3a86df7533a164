extension String {
    /// This string in storage of its own: a string of more than 15 UTF-8 bytes is a reference to a buffer, which
    /// every copy retains. A thread that keeps its own copy of a string shared with other threads (see
    /// ``SessionRuntime``) writes no reference count they write.
    package func ownCopy() -> String {
        String(decoding: Array(utf8), as: UTF8.self)
    }
}

extension Value {
    /// This value with strings, lists and maps of its own (keys included; see ``Swift/String/ownCopy()``).
    package func ownCopy() -> Value {
        switch self {
        case .string(let string): return .string(string.ownCopy())
        case .array(let elements): return .array(elements.map { $0.ownCopy() })
        case .object(let map): return .object(map.ownCopy())
        default: return self
        }
    }
}

extension ValueMap {
    /// This map with keys and values of its own (see ``Swift/String/ownCopy()``).
    package func ownCopy() -> ValueMap {
        var copy = ValueMap(minimumCapacity: count)
        for (key, value) in self { copy[key.ownCopy()] = value.ownCopy() }
        return copy
    }
}
