/// Finds the container data inside a whole `gtm.js` file: the object literal of `var data = {…};`.
///
/// A real `gtm.js` is JavaScript: a licence comment, `(function(){`, the `var data = {…};` statement, then
/// hundreds of kilobytes of code. The locator reads the script as JavaScript tokens — it skips comments,
/// string and template literals and regular-expression literals, so braces or `var data =` inside them do
/// not count — and returns the offset of the `{` that follows the first `var`, `let` or `const`
/// declaration of `data`. One linear pass, no recursion.
enum ScriptDataLocator {
    /// The offset of the `{` of the first `var data = {` (or `let`/`const`) at or after `start`; `nil` when
    /// the script has none (or a comment or literal is left open).
    static func find(_ bytes: [UInt8], from start: Int) -> Int? {
        bytes.withUnsafeBufferPointer { buffer -> Int? in
            var scanner = Scanner(p: buffer, i: start)
            return scanner.run()
        }
    }

    /// The container ID a served `gtm.js` names for itself: the first `ctid` or `containerId` member,
    /// assignment or setter call whose string value is a valid `GTM-XXXX` ID (`ctid:"GTM-K1T5"`,
    /// `"containerId": 'GTM-K1T5'`, and `a.set("containerId", 'GTM-K1T5')` — the sandbox's
    /// `read_container_data` in scripts of about 2022). Scripts of 2025 and later keep it in `data.blob["5"]`
    /// instead (`ctid: Oi(5, "GTM-…")` reads it), which the compiler reads from the data itself.
    static func containerID(in bytes: [UInt8]) -> String? {
        for name in [Array("ctid".utf8), Array("containerId".utf8)] {
            var i = 0
            while let start = firstIndex(of: name, in: bytes, from: i) {
                i = start + name.count
                // A whole identifier: not `xctid` or `ctidx`.
                if start > 0, isIdentifierByte(bytes[start - 1]) { continue }
                var j = i
                var quoted = false
                if j < bytes.count, bytes[j] == 0x22 || bytes[j] == 0x27 {
                    // A quoted name must be a whole string: `"containerId"`, not `"containerIdx"`.
                    guard start > 0, bytes[start - 1] == bytes[j] else { continue }
                    quoted = true
                    j += 1
                }
                while j < bytes.count, bytes[j] == 0x20 || bytes[j] == 0x09 { j += 1 }
                // `name: value`, `name = value`, or a quoted name as a call's first argument: `set("name", value)`.
                guard j < bytes.count, bytes[j] == 0x3A || bytes[j] == 0x3D || (quoted && bytes[j] == 0x2C) else {
                    continue
                }
                j += 1
                while j < bytes.count, bytes[j] == 0x20 || bytes[j] == 0x09 { j += 1 }
                guard j < bytes.count, bytes[j] == 0x22 || bytes[j] == 0x27 else { continue }
                let quote = bytes[j]
                let valueStart = j + 1
                var end = valueStart
                while end < bytes.count, end - valueStart <= 32, bytes[end] != quote { end += 1 }
                guard end < bytes.count, bytes[end] == quote else { continue }
                let candidate = String(decoding: bytes[valueStart..<end], as: UTF8.self)
                if ContainerLoader.isContainerID(candidate) { return candidate }
            }
        }
        return idBesideVersion(in: bytes)
    }

    /// Scripts of about 2019–2021 name neither: a minified member holds the ID, the next one the container's
    /// version or numeric ID (`ld.s="GTM-MGKBKT5";ld.Ob="783"`, `{R:"GTM-TDPBXX",Yb:"504339"}`). The first such
    /// pair: a `GTM-XXXX` string assigned (`=` or `:`), then `;` or `,`, a member name, `=` or `:` and a string of
    /// digits.
    private static func idBesideVersion(in bytes: [UInt8]) -> String? {
        let prefix = Array("GTM-".utf8)
        var i = 0
        while let start = firstIndex(of: prefix, in: bytes, from: i) {
            i = start + prefix.count
            guard start >= 2, bytes[start - 1] == 0x22 || bytes[start - 1] == 0x27,
                bytes[start - 2] == 0x3D || bytes[start - 2] == 0x3A
            else { continue }
            let quote = bytes[start - 1]
            var end = start
            while end < bytes.count, end - start <= 32, bytes[end] != quote { end += 1 }
            guard end < bytes.count, bytes[end] == quote else { continue }
            let candidate = String(decoding: bytes[start..<end], as: UTF8.self)
            guard ContainerLoader.isContainerID(candidate) else { continue }
            var j = end + 1
            guard j < bytes.count, bytes[j] == 0x3B || bytes[j] == 0x2C else { continue }
            j += 1
            let nameStart = j
            while j < bytes.count, isIdentifierByte(bytes[j]) || bytes[j] == 0x2E { j += 1 }
            guard j > nameStart, j < bytes.count, bytes[j] == 0x3D || bytes[j] == 0x3A else { continue }
            j += 1
            guard j < bytes.count, bytes[j] == 0x22 || bytes[j] == 0x27 else { continue }
            let digitsQuote = bytes[j]
            j += 1
            let digitsStart = j
            while j < bytes.count, (0x30...0x39).contains(bytes[j]) { j += 1 }
            if j > digitsStart, j < bytes.count, bytes[j] == digitsQuote { return candidate }
        }
        return nil
    }

