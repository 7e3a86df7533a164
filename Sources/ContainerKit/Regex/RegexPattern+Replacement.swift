extension RegexPattern {
    /// Expands a JavaScript `String.replace` style template for `match` (a match of this pattern in `subject`).
    ///
    /// `$1`…`$99` insert a capture (the longest group number that exists wins: with 12 groups `$12` is group 12,
    /// with 3 groups `$12` is group 1 then `2`); a group that did not participate inserts nothing. `$&` inserts
    /// the whole match, `` $` `` the text before it and `$'` the text after it, and `$$` a single `$`. Any other `$`
    /// is literal.
    public func expandReplacement(_ template: String, match: Match, in subject: String) -> String {
        let scalars = Array(template.unicodeScalars)
        var result = String.UnicodeScalarView()
        var index = 0
        func digit(at offset: Int) -> Int? {
            guard offset < scalars.count, scalars[offset].value >= 0x30, scalars[offset].value <= 0x39 else {
                return nil
            }
            return Int(scalars[offset].value - 0x30)
        }
        func append(_ range: Range<String.Index>?) {
            if let range { result.append(contentsOf: subject.unicodeScalars[range]) }
        }
        while index < scalars.count {
            let scalar = scalars[index]
            guard scalar == "$", index + 1 < scalars.count else {
                result.append(scalar)
                index += 1
                continue
            }
            let next = scalars[index + 1]
            if next == "$" {
                result.append("$")
                index += 2
            } else if next == "&" {
                append(match.range)
                index += 2
            } else if next == "`" {
                append(subject.startIndex..<match.range.lowerBound)
                index += 2
            } else if next == "'" {
                append(match.range.upperBound..<subject.endIndex)
                index += 2
            } else if let tens = digit(at: index + 1), let ones = digit(at: index + 2),
                case let number = tens * 10 + ones, number >= 1, number <= captureCount, number < match.groups.count
            {
                append(match.groups[number])
                index += 3
            } else if let number = digit(at: index + 1), number >= 1, number <= captureCount,
                number < match.groups.count
            {
                append(match.groups[number])
                index += 2
            } else {
                result.append(scalar)
                index += 1
            }
        }
        return String(result)
    }
}
