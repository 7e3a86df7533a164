#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension String {
    /// Whether two strings are the same UTF-8 bytes — what JavaScript's `===` compares (code units), and how
    /// ContainerKit compares data-layer keys, predicate operands and external identifiers.
    ///
    /// `==` on `String` is Unicode canonical equivalence: it takes `"caf\u{E9}"` and `"cafe\u{301}"` (or
    /// the Kelvin sign and `K`) for one string; GTM, and Braze's `external_id`, do not.
    @inline(__always)
    package func hasSameBytes(as other: String) -> Bool {
        // The same storage, or the same small string: the same bytes, at the cost of two compares.
        if MemoryLayout<String>.size == 16 {
            let a = unsafeBitCast(self, to: (UInt64, UInt64).self)
            let b = unsafeBitCast(other, to: (UInt64, UInt64).self)
            if a == b { return true }
            // Two small strings (up to 15 bytes, held in the value: bit 61 of the second word) are equal exactly
            // when their bits are: the bits are the bytes, zeros after them, and the count and ASCII flag. Most
            // keys are small, and a look-up compares its key with every key before the one it finds.
            if a.1 & b.1 & (1 << 61) != 0 { return false }
        }
        let x = utf8
        let y = other.utf8
        guard x.count == y.count else { return false }
        let compared = x.withContiguousStorageIfAvailable { p in
            y.withContiguousStorageIfAvailable { q in
                p.isEmpty || memcmp(p.baseAddress!, q.baseAddress!, p.count) == 0
            }
        }
        if let compared, let compared { return compared }
        return x.elementsEqual(y)
    }
}

/// A string key compared and hashed by its UTF-8 bytes (see ``Swift/String/hasSameBytes(as:)``), for
/// dictionaries keyed by external strings.
package struct ByteKey: Hashable, Sendable {
    package let string: String

    @inline(__always)
    package init(_ string: String) { self.string = string }

    @inline(__always)
    package static func == (lhs: ByteKey, rhs: ByteKey) -> Bool { lhs.string.hasSameBytes(as: rhs.string) }

    package func hash(into hasher: inout Hasher) {
        let done: Void? = string.utf8.withContiguousStorageIfAvailable { bytes in
            hasher.combine(bytes: UnsafeRawBufferPointer(bytes))
        }
        if done == nil {
            for byte in string.utf8 { hasher.combine(byte) }
        }
        hasher.combine(0xFF as UInt8)
    }
}
