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
    private let counter = Atomic<UInt64>(0)

    /// Creates a generator with a random 64-bit prefix, or the given one (for reproducible tests).
    public init(prefix: String? = nil) {
        if let prefix {
            self.prefix = prefix
        } else {
            var generator = SystemRandomNumberGenerator()
            self.prefix = String(generator.next() as UInt64, radix: 36)
        }
    }

    /// The next ID.
    public func next() -> String {
        let n = counter.add(1, ordering: .relaxed).newValue
        return prefix + "-" + String(n, radix: 36)
    }
}
