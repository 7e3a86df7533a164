import ContainerKit
import Foundation

/// The pieces of record lines and Braze objects that only the delivery pipeline writes, on top of the
/// package's one JSON writer (ContainerKit's `JSONByteWriter`).
extension JSONByteWriter {
    /// Appends `"yyyy-MM-ddTHH:mm:ss.SSSZ"` (quoted), like ``ISO8601Timestamp/string(from:)``.
    package mutating func time(_ date: Date) {
        raw(0x22)
        let (year, month, day, millisecondOfDay) = ISO8601Timestamp.components(of: date)
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
