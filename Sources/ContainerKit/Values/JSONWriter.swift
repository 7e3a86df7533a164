/// Writes ``Value``s as compact JSON text (through the package's one JSON writer, `JSONByteWriter`).
///
/// Keys keep their insertion order, integers stay integers, and non-finite numbers and `undefined`
/// (which JSON cannot express) are written as `null` (inside maps, undefined entries are left out).
public enum JSONWriter {
    /// Returns the compact JSON text of `value`.
    /// - Parameters:
    ///   - sortedKeys: write object members sorted by key instead of in insertion order.
    ///   - keepsNumberTypes: write whole floating-point numbers with a fraction (`2.0`, not JavaScript's
    ///     `2`), so that reading the text back gives `.double` again, not `.int`.
    public static func string(_ value: Value, sortedKeys: Bool = false, keepsNumberTypes: Bool = false) -> String {
        written(value, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes).text
    }

    /// Returns the UTF-8 bytes of ``string(_:sortedKeys:keepsNumberTypes:)`` (for an HTTP body or a file,
    /// without making a `String` first).
    public static func bytes(_ value: Value, sortedKeys: Bool = false, keepsNumberTypes: Bool = false) -> [UInt8] {
        written(value, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes).bytes
    }

    /// Appends the compact JSON text of `value` to `out` (see ``string(_:sortedKeys:keepsNumberTypes:)``).
    public static func write(
        _ value: Value,
        into out: inout String,
        sortedKeys: Bool = false,
        keepsNumberTypes: Bool = false
    ) {
        out += string(value, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
    }

    /// Appends the compact JSON text of `value` to `out` as UTF-8 bytes (see
    /// ``string(_:sortedKeys:keepsNumberTypes:)``).
    public static func write(
        _ value: Value,
        into out: inout [UInt8],
        sortedKeys: Bool = false,
        keepsNumberTypes: Bool = false
    ) {
        written(value, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes).withBytes {
            out.append(contentsOf: $0)
        }
    }

    /// Appends `s` as a JSON string literal, escaping quotes, backslashes and control characters.
    public static func writeString(_ s: String, into out: inout String) {
        out += quoted(s).text
    }

    /// Appends `s` as a JSON string literal (UTF-8 bytes), escaping quotes, backslashes and control
    /// characters.
    public static func writeString(_ s: String, into out: inout [UInt8]) {
        quoted(s).withBytes { out.append(contentsOf: $0) }
    }

    /// A writer holding the compact JSON text of `value`: what every method above returns or appends
    /// (growing one byte buffer is much cheaper than growing a `String` piece by piece).
    private static func written(_ value: Value, sortedKeys: Bool, keepsNumberTypes: Bool) -> JSONByteWriter {
        var writer = JSONByteWriter(capacity: 64)
        writer.sortedKeys = sortedKeys
        writer.keepsNumberTypes = keepsNumberTypes
        writer.value(value)
        return writer
    }

    /// A writer holding `s` as a JSON string literal.
    private static func quoted(_ s: String) -> JSONByteWriter {
        var writer = JSONByteWriter(capacity: s.utf8.count + 2)
        writer.string(s)
        return writer
    }
}

extension Value: CustomStringConvertible {
    /// The compact JSON text of the value (`undefined` prints as `undefined`).
    public var description: String {
        if case .undefined = self { return "undefined" }
        return JSONWriter.string(self)
    }
}
