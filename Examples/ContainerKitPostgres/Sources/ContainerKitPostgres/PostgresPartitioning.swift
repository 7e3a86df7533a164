import ContainerKitDelivery

/// Which delivery partition a record belongs to: `fnv1a64(user key) % count`, so all of a user's records are
/// in one partition (delivered in order by one instance at a time). Records without a user go to partition 0.
public enum PostgresPartitioning {
    /// The partition of `record` among `count`.
    public static func partition(of record: AnalyticsRecord, count: Int) -> Int32 {
        guard let user = record.user else { return 0 }
        switch user {
        case .externalID(let id): return partition(ofKey: "e:" + id, count: count)
        case .brazeID(let id): return partition(ofKey: "b:" + id, count: count)
        case .userAlias(let name, let label): return partition(ofKey: "a:" + label + "\u{0}" + name, count: count)
        }
    }

    /// The partition of a key (its UTF-8 bytes, compared as bytes) among `count`.
    public static func partition(ofKey key: String, count: Int) -> Int32 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return Int32(hash % UInt64(max(1, count)))
    }
}
