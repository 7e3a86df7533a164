import Foundation

/// Appends compact JSON to a byte buffer: the package's one JSON writer. ``JSONWriter`` writes through
/// it, and the delivery pipeline's record lines and Braze request bodies use it directly, on their hot
/// path, where growing a `String` piece by piece cost more than the rest of the encoding.
///
/// Keys keep their insertion order (or are sorted, with ``sortedKeys``), undefined map entries are left
/// out, `undefined` and non-finite numbers are written as `null`. With ``keepsNumberTypes`` (the default)
/// a whole-number `.double` keeps a fraction (`3.0`, not `3`), so that a float read back is still a float.
///
/// The writer owns its buffer (it is not copyable, so no write checks for a shared one): appending is a
/// capacity check and a copy, where a `[UInt8]` paid a uniqueness check and the array's growth path on
/// every append. ``bytes`` copies the result out.
package struct JSONByteWriter: ~Copyable {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// How many bytes are written.
    package private(set) var count = 0
    /// Write object members sorted by key instead of in insertion order.
    package var sortedKeys = false
    /// Write whole-number doubles with a fraction (`2.0`), not as JavaScript prints them (`2`).
    package var keepsNumberTypes = true

    /// An empty writer with room for `capacity` bytes.
    package init(capacity: Int = 256) {
        self.capacity = max(capacity, 16)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The bytes written so far (a copy).
    package var bytes: [UInt8] { Array(UnsafeBufferPointer(start: base, count: count)) }

    /// Calls `body` with the bytes written so far, from offset `start`.
    package func withBytes<R>(from start: Int = 0, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        precondition(start >= 0 && start <= count, "offset \(start) is outside the \(count) bytes written")
        return try body(UnsafeBufferPointer(start: base + start, count: count - start))
    }

    /// The byte written at `offset` (which must be written already); setting it overwrites it in place.
    package subscript(offset: Int) -> UInt8 {
        get {
            precondition(offset >= 0 && offset < count, "offset \(offset) is outside the \(count) bytes written")
            return base[offset]
        }
        set {
            precondition(offset >= 0 && offset < count, "offset \(offset) is outside the \(count) bytes written")
            base[offset] = newValue
        }
    }

    /// The bytes written so far, as text.
    package var text: String { String(decoding: UnsafeBufferPointer(start: base, count: count), as: UTF8.self) }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    private mutating func reserve(_ extra: Int) {
        if capacity - count < extra { grow(extra) }
    }

    @inline(never)
    private mutating func grow(_ extra: Int) {
        let (needed, overflow) = count.addingReportingOverflow(extra)
        precondition(!overflow, "a JSON text cannot be this long")
        let newCapacity = max(needed, capacity &* 2)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.initialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    /// Appends one byte as is.
    @inline(__always)
    package mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count &+= 1
    }

    /// Appends `bytes` as they are.
    @inline(__always)
    package mutating func append(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let source = bytes.baseAddress, !bytes.isEmpty else { return }
        reserve(bytes.count)
        (base + count).initialize(from: source, count: bytes.count)
        count &+= bytes.count
    }

    /// Appends `bytes` as they are.
    @inline(__always)
    package mutating func append(_ bytes: UnsafeRawBufferPointer) {
        append(bytes.assumingMemoryBound(to: UInt8.self))
    }

    /// Appends `literal` as is (no quoting).
    package mutating func raw(_ literal: StaticString) {
        literal.withUTF8Buffer { append($0) }
    }

    /// Appends one byte as is.
    package mutating func raw(_ byte: UInt8) { append(byte) }

    /// Appends what `other` wrote.
    package mutating func append(_ other: borrowing JSONByteWriter) {
        other.withBytes { append($0) }
    }

    /// Appends a JSON string literal, escaping quotes, backslashes and control characters (`\u001f`).
    package mutating func string(_ text: String) {
        // Native and small strings lend their UTF-8 in place (no copy of the string, no uniqueness check);
        // only a bridged string needs `withUTF8`'s copy.
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { quoted($0) }
        if done == nil {
            var copy = text
            copy.withUTF8 { quoted($0) }
        }
    }

    /// Appends `utf8` quoted and escaped.
    private mutating func quoted(_ utf8: UnsafeBufferPointer<UInt8>) {
        // Most strings (keys, IDs, names) need no escape: found by one scan, appended in one copy. Otherwise
        // the runs between the bytes to escape are each found by the same scan and appended in one copy.
        append(0x22)
        var start = 0
        var next = Self.firstByteToEscape(in: utf8, from: 0)
        while next < utf8.count {
            append(UnsafeBufferPointer(rebasing: utf8[start..<next]))
            let byte = utf8[next]
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
                append(Self.hexDigits[Int(byte >> 4)])
                append(Self.hexDigits[Int(byte & 0xF)])
            }
            start = next + 1
            next = Self.firstByteToEscape(in: utf8, from: start)
        }
        append(UnsafeBufferPointer(rebasing: utf8[start...]))
        append(0x22)
    }

    /// The offset of the first byte at or after `start` that must be escaped in a JSON string (a control
    /// character, `"` or `\`), or `utf8.count` when there is none: the scan of the writer's strings and of
    /// the readers that skip over JSON strings (a string ends at the first such byte that is a quote).
    ///
    /// Eight bytes are looked at a time: per byte lane, `(w - k) & ~w & 0x80` is set where a byte is below
    /// `k` (exact for `k` ≤ 0x80; a lane's borrow reaches the next lane only when the lane itself matched,
    /// so the lowest lane set is always a match), and a byte equal to `c` is a zero byte of `w ^ c`.
    @inline(__always)
    package static func firstByteToEscape(in utf8: UnsafeBufferPointer<UInt8>, from start: Int) -> Int {
        let count = utf8.count
        guard let base = utf8.baseAddress, start < count else { return count }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        var offset = start
        while offset + 8 <= count {
            let word = UInt64(
                littleEndian: UnsafeRawPointer(base).loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            )
            let quote = word ^ (ones &* 0x22)
            let backslash = word ^ (ones &* 0x5C)
            let found =
                ((word &- ones &* 0x20) & ~word) | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)
            let lanes = found & highs
            if lanes != 0 { return offset + lanes.trailingZeroBitCount / 8 }
            offset += 8
        }
        while offset < count {
            if mustEscape(base[offset]) { return offset }
            offset += 1
        }
        return count
    }

    /// Whether `byte` must be escaped in a JSON string: a control character, `"` or `\`.
    @inline(__always)
    private static func mustEscape(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends a decimal integer.
    package mutating func integer(_ value: Int64) {
        if value < 0 { append(0x2D) }
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
            append(UnsafeRawBufferPointer(rebasing: buffer[(20 - count)...]))
        }
    }

    /// Appends `value` zero-padded to `width` digits (for times).
    package mutating func padded(_ value: Int64, width: Int) {
        var divisor: Int64 = 1
        for _ in 1..<width { divisor *= 10 }
        if value >= divisor * 10 {
            integer(value)
            return
        }
        var rest = value
        while divisor > 0 {
            append(UInt8(truncatingIfNeeded: rest / divisor) + 0x30)
            rest %= divisor
            divisor /= 10
        }
    }

    /// Appends a number as JavaScript prints it (`null` when not finite), with a fraction kept on whole
    /// numbers when ``keepsNumberTypes`` is set.
    package mutating func double(_ value: Double) {
        guard value.isFinite else {
            raw("null")
            return
        }
        let whole = value == value.rounded()
        if whole, abs(value) < 1e15 {
            integer(Int64(value))
            if keepsNumberTypes { raw(".0") }
            return
        }
        // Swift's shortest round-trip digits in fixed notation ("4.5", "-0.001") are JavaScript's form
        // too: written as they are, without `jsNumberString`'s rewriting (its two buffers and a string).
        // Only an exponent form ("1e-05", "1.5e+20") needs JavaScript's rules.
        if !whole {
            var plain = value.description
            let written = plain.withUTF8 { utf8 -> Bool in
                for byte in utf8 where byte == 0x65 || byte == 0x45 { return false }
                append(utf8)
                return true
            }
            if written { return }
        }
        var text = Value.jsNumberString(value)
        text.withUTF8 { append($0) }
        if keepsNumberTypes, !text.utf8.contains(where: { $0 == 0x2E || $0 == 0x65 || $0 == 0x45 }) {
            raw(".0")
        }
    }

    /// Appends any value.
    package mutating func value(_ value: Value) {
        switch value {
        case .undefined, .null: raw("null")
        case .bool(let b): b ? raw("true") : raw("false")
        case .int(let i): integer(i)
        case .double(let d): double(d)
        case .string(let s): string(s)
        case .array(let list):
            append(0x5B)
            for (i, element) in list.enumerated() {
                if i > 0 { append(0x2C) }
                self.value(element)
            }
            append(0x5D)
        case .object(let map):
            object(map)
        }
    }

    /// Appends a map as an object (undefined entries left out).
    package mutating func object(_ map: ValueMap) {
        append(0x7B)
        var first = true
        if sortedKeys {
            for key in map.keys.sorted() {
                guard let element = map[key], !element.isUndefined else { continue }
                if !first { append(0x2C) }
                first = false
                member(key, element)
            }
        } else {
            for (key, element) in map where !element.isUndefined {
                if !first { append(0x2C) }
                first = false
                member(key, element)
            }
        }
        append(0x7D)
    }

    private mutating func member(_ key: String, _ element: Value) {
        string(key)
        append(0x3A)
        value(element)
    }
}
