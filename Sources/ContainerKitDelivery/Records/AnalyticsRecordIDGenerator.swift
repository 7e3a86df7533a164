import Synchronization

/// Makes record IDs that are unique across processes without a system call per ID: a random prefix
/// chosen once per generator, then a counter (`"k3f9w2x1q8-1"`, `"k3f9w2x1q8-2"`, …).
///
/// ```swift
/// let ids = AnalyticsRecordIDGenerator()
/// let record = AnalyticsRecord(id: ids.next(), user: nil, payload: .customEvent(name: "played", properties: [:]))
/// ```
public final class AnalyticsRecordIDGenerator: Sendable {
    private let prefix: String
    /// `prefix` and the dash, as bytes (each ID is made in one allocation from them and the counter's digits).
    private let head: [UInt8]
    private let counter = Atomic<UInt64>(0)

    /// Creates a generator with a random 64-bit prefix, or the given one (for reproducible tests).
    public init(prefix: String? = nil) {
        if let prefix {
            self.prefix = prefix
        } else {
            var generator = SystemRandomNumberGenerator()
            self.prefix = String(generator.next() as UInt64, radix: 36)
        }
        head = Array(self.prefix.utf8) + [0x2D]
    }

    private static let digits = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    /// The next ID.
    public func next() -> String {
        var n = counter.add(1, ordering: .relaxed).newValue
        // Base-36 digits of the counter, last first (13 digits hold any UInt64).
        var reversed: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let count = withUnsafeMutableBytes(of: &reversed) { buffer in
            var count = 0
            repeat {
                buffer[count] = Self.digits[Int(n % 36)]
                n /= 36
                count += 1
            } while n > 0
            return count
        }
        return withUnsafeBytes(of: reversed) { digits in
            head.withUnsafeBufferPointer { head in
                String(unsafeUninitializedCapacity: head.count + count) { buffer in
                    _ = buffer.initialize(fromContentsOf: head)
                    for index in 0..<count { buffer[head.count + index] = digits[count - 1 - index] }
                    return head.count + count
                }
            }
        }
    }
}
