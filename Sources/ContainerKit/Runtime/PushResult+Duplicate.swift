/// The original push of a duplicate, as its session remembers it (one reference in ``PushResult``).
final class DuplicateOrigin: Sendable {
    let event: SeenEventID
    init(_ event: SeenEventID) { self.event = event }
}

extension PushResult {
    /// Whether the push carried an event ID its session had seen within its window, and so was **not applied
    /// again**: nothing was merged, evaluated, fired or recorded (``fired``, ``events`` and ``outputs`` are
    /// empty). ``duplicateOf`` says what the original push did; ``waitUntilDurable()`` waits for the original's
    /// records and commit while this process is still writing them (a stored original is durable already).
    public var isDuplicate: Bool { duplicate != nil }

    /// For a duplicate (``isDuplicate``): the original push, as its session remembers it — when it was applied,
    /// and each tag it fired with its status and the IDs of its records. `nil` for a push that was applied.
    public var duplicateOf: SeenEventID? { duplicate?.event }

    /// Marks this (empty) result as a duplicate of `entry`'s push, waiting for what that push waits for.
    mutating func markDuplicate(of entry: SeenEventIDs.Entry) {
        duplicate = DuplicateOrigin(entry.event)
        if let durability = entry.durability {
            commits = durability.tokens
            commitFailure = durability.failure
        }
    }
}

extension PushResult {
    /// A duplicate's members, what ``appendJSONMembers(to:)`` writes for it: `{"fired":[…],"records":[]`, then
    /// `"duplicate":true` and `"original_time"` (milliseconds since 1970) — `fired` the original's tags as the
    /// session remembers them (``SeenEventID/Tag``: `tag`, `tag_id`, `status`, `message`, `record_ids`), and no
    /// records: they were produced once, by the original.
    func appendDuplicateMembers(_ original: SeenEventID, to bytes: inout [UInt8]) {
        var writer = JSONByteWriter(capacity: 128)
        writer.raw(#"{"fired":["#)
        for (index, tag) in original.fired.enumerated() {
            if index > 0 { writer.raw(0x2C) }
            tag.writeJSON(to: &writer)
        }
        writer.raw(#"],"records":[],"duplicate":true,"original_time":"#)
        writer.integer(original.time)
        writer.withBytes { bytes.append(contentsOf: $0) }
    }

    /// A duplicate as ``jsonValue``: `fired` (the original's tags, as ``appendDuplicateMembers(_:to:)``),
    /// `records` (empty), `duplicate` and `original_time`.
    func duplicateJSONValue(_ original: SeenEventID) -> Value {
        var map = ValueMap(minimumCapacity: 4)
        map["fired"] = .array(original.fired.map(\.jsonValue))
        map["records"] = .array([])
        map["duplicate"] = true
        map["original_time"] = .int(original.time)
        return .object(map)
    }
}
