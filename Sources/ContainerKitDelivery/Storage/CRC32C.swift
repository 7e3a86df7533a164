/// CRC-32C (Castagnoli, the checksum of iSCSI, ext4 metadata and Kafka records), computed in software
/// eight bytes at a time. The segment log writes it after each record line, so a flipped bit is detected
/// and the line skipped instead of delivered.
enum CRC32C {
    /// The eight lookup tables of the slicing-by-8 algorithm (reflected polynomial `0x82F63B78`).
    private static let tables: [[UInt32]] = {
        var tables = [[UInt32]](repeating: [UInt32](repeating: 0, count: 256), count: 8)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
            tables[0][byte] = crc
        }
        for byte in 0..<256 {
            var crc = tables[0][byte]
            for table in 1..<8 {
                crc = tables[0][Int(crc & 0xFF)] ^ (crc >> 8)
                tables[table][byte] = crc
            }
        }
        return tables
    }()

    /// The checksum of `bytes`.
    static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        tables.withUnsafeBufferPointer { t in
            let (t0, t1, t2, t3) = (t[0], t[1], t[2], t[3])
            let (t4, t5, t6, t7) = (t[4], t[5], t[6], t[7])
            var index = 0
            let count = bytes.count
            while index + 8 <= count {
                let low =
                    crc
                    ^ (UInt32(bytes[index]) | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2]) << 16
                        | UInt32(bytes[index + 3]) << 24)
                crc =
                    t7[Int(low & 0xFF)] ^ t6[Int((low >> 8) & 0xFF)] ^ t5[Int((low >> 16) & 0xFF)]
                    ^ t4[Int(low >> 24)] ^ t3[Int(bytes[index + 4])] ^ t2[Int(bytes[index + 5])]
                    ^ t1[Int(bytes[index + 6])] ^ t0[Int(bytes[index + 7])]
                index += 8
            }
            while index < count {
                crc = t0[Int((crc ^ UInt32(bytes[index])) & 0xFF)] ^ (crc >> 8)
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
    static func appendHex(_ crc: UInt32, to bytes: inout [UInt8]) {
        for shift in stride(from: 28, through: 0, by: -4) { bytes.append(hexDigits[Int((crc >> UInt32(shift)) & 0xF)]) }
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
