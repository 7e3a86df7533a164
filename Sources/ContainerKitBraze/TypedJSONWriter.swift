import ContainerKit

/// Writes ``Value``s as compact JSON like `JSONWriter`, except that a whole-number `.double` keeps a
/// fraction (`3.0`, not `3`), so that a float property read back from a queue or a JSON line is still a
/// float. Everything else is delegated to `JSONWriter`.
enum TypedJSONWriter {
    /// Appends the JSON text of `value` to `out`.
    static func write(_ value: Value, into out: inout String) {
        switch value {
        case .double(let d):
            writeDouble(d, into: &out)
        case .array(let list):
            out += "["
            for (i, element) in list.enumerated() {
                if i > 0 { out += "," }
                write(element, into: &out)
            }
            out += "]"
        case .object(let map):
            out += "{"
            var first = true
            for (key, element) in map where !element.isUndefined {
                if !first { out += "," }
                first = false
                JSONWriter.writeString(key, into: &out)
                out += ":"
                write(element, into: &out)
            }
            out += "}"
        default:
            JSONWriter.write(value, into: &out)
        }
    }

    /// Appends a number that reads back as a float.
    static func writeDouble(_ d: Double, into out: inout String) {
        if d.isFinite, d == d.rounded(), abs(d) < 1e15 {
            out += String(Int64(d))
            out += ".0"
        } else {
            JSONWriter.write(.double(d), into: &out)
        }
    }
}
