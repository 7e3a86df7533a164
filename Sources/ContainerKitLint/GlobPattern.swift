import ContainerKit

/// A path glob: `*` matches within one path segment, `?` one character of a segment, `**` any number of
/// segments (including none).
struct GlobPattern: Sendable {
    private let pattern: [Character]

    init(_ pattern: String) {
        var text = pattern
        while text.hasPrefix("./") { text.removeFirst(2) }
        while text.count > 1 && text.hasSuffix("/") { text.removeLast() }
        self.pattern = Array(text)
    }

    /// Whether the whole path matches.
    func matches(_ path: String) -> Bool {
        let subject = Array(path)
        var memo = [Int: Bool]()
        return match(0, 0, subject, &memo)
    }

    /// Whether the path or one of its parent directories matches (so `vendor` excludes `vendor/a.json`).
    func matchesPathOrParent(_ path: String) -> Bool {
        if matches(path) { return true }
        var prefix = ""
        for segment in path.split(separator: "/", omittingEmptySubsequences: false).dropLast() {
            prefix += prefix.isEmpty && !path.hasPrefix("/") ? String(segment) : "/" + segment
            if !prefix.isEmpty, matches(prefix) { return true }
        }
        return false
    }

    private func match(_ p: Int, _ s: Int, _ subject: [Character], _ memo: inout [Int: Bool]) -> Bool {
        let key = p * (subject.count + 1) + s
        if let known = memo[key] { return known }
        let result: Bool
        if p == pattern.count {
            result = s == subject.count
        } else if pattern[p] == "*" {
            if p + 1 < pattern.count && pattern[p + 1] == "*" {
                // `**/` may match nothing; `**` matches across segments.
                var next = p + 2
                if next < pattern.count && pattern[next] == "/" { next += 1 }
                var found = match(next, s, subject, &memo)
                var i = s
                while !found && i < subject.count {
                    i += 1
                    found = match(next, i, subject, &memo) || match(p + 2, i, subject, &memo)
                }
                result = found
            } else {
                var found = match(p + 1, s, subject, &memo)
                var i = s
                while !found && i < subject.count && subject[i] != "/" {
                    i += 1
                    found = match(p + 1, i, subject, &memo)
                }
                result = found
            }
        } else if s < subject.count && (pattern[p] == subject[s] || (pattern[p] == "?" && subject[s] != "/")) {
            result = match(p + 1, s + 1, subject, &memo)
        } else {
            result = false
        }
        memo[key] = result
        return result
    }
}
