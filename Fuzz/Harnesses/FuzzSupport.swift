// Shared by every harness: turns libFuzzer's buffer into bytes.

// Foundation, imported here, is linked into every harness: the package's modules import it internally, so a
// harness that imports no Foundation itself (httpanswer) would link without it (and without Dispatch).
import Foundation

func fuzzBytes(_ data: UnsafePointer<UInt8>?, _ size: Int) -> [UInt8] {
    guard let data, size > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: data, count: size))
}

/// Splits at the first NUL: (before, after) — after is `nil` without one.
func splitAtNUL(_ bytes: [UInt8]) -> ([UInt8], [UInt8]?) {
    guard let nul = bytes.firstIndex(of: 0) else { return (bytes, nil) }
    return (Array(bytes[..<nul]), Array(bytes[(nul + 1)...]))
}
