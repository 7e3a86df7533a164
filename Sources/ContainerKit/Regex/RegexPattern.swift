import Foundation

// PLACEHOLDER: to be replaced by a linear-time engine with the same API.

/// A compiled regular expression.
public struct RegexPattern: Sendable {
    public struct Options: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }
        public static let ignoreCase = Options(rawValue: 1)
    }

    public struct Match: Sendable {
        public let range: Range<String.Index>
        public let groups: [Range<String.Index>?]
    }

    public let source: String
    public let options: Options
    private let regex: NSRegularExpressionBox

    public init(_ source: String, options: Options = []) throws(RegexPatternError) {
        self.source = source
        self.options = options
        do {
            regex = NSRegularExpressionBox(
                try NSRegularExpression(pattern: source, options: options.contains(.ignoreCase) ? [.caseInsensitive] : [])
            )
        } catch {
            throw RegexPatternError(message: "invalid pattern", offset: 0)
        }
    }

    public var captureCount: Int { regex.value.numberOfCaptureGroups }

    public func matches(_ subject: String) -> Bool { firstMatch(in: subject) != nil }

    public func firstMatch(in subject: String) -> Match? {
        let ns = NSRange(subject.startIndex..., in: subject)
        guard let m = regex.value.firstMatch(in: subject, range: ns), let r = Range(m.range, in: subject) else {
            return nil
        }
        var groups: [Range<String.Index>?] = []
        for i in 0..<m.numberOfRanges { groups.append(Range(m.range(at: i), in: subject)) }
        return Match(range: r, groups: groups)
    }

    public func expandReplacement(_ template: String, match: Match, in subject: String) -> String {
        var out = ""
        var chars = Array(template)
        var i = 0
        while i < chars.count {
            if chars[i] == "$", i + 1 < chars.count, let d = chars[i + 1].wholeNumberValue, d < match.groups.count {
                if let r = match.groups[d] { out += subject[r] }
                i += 2
            } else {
                out.append(chars[i])
                i += 1
            }
        }
        chars.removeAll()
        return out
    }

    public func wholeMatch(in subject: String) -> Match? {
        guard let m = firstMatch(in: subject), m.range == subject.startIndex..<subject.endIndex else { return nil }
        return m
    }
}

public struct RegexPatternError: Error, Sendable, Hashable {
    public var message: String
    public var offset: Int
}

final class NSRegularExpressionBox: @unchecked Sendable {
    let value: NSRegularExpression
    init(_ value: NSRegularExpression) { self.value = value }
}
