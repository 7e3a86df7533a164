/// Byte-level string tests. Foundation's `String.contains` costs ~450 ns on Linux; a UTF-8 scan ~20 ns.
package enum TextSearch {
    /// Whether `haystack` contains `needle` (byte-wise UTF-8 comparison).
    package static func contains(_ haystack: String, _ needle: String) -> Bool {
        if needle.isEmpty { return true }
        var haystack = haystack
        var needle = needle
        return haystack.withUTF8 { h in
            needle.withUTF8 { n in
                guard n.count <= h.count else { return false }
                let first = n[0]
                let last = h.count - n.count
                var i = 0
                while i <= last {
                    if h[i] == first {
                        var j = 1
                        while j < n.count && h[i + j] == n[j] { j += 1 }
                        if j == n.count { return true }
                    }
                    i += 1
                }
                return false
            }
        }
    }

    /// Whether `s` starts with `prefix`, byte-wise.
    package static func hasPrefix(_ s: String, _ prefix: String) -> Bool {
        s.utf8.count >= prefix.utf8.count && s.utf8.starts(with: prefix.utf8)
    }

    /// Whether `s` ends with `suffix`, byte-wise.
    package static func hasSuffix(_ s: String, _ suffix: String) -> Bool {
        let a = s.utf8
        let b = suffix.utf8
        guard a.count >= b.count else { return false }
        return a[a.index(a.endIndex, offsetBy: -b.count)...].elementsEqual(b)
    }
}
