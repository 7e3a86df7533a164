#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An event ID a session has seen: the ID a push carried (``DataLayer/push(event:parameters:eventID:)``,
/// ``SessionStore/push(event:parameters:for:context:eventID:eventTime:waitsForDurability:tracing:prepare:)``), when that push was
/// applied, and what it did, in short.
///
/// The seen IDs are part of the session's state (``SessionSnapshot/eventIDs``, and each push's new ones in its
/// ``SessionDelta``), so a retried push is recognised on any instance that loads the session, after a restart
/// too. A push carrying an ID the session remembers is not applied again: its result is marked
/// ``PushResult/isDuplicate`` and names this summary of the original (``PushResult/duplicateOf``).
///
/// The summary is what the session keeps, not the original result: each fired tag's index, `tag_id`, status
/// (with its message) and the IDs of its records (``TagRecord/recordID``), never the records, parameters or
/// names — so that a thousand remembered IDs stay small.
public struct SeenEventID: Sendable, Hashable {
    /// What one tag fired by the original push did, in short.
    public struct Tag: Sendable, Hashable {
        /// The tag's index in its compiled container.
        public var index: Int
        /// The tag's `tag_id`, when it has one.
        public var tagID: Int?
        /// Its status's name (``FiredTag/Status/name``: `ok`, `dropped`, …).
        public var status: String
        /// What a `failed` or `dropped` status said.
        public var message: String?
        /// The IDs of the records its handler produced, in order (records without an ID are not listed).
        public var recordIDs: [String]

        /// Creates a tag's summary.
        public init(index: Int, tagID: Int? = nil, status: String, message: String? = nil, recordIDs: [String] = []) {
            self.index = index
            self.tagID = tagID
            self.status = status
            self.message = message
            self.recordIDs = recordIDs
        }

        /// The tag as JSON: `{"tag", "tag_id"?, "status", "message"?, "record_ids"?}`.
        public var jsonValue: Value {
            var entry = ValueMap(minimumCapacity: 5)
            entry["tag"] = .int(Int64(index))
            if let tagID { entry["tag_id"] = .int(Int64(tagID)) }
            entry["status"] = .string(status)
            if let message { entry["message"] = .string(message) }
            if !recordIDs.isEmpty { entry["record_ids"] = .array(recordIDs.map(Value.string)) }
            return .object(entry)
        }

