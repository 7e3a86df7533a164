/// A page's cookies as gtm.js's 1st-Party Cookie variable (`__k`) reads them from `document.cookie`.
package enum Cookies {
    /// The value of the first cookie named `name` in `text` (`name=value; name2=value2`: pairs split at `;`, each at
    /// its first `=`, name and value trimmed of white space), URI-decoded with `decoding`; `nil` when no cookie has
    /// the name. A value that does not decode is `false`: gtm.js's `decodeURIComponent` throws, and its macro
    /// expander makes a variable that throws `false`.
    package static func value(named name: String, in text: String, decoding: Bool) -> Value? {
        guard !name.isEmpty else { return nil }
        for pair in text.split(separator: ";", omittingEmptySubsequences: false) {
            let equals = pair.firstIndex(of: "=") ?? pair.endIndex
            guard trimmed(pair[..<equals]) == name else { continue }
            let value = equals == pair.endIndex ? "" : trimmed(pair[pair.index(after: equals)...])
            guard decoding, !value.isEmpty else { return .string(value) }
            return URLParts.decodeURIComponent(value).map(Value.string) ?? .bool(false)
        }
        return nil
    }

    /// `text` without leading and trailing spaces, tabs and line breaks (JavaScript's `\s` in ASCII).
    private static func trimmed(_ text: Substring) -> String {
        let isSpace: (Character) -> Bool = {
            $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" || $0 == "\u{0B}" || $0 == "\u{0C}"
        }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(text[first...last])
    }
}
