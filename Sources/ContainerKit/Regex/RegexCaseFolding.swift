/// Simple case mapping of Unicode scalars for case-insensitive matching.
///
/// Two scalars match case-insensitively when their folds are equal; the fold of a scalar is its lowercase
/// mapping when that mapping is a single scalar, else the scalar itself. ASCII takes a table-free fast path.
enum RegexCaseFolding {
    /// The lowercase form of `value` (a scalar value), or `value` itself.
    @inline(__always)
    static func fold(_ value: UInt32) -> UInt32 {
        if value < 0x80 {
            return value &- 0x41 < 26 ? value | 0x20 : value
        }
        return foldNonASCII(value)
    }

    /// The uppercase form of `value` (a scalar value), or `value` itself.
    @inline(__always)
    static func upper(_ value: UInt32) -> UInt32 {
        if value < 0x80 {
            return value &- 0x61 < 26 ? value & ~0x20 : value
        }
        return upperNonASCII(value)
    }

    static func foldNonASCII(_ value: UInt32) -> UInt32 {
        guard let scalar = Unicode.Scalar(value), scalar.properties.changesWhenLowercased else { return value }
        return single(scalar.properties.lowercaseMapping) ?? value
    }

    static func upperNonASCII(_ value: UInt32) -> UInt32 {
        guard let scalar = Unicode.Scalar(value), scalar.properties.changesWhenUppercased else { return value }
        return single(scalar.properties.uppercaseMapping) ?? value
    }

    private static func single(_ mapping: String) -> UInt32? {
        var iterator = mapping.unicodeScalars.makeIterator()
        guard let first = iterator.next(), iterator.next() == nil else { return nil }
        return first.value
    }
}