    private static func firstIndex(of needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard let first = needle.first, needle.count <= bytes.count else { return nil }
        var i = start
        while i + needle.count <= bytes.count {
            if bytes[i] == first, bytes[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    private static func isIdentifierByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F
            || byte == 0x24
    }

    private struct Scanner {
        let p: UnsafeBufferPointer<UInt8>
        var i: Int
        /// Whether a `/` here starts a regular expression (after an operator or a keyword) rather than
        /// dividing (after a value).
        var regexAllowed = true
        /// The declaration keyword just read (`var`, `let`, `const`), if the last token was one.
        var declaring = false

        static let keywordsBeforeExpression: Set<String> = [
            "return", "typeof", "instanceof", "in", "of", "new", "delete", "void", "throw", "case", "do", "else",
            "yield", "await",
        ]

        mutating func run() -> Int? {
            while i < p.count {
                let c = p[i]
                switch c {
                case 0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C:
                    i += 1
                case 0x2F:  // /
                    if i + 1 < p.count, p[i + 1] == 0x2F || p[i + 1] == 0x2A {
                        guard skipComment() else { return nil }
                    } else if regexAllowed {
                        // A line that ends inside it was no regex after all: read the `/` as division.
                        let slash = i
                        if !skipRegex() { i = slash + 1 }
                        regexAllowed = false
                        declaring = false
                    } else {
                        i += 1
                        regexAllowed = true
                        declaring = false
                    }
                case 0x22, 0x27:  // " '
                    guard skipString(quote: c) else { return nil }
                    regexAllowed = false
                    declaring = false
                case 0x60:  // `
                    guard skipTemplate() else { return nil }
                    regexAllowed = false
                    declaring = false
                case 0x30...0x39:
                    while i < p.count, isIdentifierByte(p[i]) || p[i] == 0x2E { i += 1 }
                    regexAllowed = false
                    declaring = false
                case _ where isIdentifierStart(c):
                    let wordStart = i
                    while i < p.count, isIdentifierByte(p[i]) { i += 1 }
                    let word = String(decoding: UnsafeBufferPointer(rebasing: p[wordStart..<i]), as: UTF8.self)
                    if declaring, word == "data", let object = objectAfterAssignment() { return object }
                    declaring = word == "var" || word == "let" || word == "const"
                    regexAllowed = Scanner.keywordsBeforeExpression.contains(word)
                case 0x29, 0x5D, 0x7D:  // ) ] }
                    i += 1
                    regexAllowed = false
                    declaring = false
                default:
                    i += 1
                    regexAllowed = true
                    declaring = false
                }
            }
            return nil
        }

        /// After `data`: whitespace and comments, `=` (not `==`), whitespace and comments, then `{`.
        mutating func objectAfterAssignment() -> Int? {
            let resume = i
            skipTrivia()
            if i + 1 < p.count, p[i] == 0x3D, p[i + 1] != 0x3D {
                i += 1
                skipTrivia()
                if i < p.count, p[i] == 0x7B { return i }
            }
            i = resume
            return nil
        }

        mutating func skipTrivia() {
            while i < p.count {
                switch p[i] {
                case 0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C: i += 1
                case 0x2F where i + 1 < p.count && (p[i + 1] == 0x2F || p[i + 1] == 0x2A):
                    guard skipComment() else { return }
                default: return
                }
            }
        }

        /// `//` to the end of the line, or `/*` to `*/`; false when a block comment is left open.
        mutating func skipComment() -> Bool {
            if p[i + 1] == 0x2F {
                i += 2
                while i < p.count, p[i] != 0x0A, p[i] != 0x0D { i += 1 }
                return true
            }
            i += 2
            while i + 1 < p.count {
                if p[i] == 0x2A, p[i + 1] == 0x2F {
                    i += 2
                    return true
                }
                i += 1
            }
            return false
        }

        /// A string literal with backslash escapes. A line end inside it means the quote was not a string's
        /// (a regex read as division, say): scanning goes on from that line end. False only at the file end.
        mutating func skipString(quote: UInt8) -> Bool {
            i += 1
            while i < p.count {
                switch p[i] {
                case quote:
                    i += 1
                    return true
                case 0x5C: i += 2
                case 0x0A, 0x0D: return true
                default: i += 1
                }
            }
            return false
        }

        /// A template literal; `${…}` parts are skipped with their braces counted (strings inside them too).
        mutating func skipTemplate() -> Bool {
            i += 1
            while i < p.count {
                switch p[i] {
                case 0x60:
                    i += 1
                    return true
                case 0x5C:
                    i += 2
                case 0x24 where i + 1 < p.count && p[i + 1] == 0x7B:
                    i += 2
                    var depth = 1
                    while i < p.count, depth > 0 {
                        switch p[i] {
                        case 0x7B: depth += 1; i += 1
                        case 0x7D: depth -= 1; i += 1
                        case 0x22, 0x27: guard skipString(quote: p[i]) else { return false }
                        default: i += 1
                        }
                    }
                default:
                    i += 1
                }
            }
            return false
        }

        /// A regular-expression literal: to the `/` outside a class, then its flags. False when a line ends
        /// first (then it was no regex).
        mutating func skipRegex() -> Bool {
            i += 1
            var inClass = false
            while i < p.count {
                switch p[i] {
                case 0x5C: i += 2
                case 0x5B: inClass = true; i += 1
                case 0x5D: inClass = false; i += 1
                case 0x2F where !inClass:
                    i += 1
                    while i < p.count, isIdentifierByte(p[i]) { i += 1 }
                    return true
                case 0x0A, 0x0D: return false
                default: i += 1
                }
            }
            return false
        }

        func isIdentifierStart(_ b: UInt8) -> Bool {
            (b >= 0x61 && b <= 0x7A) || (b >= 0x41 && b <= 0x5A) || b == 0x5F || b == 0x24 || b >= 0x80
        }

        func isIdentifierByte(_ b: UInt8) -> Bool { isIdentifierStart(b) || (b >= 0x30 && b <= 0x39) }
    }
}
