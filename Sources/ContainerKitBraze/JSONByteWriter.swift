import ContainerKit
import Foundation

/// Appends compact JSON to a byte buffer: the hot path of record lines and Braze request bodies, where
/// growing a `String` piece by piece cost more than the rest of the encoding.
///
/// Output matches `JSONWriter` (keys in insertion order, undefined map entries left out, non-finite
/// numbers as `null`), except that a whole-number `.double` keeps a fraction (`3.0`, not `3`), so that a
/// float read back from a queue or a JSON line is still a float.
struct JSONByteWriter {
    private(set) var bytes: [UInt8]

    init(capacity: Int = 256) {
        bytes = []
        bytes.reserveCapacity(capacity)
    }

    /// Continues writing after `bytes`.
    init(adopting bytes: [UInt8]) { self.bytes = bytes }

    /// The bytes written so far, as text.
    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Appends `literal` as is (no quoting).
    mutating func raw(_ literal: StaticString) {
        literal.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// Appends one byte as is.
    mutating func raw(_ byte: UInt8) { bytes.append(byte) }

    /// Appends what `other` wrote.
    mutating func append(_ other: JSONByteWriter) { bytes.append(contentsOf: other.bytes) }

    /// Appends a JSON string literal, escaping quotes, backslashes and control characters.
    mutating func string(_ text: String) {
        bytes.append(0x22)
        var copy = text
        copy.withUTF8 { utf8 in
            var start = 0
            for (i, byte) in utf8.enumerated() where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start..<i]))
                start = i + 1
                switch byte {
                case 0x22: raw("\\\"")
                case 0x5C: raw("\\\\")
                case 0x0A: raw("\\n")
                case 0x0D: raw("\\r")
                case 0x09: raw("\\t")
                case 0x08: raw("\\b")
                case 0x0C: raw("\\f")
                default:
                    raw("\\u00")
                    bytes.append(Self.hexDigits[Int(byte >> 4)])
                    bytes.append(Self.hexDigits[Int(byte & 0xF)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[start...]))
        }
        bytes.append(0x22)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends a decimal integer.
    mutating func integer(_ value: Int64) {
        if value < 0 { bytes.append(0x2D) }
        var magnitude = value.magnitude
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) =
                (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[19 - count] = UInt8(truncatingIfNeeded: magnitude % 10) + 0x30
                magnitude /= 10
                count += 1
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...]))
        }
    }

    /// Appends `value` zero-padded to `width` digits (for times).
    mutating func padded(_ value: Int64, width: Int) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        if value >= divisor * 10 {
            integer(value)
            return
        }
        var rest = value
        while divisor > 0 {
            bytes.append(UInt8(truncatingIfNeeded: rest / divisor) + 0x30)
            rest %= divisor
            divisor /= 10
        }
    }

    /// Appends a number that reads back as a float.
    mutating func double(_ value: Double) {
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
            integer(Int64(value))
            raw(".0")
        } else {
            var text = ""
            JSONWriter.write(.double(value), into: &text)
            bytes.append(contentsOf: text.utf8)
        }
    }

    /// Appends `"yyyy-MM-ddTHH:mm:ss.SSSZ"` (quoted), like ``ISO8601Timestamp/string(from:)``.
    mutating func time(_ date: Date) {
        bytes.append(0x22)
        let (year, month, day, millisecondOfDay) = ISO8601Timestamp.components(of: date)
        padded(year, width: 4)
        bytes.append(0x2D)
        padded(month, width: 2)
        bytes.append(0x2D)
        padded(day, width: 2)
        bytes.append(0x54)
        padded(millisecondOfDay / 3_600_000, width: 2)
        bytes.append(0x3A)
        padded(millisecondOfDay / 60_000 % 60, width: 2)
        bytes.append(0x3A)
        padded(millisecondOfDay / 1000 % 60, width: 2)
        bytes.append(0x2E)
        padded(millisecondOfDay % 1000, width: 3)
        raw("Z\"")
    }

    /// Appends any value.
    mutating func value(_ value: Value) {
        switch value {
        case .undefined, .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .int(let i): integer(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .array(let list):
            bytes.append(0x5B)
            for (i, element) in list.enumerated() {
                if i > 0 { bytes.append(0x2C) }
                self.value(element)
            }
            bytes.append(0x5D)
        case .object(let map):
            object(map)
        }
    }

    /// Appends a map as an object.
    mutating func object(_ map: ValueMap) {
        bytes.append(0x7B)
        var first = true
        for (key, element) in map where !element.isUndefined {
            if !first { bytes.append(0x2C) }
            first = false
            string(key)
            bytes.append(0x3A)
            value(element)
        }
        bytes.append(0x7D)
    }

    /// Appends `,"product_id":…,"currency":…,"price":…,"quantity":…` (the record line and Braze's purchase
    /// object name them alike).
    mutating func purchaseFields(productID: String, currency: String, price: Double, quantity: Int) {
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
    mutating func identity(_ user: UserIdentity) {
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
