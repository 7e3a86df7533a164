/// A URL taken apart as a browser's `<a>` element does when gtm.js sets its `href` (the `href`, `protocol`,
/// `hostname`, `port`, `pathname`, `search` and `hash` it reads back): what the URL (`__u`) and Referrer (`__f`)
/// variables read their parts from.
///
/// The WHATWG URL parser, for the URLs pages have: a scheme and an authority (`https://host:port/path?query#fragment`),
/// a reference relative to the page (`/path`, `?query`, `#fragment`, `other.html`, `//host/path`), or an opaque URL
/// (`mailto:…`). Scheme and host are lowercased, a default port dropped, `.` and `..` path segments resolved, and the
/// characters a browser percent-encodes (spaces, quotes, `<`, `>`, non-ASCII) encoded; internationalized host names
/// are kept as written (a browser would convert them to punycode).
package struct URLParts: Sendable, Equatable {
    /// The URL as the browser serializes it.
    package var href: String
    /// The scheme, lowercased, without its `:` (`"https"`).
    package var scheme: String
    /// The host name, lowercased, without its port (`""` for an opaque URL).
    package var hostname: String
    /// The port as written when it is not the scheme's default; `""` otherwise.
    package var port: String
    /// The path (`"/"` at least for a URL with a host).
    package var pathname: String
    /// `"?"` and the query, or `""` when the query is empty.
    package var search: String
    /// `"#"` and the fragment, or `""` when the fragment is empty.
    package var hash: String
    /// Whether ``href`` is text an `<a>` could not read as a URL (``unparsed(_:)``).
    package private(set) var isUnparsed = false
    /// `user:password@` as written in ``href`` (`""` when none): what a relative reference keeps.
    private var userinfo = ""
    /// The query as written in ``href`` (`""` where ``search`` is `""` for a lone `?`), `nil` when there is none.
    private var rawSearch: String?

    /// The base of a relative reference when the page's URL is not known: a reference then has its path, query and
    /// fragment, and no scheme or host.
    package static let unknownPage = URLParts(
        href: "",
        scheme: "",
        hostname: "",
        port: "",
        pathname: "/",
        search: "",
        hash: ""
    )

    /// What an `<a>` reads back from an `href` that is not a URL: the text as its `href`, every part empty (the
    /// path `/` as gtm.js completes it).
    package static func unparsed(_ text: String) -> URLParts {
        var parts = URLParts(href: text, scheme: "", hostname: "", port: "", pathname: "/", search: "", hash: "")
        parts.isUnparsed = true
        return parts
    }

    /// `text` read as an `<a href>` on the page `page` (``unknownPage`` when not known) reads it, or as text an `<a>`
    /// could not read.
    package static func reading(_ text: String, on page: URLParts?) -> URLParts {
        URLParts(text, base: page ?? .unknownPage) ?? .unparsed(text)
    }

    /// The default ports of the schemes that have one (the WHATWG "special" schemes but `file`).
    static let defaultPorts: [String: Int] = ["http": 80, "https": 443, "ws": 80, "wss": 443, "ftp": 21]

    /// Parses `text` as an `<a href>` would, resolving a relative reference against `base` (the page's URL).
    /// `nil` when it is not a URL a browser accepts (a relative reference without a base, an authority without a
    /// host, a port that is not a number below 65,536).
    package init?(_ text: String, base: URLParts?) {
        // Leading and trailing C0 controls and spaces go; tabs and newlines anywhere go.
        let all = text.utf8
        let start = all.firstIndex { $0 > 0x20 } ?? all.endIndex
        let end = all.lastIndex { $0 > 0x20 }.map { all.index(after: $0) } ?? start
        let bytes = all[start..<max(start, end)].filter { $0 != 0x09 && $0 != 0x0A && $0 != 0x0D }

        var rest = bytes[...]
        var scheme = ""
        if let colon = Self.schemeEnd(bytes) {
            scheme = String(decoding: bytes[..<colon], as: UTF8.self).lowercased()
            rest = bytes[(colon + 1)...]
        }
        if scheme.isEmpty {
            guard let base else { return nil }
            self.init(relative: rest, base: base)
            return
        }
        let special = Self.defaultPorts[scheme] != nil || scheme == "file"
        guard special else {
            self.init(opaque: rest, scheme: scheme)
            return
        }
        // "http:path" against an http base is relative to it; any number of slashes (either way) precede an authority.
        if let base, base.scheme == scheme, rest.first != 0x2F, rest.first != 0x5C {
            self.init(relative: rest, base: base)
            return
        }
        while let first = rest.first, first == 0x2F || first == 0x5C { rest = rest.dropFirst() }
        guard let parsed = Self.authorityAndPath(rest, scheme: scheme) else { return nil }
        self = parsed
    }

    /// An opaque URL (`mailto:a@b`, `javascript:void(0)`): its path is everything before `?` and `#`.
    private init(opaque rest: ArraySlice<UInt8>, scheme: String) {
        let (path, search, hash) = Self.splitPathQueryFragment(rest, special: false)
        let encodedPath = Self.encode(path, set: .c0Control)
        self.scheme = scheme
        hostname = ""
        port = ""
        pathname = encodedPath
        self.search = search.map { Self.searchText($0, special: false) } ?? ""
        self.hash = hash.map(Self.hashText) ?? ""
        rawSearch = search.map { Self.encode($0, set: .query) }
        href =
            scheme + ":" + encodedPath + (rawSearch.map { "?" + $0 } ?? "")
            + (hash.map { "#" + Self.encode($0, set: .fragment) } ?? "")
    }

    /// A reference relative to `base`.
    private init(relative rest: ArraySlice<UInt8>, base: URLParts) {
        let isSlash: (UInt8) -> Bool = { $0 == 0x2F || $0 == 0x5C }
        if rest.count >= 2, isSlash(rest[rest.startIndex]), isSlash(rest[rest.startIndex + 1]) {
            // Scheme-relative: `//host/path`.
            var authority = rest
            while let first = authority.first, isSlash(first) { authority = authority.dropFirst() }
            if let parsed = Self.authorityAndPath(authority, scheme: base.scheme) {
                self = parsed
                return
            }
        }
        let (path, search, hash) = Self.splitPathQueryFragment(rest, special: true)
        var resolvedPath = base.pathname
        var resolvedSearch = base.search
        if !path.isEmpty {
            let merged: [UInt8]
            if isSlash(path[path.startIndex]) {
                merged = Array(path)
            } else {
                // Everything of the base's path up to its last slash, then the reference.
                let basePath = Array(base.pathname.utf8)
                let cut = basePath.lastIndex(of: 0x2F).map { $0 + 1 } ?? 0
                merged = Array(basePath[..<cut]) + Array(path)
            }
            resolvedPath = Self.normalizedPath(merged[...])
            resolvedSearch = search.map { Self.searchText($0, special: true) } ?? ""
        } else if let search {
            resolvedSearch = Self.searchText(search, special: true)
        }
        let resolvedHash = hash.map(Self.hashText) ?? ""
        let resolvedRawSearch =
            path.isEmpty && search == nil ? base.rawSearch : search.map { Self.encode($0, set: .specialQuery) }
        self.scheme = base.scheme
        userinfo = base.userinfo
        rawSearch = resolvedRawSearch
        hostname = base.hostname
        port = base.port
        pathname = resolvedPath
        self.search = resolvedSearch
        self.hash = resolvedHash
        href = Self.serialize(
            scheme: base.scheme,
            userinfo: base.userinfo,
            hostname: base.hostname,
            port: base.port,
            pathname: resolvedPath,
            rawSearch: resolvedRawSearch,
            rawHash: hash.map { Self.encode($0, set: .fragment) }
        )
    }

    /// Parses `host[:port]` and what follows it for a special scheme.
    private static func authorityAndPath(_ rest: ArraySlice<UInt8>, scheme: String) -> URLParts? {
        let end = rest.firstIndex { $0 == 0x2F || $0 == 0x5C || $0 == 0x3F || $0 == 0x23 } ?? rest.endIndex
        var authority = rest[rest.startIndex..<end]
        var userinfo = ""
        if let at = authority.lastIndex(of: 0x40) {
            userinfo = encode(authority[authority.startIndex..<at], set: .userinfo) + "@"
            authority = authority[(at + 1)...]
        }
        var hostBytes = authority
        var portText = ""
        // The port follows the last colon that is not inside an IPv6 literal's brackets.
        if let colon = authority.lastIndex(of: 0x3A), !authority[colon...].contains(0x5D) {
            hostBytes = authority[authority.startIndex..<colon]
            let digits = authority[(colon + 1)...]
            guard digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            if !digits.isEmpty {
                let trimmed = digits.drop { $0 == 0x30 }
                let number = trimmed.isEmpty ? 0 : Int(String(decoding: trimmed, as: UTF8.self)) ?? .max
                guard trimmed.count <= 5, number <= 65_535 else { return nil }
                if number != defaultPorts[scheme] { portText = String(number) }
            }
        }
        let host = decodePercent(hostBytes).map { String(decoding: $0, as: UTF8.self).lowercased() }
        guard let host, !host.isEmpty || scheme == "file",
            !host.utf8.contains(where: { $0 <= 0x20 || $0 == 0x23 || $0 == 0x2F || $0 == 0x3F || $0 == 0x40 })
        else { return nil }
        let (path, search, hash) = splitPathQueryFragment(rest[end...], special: true)
        let pathname = normalizedPath(path)
        let rawSearch = search.map { encode($0, set: .specialQuery) }
        var parts = URLParts(
            href: serialize(
                scheme: scheme,
                userinfo: userinfo,
                hostname: host,
                port: portText,
                pathname: pathname,
                rawSearch: rawSearch,
                rawHash: hash.map { encode($0, set: .fragment) }
            ),
            scheme: scheme,
            hostname: host,
            port: portText,
            pathname: pathname,
            search: search.map { searchText($0, special: true) } ?? "",
            hash: hash.map(hashText) ?? ""
        )
        parts.userinfo = userinfo
        parts.rawSearch = rawSearch
        return parts
    }

    private init(
        href: String,
        scheme: String,
        hostname: String,
        port: String,
        pathname: String,
        search: String,
        hash: String
    ) {
        self.href = href
        self.scheme = scheme
        self.hostname = hostname
        self.port = port
        self.pathname = pathname
        self.search = search
        self.hash = hash
    }

    private static func serialize(
        scheme: String,
        userinfo: String,
        hostname: String,
        port: String,
        pathname: String,
        rawSearch: String?,
        rawHash: String?
    ) -> String {
        // A reference read without the page's URL has neither scheme nor host: its path, query and fragment.
        var text = scheme.isEmpty ? "" : scheme + "://" + userinfo + hostname
        if !port.isEmpty { text += ":" + port }
        text += pathname
        if let rawSearch { text += "?" + rawSearch }
        if let rawHash { text += "#" + rawHash }
        return text
    }

    /// The end of a scheme (`[A-Za-z][A-Za-z0-9+.-]*:`): the colon's index.
    private static func schemeEnd(_ bytes: [UInt8]) -> Int? {
        guard let first = bytes.first, isLetter(first) else { return nil }
        for (index, byte) in bytes.enumerated().dropFirst() {
            if byte == 0x3A { return index }
            guard isLetter(byte) || (0x30...0x39).contains(byte) || byte == 0x2B || byte == 0x2D || byte == 0x2E
            else { return nil }
        }
        return nil
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (0x61...0x7A).contains(byte | 0x20) }

    /// The path, the query (after `?`) and the fragment (after `#`) of what follows the authority.
    private static func splitPathQueryFragment(
        _ rest: ArraySlice<UInt8>,
        special: Bool
    ) -> (path: ArraySlice<UInt8>, search: ArraySlice<UInt8>?, hash: ArraySlice<UInt8>?) {
        var beforeHash = rest
        var hash: ArraySlice<UInt8>?
        if let mark = rest.firstIndex(of: 0x23) {
            beforeHash = rest[rest.startIndex..<mark]
            hash = rest[(mark + 1)...]
        }
        var path = beforeHash
        var search: ArraySlice<UInt8>?
        if let mark = beforeHash.firstIndex(of: 0x3F) {
            path = beforeHash[beforeHash.startIndex..<mark]
            search = beforeHash[(mark + 1)...]
        }
        return (path, search, hash)
    }

    /// A special URL's path: backslashes as slashes, `.` and `..` segments (also as `%2e`) resolved, encoded.
    private static func normalizedPath(_ path: ArraySlice<UInt8>) -> String {
        var segments: [ArraySlice<UInt8>] = []
        let parts = path.split(omittingEmptySubsequences: false) { $0 == 0x2F || $0 == 0x5C }
        // A leading slash makes an empty first part.
        let body = parts.first?.isEmpty == true ? parts.dropFirst() : parts[...]
        for (offset, segment) in body.enumerated() {
            let isLast = offset == body.count - 1
            switch dotSegment(segment) {
            case 1:
                if isLast { segments.append([][...]) }
            case 2:
                if !segments.isEmpty { segments.removeLast() }
                if isLast { segments.append([][...]) }
            default:
                segments.append(segment)
            }
        }
        var text = ""
        for segment in segments { text += "/" + encode(segment, set: .path) }
        return text.isEmpty ? "/" : text
    }

    /// 1 for `.`, 2 for `..` (either spelled with `%2e`), 0 for any other segment.
    private static func dotSegment(_ segment: ArraySlice<UInt8>) -> Int {
        let lower = String(decoding: segment, as: UTF8.self).lowercased()
        switch lower {
        case ".", "%2e": return 1
        case "..", ".%2e", "%2e.", "%2e%2e": return 2
        default: return 0
        }
    }

    private static func searchText(_ query: ArraySlice<UInt8>, special: Bool) -> String {
        query.isEmpty ? "" : "?" + encode(query, set: special ? .specialQuery : .query)
    }

    private static func hashText(_ fragment: ArraySlice<UInt8>) -> String {
        fragment.isEmpty ? "" : "#" + encode(fragment, set: .fragment)
    }

    /// The WHATWG percent-encode sets a browser applies to each part.
    enum EncodeSet {
        case c0Control, fragment, query, specialQuery, path, userinfo

        func contains(_ byte: UInt8) -> Bool {
            if byte < 0x20 || byte > 0x7E { return true }
            switch self {
            case .c0Control: return false
            case .fragment: return byte == 0x20 || byte == 0x22 || byte == 0x3C || byte == 0x3E || byte == 0x60
            case .query: return byte == 0x20 || byte == 0x22 || byte == 0x23 || byte == 0x3C || byte == 0x3E
            case .specialQuery: return EncodeSet.query.contains(byte) || byte == 0x27
            case .path:
                return EncodeSet.query.contains(byte) || byte == 0x3F || byte == 0x60 || byte == 0x7B || byte == 0x7D
            case .userinfo:
                return EncodeSet.path.contains(byte) || byte == 0x2F || byte == 0x3A || byte == 0x3B || byte == 0x3D
                    || byte == 0x40 || (0x5B...0x5E).contains(byte) || byte == 0x7C
            }
        }
    }

    /// `bytes` with the bytes of `set` percent-encoded (`%XX`, upper-case hex); a `%` already there is kept.
    static func encode(_ bytes: ArraySlice<UInt8>, set: EncodeSet) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        for byte in bytes {
            if set.contains(byte) {
                out.append(0x25)
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 0x0F)])
            } else {
                out.append(byte)
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Each `%XX` as its byte; `nil` when a `%` is not followed by two hex digits or the result is not UTF-8.
    static func decodePercent(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == 0x25 {
                guard index + 2 < bytes.endIndex, let high = HexDigit.value(bytes[index + 1]),
                    let low = HexDigit.value(bytes[index + 2])
                else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte)
                index += 1
            }
        }
        guard String(validating: out, as: UTF8.self) != nil else { return nil }
        return out
    }

    /// JavaScript's `decodeURIComponent(text)`; `nil` where it throws (a malformed escape or bytes that are not
    /// UTF-8).
    package static func decodeURIComponent(_ text: String) -> String? {
        guard text.utf8.contains(0x25) else { return text }
        return decodePercent(Array(text.utf8)[...]).map { String(decoding: $0, as: UTF8.self) }
    }
}
