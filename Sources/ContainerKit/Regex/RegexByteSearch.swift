/// Substring search over UTF-8 bytes.
enum RegexByteSearch {
    /// The first offset at or after `start` where `needle` occurs in `haystack`, or nil. An empty needle is
    /// found at `start`.
    static func firstIndex(
        of needle: UnsafeBufferPointer<UInt8>,
        in haystack: UnsafeBufferPointer<UInt8>,
        from start: Int
    ) -> Int? {
        let count = haystack.count
        guard let first = needle.first else { return start <= count ? start : nil }
        let length = needle.count
        guard count >= length else { return nil }
        let last = count - length
        var index = start
        while index <= last {
            if haystack[index] == first {
                var offset = 1
                while offset < length && haystack[index + offset] == needle[offset] { offset += 1 }
                if offset == length { return index }
            }
            index += 1
        }
        return nil
    }

    /// ``firstIndex(of:in:from:)`` for an array needle.
    static func firstIndex(of needle: [UInt8], in haystack: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        needle.withUnsafeBufferPointer { firstIndex(of: $0, in: haystack, from: start) }
    }
}
