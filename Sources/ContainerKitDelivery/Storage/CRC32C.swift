import ContainerKit

/// CRC-32C (Castagnoli, the checksum of iSCSI, ext4 metadata and Kafka records), computed in software
/// eight bytes at a time. The segment log writes it after each record line, so a flipped bit is detected
/// and the line skipped instead of delivered.
enum CRC32C {
    /// The eight lookup tables of the slicing-by-8 algorithm (reflected polynomial `0x82F63B78`), one after
    /// the other in one array (table `k` at `k * 256`), read through one unsafe buffer: no bounds check
    /// and no reference counting per byte.
    private static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            var crc = tables[byte]
            for table in 1..<8 {
                crc = tables[Int(crc & 0xFF)] ^ (crc >> 8)
                tables[table * 256 + byte] = crc
            }
        }
        return tables
    }()

    /// The checksum of `bytes`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        tables.withUnsafeBufferPointer { t in
            var index = 0
            let count = bytes.count
            while index + 8 <= count {
                // Eight bytes in one load, in the little-endian order the reflected algorithm consumes them.
                let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
                let low = crc ^ UInt32(truncatingIfNeeded: word)
                let high = UInt32(truncatingIfNeeded: word >> 32)
                crc =
                    t[7 * 256 + Int(low & 0xFF)] ^ t[6 * 256 + Int((low >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((low >> 16) & 0xFF)] ^ t[4 * 256 + Int(low >> 24)]
                    ^ t[3 * 256 + Int(high & 0xFF)] ^ t[2 * 256 + Int((high >> 8) & 0xFF)]
                    ^ t[256 + Int((high >> 16) & 0xFF)] ^ t[Int(high >> 24)]
                index += 8
            }
            while index < count {
                crc = t[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
                index += 1
            }
        }
        return crc ^ 0xFFFF_FFFF
    }

    /// The checksum of `bytes`.
    static func checksum(_ bytes: ArraySlice<UInt8>) -> UInt32 {
        bytes.withUnsafeBytes { checksum($0) }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends `crc` as eight lowercase hexadecimal digits.
    static func appendHex(_ crc: UInt32, to json: inout JSONByteWriter) {
        // The eight digits in one word (the first digit in the lowest byte), appended at once.
        var digits: UInt64 = 0
        for index in 0..<8 {
            let nibble = Int((crc >> UInt32(28 - 4 * index)) & 0xF)
            digits |= UInt64(hexDigits[nibble]) << UInt64(8 * index)
        }
        digits = UInt64(littleEndian: digits)
        withUnsafeBytes(of: &digits) { json.append($0) }
    }

    /// The value of eight hexadecimal digits (either case); `nil` when they are not.
    static func parseHex(_ digits: ArraySlice<UInt8>) -> UInt32? {
        guard digits.count == 8 else { return nil }
        var value: UInt32 = 0
        for digit in digits {
            let nibble: UInt8
            switch digit {
            case 0x30...0x39: nibble = digit - 0x30
            case 0x61...0x66: nibble = digit - 0x61 + 10
            case 0x41...0x46: nibble = digit - 0x41 + 10
            default: return nil
            }
            value = value << 4 | UInt32(nibble)
        }
        return value
    }
}
