/// The parts gtm.js reads from a URL for its URL (`__u`) and Referrer (`__f`) variables: its `legacyUrls` module
/// (served gtm.js of 2026; read from the script and run under node), whose part names are exact (`HOST`, not `host`).
extension URLParts {
    /// The parts a URL or Referrer variable names; any other name (`URL`, none) is the whole URL without its
    /// fragment.
    package enum Part: String, Sendable {
        case `protocol` = "PROTOCOL", host = "HOST", port = "PORT", path = "PATH", `extension` = "EXTENSION"
        case query = "QUERY", fragment = "FRAGMENT"
    }

    /// `text` up to its first `#`, as written (gtm.js cuts the text it read; it does not make it a URL first).
    package static func withoutFragment(_ text: String) -> String {
        guard let mark = text.utf8.firstIndex(of: 0x23) else { return text }
        return String(text[..<mark])
    }

    /// Part `part` of this URL as gtm.js reads it from an `<a href>`: the protocol without its `:`; the host name
    /// (`""` for a URL without one; without `www.`, `www2.`, … with `stripWww`); the port, else the scheme's default
    /// (`80`, `443`, else `""`); the path (`/` first; a last segment listed in `defaultPages` emptied); the extension
    /// of the path's last dotted part; the fragment without its `#`. The query is ``queryValue(keys:ignoringEmpty:)``.
    /// Undefined for the protocol, host and port of a relative URL read without the page's URL (``unknownPage``).
    package func value(of part: Part, stripWww: Bool = false, defaultPages: Value? = nil) -> Value {
        switch part {
        case .protocol:
            return isRelativeToUnknownPage ? .undefined : .string(scheme)
        case .host:
            if isRelativeToUnknownPage { return .undefined }
            guard !hostname.isEmpty else { return .string("") }
            return .string(stripWww ? Self.removingWww(hostname) : hostname)
        case .port:
            if isRelativeToUnknownPage { return .undefined }
            if let number = Int(port), number != 0 { return .string(String(number)) }
            switch scheme {
            case "http": return .string("80")
            case "https": return .string("443")
            default: return .string("")
            }
        case .path:
            let path = pathname.hasPrefix("/") ? pathname : "/" + pathname
            guard case .array(let pages)? = defaultPages else { return .string(path) }
            var segments = path.split(separator: "/", omittingEmptySubsequences: false)
            // `indexOf`: strict equality, so only a text entry matches.
            if let last = segments.last, pages.contains(.string(String(last))) {
                segments[segments.count - 1] = ""
                return .string(segments.joined(separator: "/"))
            }
            return .string(path)
        case .extension:
            let path = pathname.hasPrefix("/") ? pathname : "/" + pathname
            let pieces = path.split(separator: ".", omittingEmptySubsequences: false)
            let last = pieces.count > 1 ? pieces[pieces.count - 1] : ""
            return .string(String(last.split(separator: "/", omittingEmptySubsequences: false).first ?? ""))
        case .query:
            return .string(search.hasPrefix("?") ? String(search.dropFirst()) : search)
        case .fragment:
            return .string(hash.hasPrefix("#") ? String(hash.dropFirst()) : hash)
        }
    }

    /// Whether this is a relative reference read without the page's URL: its path, query and fragment are known,
    /// its scheme, host and port are the page's.
    var isRelativeToUnknownPage: Bool { scheme.isEmpty && hostname.isEmpty && !isUnparsed }

    /// The value of the first of `keys` the query has (decoded as gtm.js decodes it; with `ignoringEmpty`, the first
    /// whose value is not empty); undefined when none has one. An empty key (`[""]`) is the whole query (undefined when
    /// it is empty and `ignoringEmpty`).
    package func queryValue(keys: [String], ignoringEmpty: Bool) -> Value {
        let query = search.hasPrefix("?") ? String(search.dropFirst()) : search
        if keys == [""] { return query.isEmpty && ignoringEmpty ? .undefined : .string(query) }
        for key in keys {
            guard let value = Self.queryValue(query, key: key) else { continue }
            if ignoringEmpty && value.isEmpty { continue }
            return .string(value)
        }
        return .undefined
    }

    /// `host` without a leading `www.`, `www2.`, … (gtm.js: `/^www\d*\./`).
    static func removingWww(_ host: String) -> String {
        let bytes = Array(host.utf8)
        guard bytes.count > 4, bytes[0] == 0x77, bytes[1] == 0x77, bytes[2] == 0x77 else { return host }
        var index = 3
        while index < bytes.count, (0x30...0x39).contains(bytes[index]) { index += 1 }
        guard index < bytes.count, bytes[index] == 0x2E else { return host }
        return String(decoding: bytes[(index + 1)...], as: UTF8.self)
    }

    /// gtm.js's query parameter: the value of the first `name=value` pair whose name is `key`, each read with `+` as a
    /// space and then `decodeURIComponent` (a name that does not decode is passed over; a value that does not is
    /// `nil`); `nil` when no pair has it.
    static func queryValue(_ query: String, key: String) -> String? {
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            let pieces = pair.split(separator: "=", omittingEmptySubsequences: false)
            guard URLParts.decodeURIComponent(String(pieces[0]).replacingPluses()) == key else { continue }
            return URLParts.decodeURIComponent(pieces.dropFirst().joined(separator: "=").replacingPluses())
        }
        return nil
    }
}

extension String {
    /// Every `+` as a space (`replace(/\+/g, " ")`).
    fileprivate func replacingPluses() -> String {
        guard utf8.contains(0x2B) else { return self }
        return String(decoding: utf8.map { $0 == 0x2B ? 0x20 : $0 }, as: UTF8.self)
    }
}
