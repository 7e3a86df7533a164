import ContainerKit

/// Writes ``Value``s as indented JSON (two spaces, keys in insertion order), for reports people diff.
enum PrettyJSON {
    static func string(_ value: Value) -> String {
        var out = ""
        write(value, indent: 0, into: &out)
        return out
    }

    private static func write(_ value: Value, indent: Int, into out: inout String) {
        switch value {
        case .array(let items) where !items.isEmpty:
            out += "[\n"
            for (i, item) in items.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                write(item, indent: indent + 2, into: &out)
                out += i == items.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "]"
        case .object(let map) where map.contains(where: { !$0.value.isUndefined }):
            out += "{\n"
            let entries = map.filter { !$0.value.isUndefined }
            for (i, entry) in entries.enumerated() {
                out += String(repeating: " ", count: indent + 2)
                JSONWriter.writeString(entry.key, into: &out)
                out += ": "
                write(entry.value, indent: indent + 2, into: &out)
                out += i == entries.count - 1 ? "\n" : ",\n"
            }
            out += String(repeating: " ", count: indent) + "}"
        default:
            JSONWriter.write(value, into: &out)
        }
    }
}
