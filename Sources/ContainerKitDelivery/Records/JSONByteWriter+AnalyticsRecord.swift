import ContainerKit
package import Foundation

/// The pieces of record lines and Braze objects that only the delivery pipeline writes, on top of the
/// package's one JSON writer (ContainerKit's `JSONByteWriter`).
extension JSONByteWriter {
    /// Appends `"yyyy-MM-ddTHH:mm:ss.SSSZ"` (quoted), like ``ISO8601Timestamp/string(from:)``.
    package mutating func time(_ date: Date) {
        let (year, month, day, millisecondOfDay) = ISO8601Timestamp.components(of: date)
        guard (0...9999).contains(year) else {
            // Years outside four digits (never from a clock): written digit group by digit group.
            raw(0x22)
            padded(year, width: 4)
            raw(0x2D)
            padded(month, width: 2)
            raw(0x2D)
            padded(day, width: 2)
            raw(0x54)
            padded(millisecondOfDay / 3_600_000, width: 2)
            raw(0x3A)
            padded(millisecondOfDay / 60_000 % 60, width: 2)
            raw(0x3A)
            padded(millisecondOfDay / 1000 % 60, width: 2)
            raw(0x2E)
            padded(millisecondOfDay % 1000, width: 3)
            raw("Z\"")
            return
        }
        // The 26 bytes `"yyyy-MM-ddTHH:mm:ss.SSSZ"` made on the stack and appended at once.
        var text:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) = (
                0x22, 0, 0, 0, 0, 0x2D, 0, 0, 0x2D, 0, 0, 0x54, 0, 0, 0x3A, 0, 0, 0x3A, 0, 0, 0x2E, 0, 0, 0, 0x5A, 0x22
            )
        withUnsafeMutableBytes(of: &text) { buffer in
            // Two digits per division by ten (every field below is 0...99).
            func twoDigits(_ value: Int64, at offset: Int) {
                let value = UInt32(truncatingIfNeeded: value)
                let tens = value / 10
                buffer[offset] = UInt8(truncatingIfNeeded: tens) &+ 0x30
                buffer[offset + 1] = UInt8(truncatingIfNeeded: value &- tens &* 10) &+ 0x30
            }
            twoDigits(year / 100, at: 1)
            twoDigits(year % 100, at: 3)
            twoDigits(month, at: 6)
            twoDigits(day, at: 9)
            twoDigits(millisecondOfDay / 3_600_000, at: 12)
            twoDigits(millisecondOfDay / 60_000 % 60, at: 15)
            twoDigits(millisecondOfDay / 1000 % 60, at: 18)
            let milliseconds = millisecondOfDay % 1000
            buffer[21] = UInt8(truncatingIfNeeded: milliseconds / 100) &+ 0x30
            twoDigits(milliseconds % 100, at: 22)
            append(UnsafeRawBufferPointer(buffer))
        }
    }

    /// Appends `,"product_id":…,"currency":…,"price":…,"quantity":…` (the record line and Braze's purchase
    /// object name them alike).
    package mutating func purchaseFields(productID: String, currency: String, price: Double, quantity: Int) {
        raw(",\"product_id\":")
        string(productID)
        raw(",\"currency\":")
        string(currency)
        raw(",\"price\":")
        double(price)
        raw(",\"quantity\":")
        integer(Int64(quantity))
    }

    /// Appends a user's identity member (`"external_id":"…"` and so on), without a separator.
    package mutating func identity(_ user: UserIdentity) {
        switch user {
        case .externalID(let id):
            raw("\"external_id\":")
            string(id)
        case .brazeID(let id):
            raw("\"braze_id\":")
            string(id)
        case .userAlias(let name, let label):
            raw("\"user_alias\":{\"alias_name\":")
            string(name)
            raw(",\"alias_label\":")
            string(label)
            raw("}")
        }
    }
}
