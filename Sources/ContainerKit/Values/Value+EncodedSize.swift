extension Value {
    /// The most bytes this value takes as JSON (``JSONWriter``'s form). With `scanning`, each string is read
    /// and every character it escapes counted at its longest escape (`\u00XX`, 6 bytes); without, a string
    /// counts 6 bytes for each of its UTF-8 bytes, which costs nothing to know (a looser bound, for every
    /// push). A number counts at its longest form. Allocates nothing; a data layer's size limit
    /// (``TagManager/maximumDataLayerBytes``) is checked with it.
    package func encodedSizeBound(scanning: Bool) -> Int {
        switch self {
        case .undefined, .null, .bool: return 5
        case .int, .double: return 24
        case .string(let text): return Value.encodedSizeBound(of: text, scanning: scanning)
        case .array(let elements):
            var total = 2
            for element in elements { total &+= element.encodedSizeBound(scanning: scanning) &+ 1 }
            return total
        case .object(let map): return map.encodedSizeBound(scanning: scanning)
        }
    }

    /// The most bytes `text` takes as a JSON string, quotes included (see ``encodedSizeBound(scanning:)``).
    @inline(__always)
    package static func encodedSizeBound(of text: String, scanning: Bool) -> Int {
        guard scanning else { return 2 &+ 6 &* text.utf8.count }
        return scannedSizeBound(of: text)
    }

    private static func scannedSizeBound(of text: String) -> Int {
        var total = 2
        for byte in text.utf8 {
            total &+= byte < 0x20 || byte == 0x22 || byte == 0x5C ? 6 : 1
        }
        return total
    }
}

extension ValueMap {
    /// The most bytes this map takes as a JSON object (see ``Value/encodedSizeBound(scanning:)``).
    package func encodedSizeBound(scanning: Bool) -> Int {
        // By position, each value borrowed: the iterator copied every key and value (a push bounds its message).
        var total = 2
        for i in keys.indices {
            total &+=
                Value.encodedSizeBound(of: keys[i], scanning: scanning) &+ 2
                &+ withValue(at: i) { $0.encodedSizeBound(scanning: scanning) }
        }
        return total
    }
}
