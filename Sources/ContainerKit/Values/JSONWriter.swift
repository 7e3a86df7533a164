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
        var out = ""
        write(value, into: &out, sortedKeys: sortedKeys, keepsNumberTypes: keepsNumberTypes)
        return out
    }

    /// Appends the compact JSON text of `value` to `out` (see ``string(_:sortedKeys:keepsNumberTypes:)``).
    public static func write(
        _ value: Value,
        into out: inout String,
        sortedKeys: Bool = false,
        keepsNumberTypes: Bool = false
    ) {
        var writer = JSONByteWriter(capacity: 64)
        writer.sortedKeys = sortedKeys
        writer.keepsNumberTypes = keepsNumberTypes
        writer.value(value)
        out += writer.text
    }

    /// Appends `s` as a JSON string literal, escaping quotes, backslashes and control characters.
    public static func writeString(_ s: String, into out: inout String) {
        var writer = JSONByteWriter(capacity: s.utf8.count + 2)
        writer.string(s)
        out += writer.text
    }
}

extension Value: CustomStringConvertible {
    /// The compact JSON text of the value (`undefined` prints as `undefined`).
    public var description: String {
        if case .undefined = self { return "undefined" }
        return JSONWriter.string(self)
    }
}