        /// Appends the compact JSON text of ``jsonValue`` (the same bytes).
        package func writeJSON(to writer: inout JSONByteWriter) {
            writer.raw(#"{"tag":"#)
            writer.integer(Int64(index))
            if let tagID {
                writer.raw(#","tag_id":"#)
                writer.integer(Int64(tagID))
            }
            writer.raw(#","status":"#)
            writer.string(status)
            if let message {
                writer.raw(#","message":"#)
                writer.string(message)
            }
            if !recordIDs.isEmpty {
                writer.raw(#","record_ids":["#)
                for (position, recordID) in recordIDs.enumerated() {
                    if position > 0 { writer.raw(0x2C) }
                    writer.string(recordID)
                }
                writer.raw(0x5D)
            }
            writer.raw(0x7D)
        }

        /// The summary of `tag`.
        public init(_ tag: FiredTag) {
            self.init(
                index: tag.index,
                tagID: tag.tagID,
                status: tag.status.name,
                message: tag.status.message,
                recordIDs: tag.output?.records.compactMap(\.recordID) ?? []
            )
        }
    }

    /// The event ID, as the push gave it (compared as bytes).
    public var id: String
    /// When the push was applied, in milliseconds since 1970-01-01 UTC (the session's ``EventIDWindow/clock``).
    public var time: Int64
    /// The tags the push fired (with those of the pushes its handlers made), in firing order.
    public var fired: [Tag]

    /// Creates a seen ID.
    public init(id: String, time: Int64, fired: [Tag] = []) {
        self.id = id
        self.time = time
        self.fired = fired
    }

    // MARK: JSON

    /// The seen ID as JSON: `{"id", "time", "fired"?: [{"tag", "tag_id"?, "status", "message"?, "record_ids"?}]}`,
    /// members that carry nothing left out.
    public var jsonValue: Value {
        var map = ValueMap(minimumCapacity: 3)
        map["id"] = .string(id)
        map["time"] = .int(time)
        if !fired.isEmpty {
            map["fired"] = .array(
                fired.map(\.jsonValue)
            )
        }
        return .object(map)
    }

    /// Appends the compact JSON text of ``jsonValue`` (the same bytes).
    package func writeJSON(to writer: inout JSONByteWriter) {
        writer.raw(#"{"id":"#)
        writer.string(id)
        writer.raw(#","time":"#)
        writer.integer(time)
        if !fired.isEmpty {
            writer.raw(#","fired":["#)
            for (index, tag) in fired.enumerated() {
                if index > 0 { writer.raw(0x2C) }
                tag.writeJSON(to: &writer)
            }
            writer.raw(0x5D)
        }
        writer.raw(0x7D)
    }

    /// Writes `list` as a JSON array of ``writeJSON(to:)``.
    package static func writeJSON(_ list: [SeenEventID], to writer: inout JSONByteWriter) {
        writer.raw(0x5B)
        for (index, seen) in list.enumerated() {
            if index > 0 { writer.raw(0x2C) }
            seen.writeJSON(to: &writer)
        }
        writer.raw(0x5D)
    }

    /// Reads a seen ID from the object ``jsonValue`` writes; `pointer` names where it is, for errors.
    /// - Throws: ``ContainerError`` (`invalid_structure`) naming the member that is missing or wrong.
    public init(jsonValue: Value, pointer: String = "") throws(ContainerError) {
        func wrong(_ path: String, _ expected: String) -> ContainerError {
            ContainerError(
                .invalidStructure,
                "a seen event id's '\(path)' must be \(expected)",
                pointer: pointer + path
            )
        }
        guard case .object(let map) = jsonValue else {
            throw ContainerError(.invalidStructure, "a seen event id must be an object", pointer: pointer)
        }
        guard case .string(let id)? = map["id"] else { throw wrong("/id", "a string") }
        guard case .int(let time)? = map["time"] else { throw wrong("/time", "a whole number") }
        var fired: [Tag] = []
        switch map["fired"] {
        case nil: break
        case .array(let list)?:
            fired.reserveCapacity(list.count)
            for (position, element) in list.enumerated() {
                let at = "/fired/\(position)"
                guard case .object(let tag) = element else { throw wrong(at, "an object") }
                guard case .int(let index)? = tag["tag"], let tagIndex = Int(exactly: index) else {
                    throw wrong(at + "/tag", "a whole number")
                }
                var tagID: Int?
                switch tag["tag_id"] {
                case nil: break
                case .int(let value)?: tagID = Int(exactly: value)
                default: throw wrong(at + "/tag_id", "a whole number")
                }
                guard case .string(let status)? = tag["status"] else { throw wrong(at + "/status", "a string") }
                var message: String?
                switch tag["message"] {
                case nil: break
                case .string(let text)?: message = text
                default: throw wrong(at + "/message", "a string")
                }
                var recordIDs: [String] = []
                switch tag["record_ids"] {
                case nil: break
                case .array(let ids)?: recordIDs = ids.compactMap(\.stringValue)
                default: throw wrong(at + "/record_ids", "an array")
                }
                fired.append(
                    Tag(index: tagIndex, tagID: tagID, status: status, message: message, recordIDs: recordIDs)
                )
            }
        default:
            throw wrong("/fired", "an array")
        }
        self.init(id: id, time: time, fired: fired)
    }

    /// Reads a JSON array of seen IDs (`member` names it in errors).
    static func list(from value: Value, member: String) throws(ContainerError) -> [SeenEventID] {
        guard case .array(let list) = value else {
            throw ContainerError(.invalidStructure, "'\(member)' must be an array", pointer: "/\(member)")
        }
        var seen: [SeenEventID] = []
        seen.reserveCapacity(list.count)
        for (index, element) in list.enumerated() {
            seen.append(try SeenEventID(jsonValue: element, pointer: "/\(member)/\(index)"))
        }
        return seen
    }
}

/// How many event IDs a session remembers, and for how long: a push that carries an ID the session has seen
/// within the window is a duplicate, not applied again (see ``SeenEventID``).
///
/// Bounded both ways, per session: IDs older than ``duration`` are forgotten, and a session keeps at most
/// ``maximumCount`` of them — past either bound the oldest go first, at the session's next push with an ID.
/// A retry that arrives after its ID was forgotten is applied again, as a push without an ID always is.
///
/// ```swift
/// let manager = TagManager(eventIDs: EventIDWindow(duration: .seconds(3600), maximumCount: 200))
/// ```
public struct EventIDWindow: Sendable {
    /// How long a seen ID is remembered: 24 hours by default (what Segment deduplicates over).
    public var duration: Duration
    /// The most IDs a session remembers: 1,000 by default.
    public var maximumCount: Int
    /// The wall-clock time, in milliseconds since 1970-01-01 UTC, that seen IDs are stamped and aged with (a
    /// test may pass its own).
    public var clock: @Sendable () -> Int64 {
        get { customClock ?? EventIDWindow.systemMilliseconds }
        set { customClock = newValue }
    }
    /// The clock given; `nil`: the system's (read without a closure call).
    private(set) var customClock: (@Sendable () -> Int64)?

    /// The default ``duration``: 24 hours.
    public static let defaultDuration: Duration = .seconds(24 * 60 * 60)
    /// The default ``maximumCount``: 1,000.
    public static let defaultMaximumCount = 1000

    /// Creates a window.
    /// - Parameters:
    ///   - duration: how long an ID is remembered (at least a millisecond).
    ///   - maximumCount: how many IDs a session remembers at most (1 to 16,777,216).
    ///   - clock: the wall-clock time in milliseconds since 1970; by default the system's.
    public init(
        duration: Duration = EventIDWindow.defaultDuration,
        maximumCount: Int = EventIDWindow.defaultMaximumCount,
        clock: (@Sendable () -> Int64)? = nil
    ) {
        self.duration = max(duration, .milliseconds(1))
        self.maximumCount = min(max(1, maximumCount), 1 << 24)
        self.customClock = clock
    }

    /// ``duration`` in whole milliseconds.
    var milliseconds: Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000
    }

    /// The system's wall-clock time in milliseconds since 1970 (on Linux the coarse clock: a few milliseconds of
    /// resolution, a fraction of the cost, and nothing to a window of hours).
    @Sendable public static func systemMilliseconds() -> Int64 {
        var time = timespec()
        #if os(Linux)
            clock_gettime(CLOCK_REALTIME_COARSE, &time)
        #else
            clock_gettime(CLOCK_REALTIME, &time)
        #endif
        return Int64(time.tv_sec) &* 1000 &+ Int64(time.tv_nsec) / 1_000_000
    }
}

extension ContainerError.Code {
    /// An event ID that cannot be used: empty, longer than ``DataLayer/maximumEventIDBytes`` bytes, with a NUL
    /// character, or (in JSON) not a string.
    public static let invalidEventID = ContainerError.Code(rawValue: "invalid_event_id")
}

extension TagRecord {
    /// No ID (a record type with stable IDs returns its own: ``SeenEventID`` keeps them).
    public var recordID: String? { nil }
}
