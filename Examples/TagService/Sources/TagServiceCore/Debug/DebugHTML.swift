import ContainerKit

/// HTML built by appending: markup the service writes itself with ``raw(_:)``, everything else — whatever a
/// user sent, and every name from a container — through ``text(_:)`` or an attribute, escaped.
///
/// Escaping: `&`, `<`, `>`, `"` and `'` become entities (so a value is inert in text and in a quoted attribute);
/// control characters (C0, DEL, C1), the line and paragraph separators and the bidirectional overrides become a
/// visible `\uXXXX`, so that they can neither break the page nor disguise what it shows.
struct HTML: Sendable {
    private(set) var string = ""

    init() {}

    /// Appends markup written by the service (never a value that came from outside).
    mutating func raw(_ markup: String) { string += markup }

    /// Appends `text`, escaped.
    mutating func text(_ text: String) { Self.escape(text, into: &string) }

    /// Appends ` name="value"`, the value escaped.
    mutating func attribute(_ name: String, _ value: String) {
        string += " \(name)=\""
        Self.escape(value, into: &string)
        string += "\""
    }

    /// Appends `<tag class="…">text</tag>`.
    mutating func element(_ tag: String, class className: String? = nil, _ text: String) {
        string += "<\(tag)"
        if let className { attribute("class", className) }
        string += ">"
        self.text(text)
        string += "</\(tag)>"
    }

    /// Appends `value` as indented JSON text, escaped (JSON already writes control characters as `\u00XX`).
    mutating func json(_ value: Value?) {
        guard let value, value != .undefined else {
            string += "<span class=\"undefined\">undefined</span>"
            return
        }
        var out = ""
        Self.writeJSON(value, indent: 0, into: &out)
        Self.escape(out, into: &string, keepsNewlines: true)
    }

    /// `text` escaped for HTML text or a quoted attribute value.
    static func escape(_ text: String) -> String {
        var out = ""
        escape(text, into: &out)
        return out
    }

    /// - Parameter keepsNewlines: whether a line feed stays one (the service's own JSON layout, in which a line
    ///   feed of a value is escaped by JSON already).
    static func escape(_ text: String, into out: inout String, keepsNewlines: Bool = false) {
        out.reserveCapacity(out.utf8.count + text.utf8.count)
        for scalar in text.unicodeScalars {
            if let entity = entities[scalar] {
                out += entity
            } else if isDisguising(scalar), !(keepsNewlines && scalar == "\n") {
                let hex = String(scalar.value, radix: 16, uppercase: true)
                out += "\\u" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }

    /// The characters that become entities.
    static let entities: [Unicode.Scalar: String] = [
        "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;",
    ]

    /// Control characters, line and paragraph separators, bidirectional controls.
    static func isDisguising(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069: true
        default: false
        }
    }

    /// `value` as JSON with two-space indentation (the page's view of arguments, records and data layers).
    static func writeJSON(_ value: Value, indent: Int, into out: inout String) {
        let pad = String(repeating: "  ", count: indent + 1)
        let close = String(repeating: "  ", count: indent)
        switch value {
        case .array(let items) where !items.isEmpty:
            out += "[\n"
            for (index, item) in items.enumerated() {
                out += pad
                writeJSON(item, indent: indent + 1, into: &out)
                out += index == items.count - 1 ? "\n" : ",\n"
            }
            out += close + "]"
        case .object(let map) where !map.isEmpty:
            out += "{\n"
            for (index, (key, item)) in map.enumerated() {
                out += pad
                JSONWriter.writeString(key, into: &out)
                out += ": "
                writeJSON(item, indent: indent + 1, into: &out)
                out += index == map.count - 1 ? "\n" : ",\n"
            }
            out += close + "}"
        case .undefined:
            out += "undefined"
        default:
            out += JSONWriter.string(value)
        }
    }

    /// A path segment with every byte but the unreserved ones percent-encoded (`/debug/users/<segment>`).
    static func pathSegment(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count == 1 ? "0" : "") + hex
            }
        }
        return out
    }
}
