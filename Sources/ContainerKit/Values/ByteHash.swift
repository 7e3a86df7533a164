/// A fast seeded hash of a string's UTF-8 bytes, for the runtime's own hash tables (a large map's index,
/// a session's event-name cache): a 64×64→128-bit multiply per 8 bytes instead of SipHash's rounds and
/// `Hasher`'s calls. The seed is random per process, so which keys collide cannot be chosen from outside.
enum ByteHash {
    /// Random per process (see the type's discussion).
    static let seed: UInt64 = {
        var generator = SystemRandomNumberGenerator()
        return generator.next() | 1
    }()

    @inline(__always)
    private static func mix(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let product = a.multipliedFullWidth(by: b)
        return product.high ^ product.low
    }

    /// The hash of `string`'s UTF-8 bytes.
    @inline(__always)
    static func hash(_ string: String) -> UInt64 {
        if let hash = string.utf8.withContiguousStorageIfAvailable({ hash(UnsafeRawBufferPointer($0)) }) {
            return hash
        }
        return hash(bytes: Array(string.utf8))
    }

    private static func hash(bytes: [UInt8]) -> UInt64 {
        bytes.withUnsafeBytes { hash($0) }
    }

    /// The hash of `bytes`.
    static func hash(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        let count = bytes.count
        var h = seed ^ (UInt64(truncatingIfNeeded: count) &* 0x9E37_79B9_7F4A_7C15)
        var i = 0
        while i + 8 <= count {
            let word = bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            h = mix(h ^ word, 0xA076_1D64_78BD_642F)
            i += 8
        }
        if i < count {
            var tail: UInt64 = 0
            var shift: UInt64 = 0
            while i < count {
                tail |= UInt64(bytes[i]) << shift
                shift += 8
                i += 1
            }
            h = mix(h ^ tail, 0xE703_7ED1_A0B4_28DB)
        }
        return mix(h ^ seed, 0x8EBC_6AF0_9C88_C6E3)
    }
}
