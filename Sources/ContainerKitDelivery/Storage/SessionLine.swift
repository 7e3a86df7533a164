import ContainerKit

/// A line of the segment log that holds a session's change instead of a record: the sessions of a
/// durable ``DeliveryPipeline`` live in the same log as its records, written in the same append as the records of the push
/// that made them (one format, one checksum, one writer, one group commit).
///
/// `{"session":"<user id>","v":<version>,"x":<expected>,"i":<id>,"p":<parent>,"k":"<kind>","b":<body>}`
/// `\t<crc32c>\n` (`p` absent for a change fenced by version alone; ids as signed 64-bit patterns) — the body a
/// ``SessionSnapshot`` (kinds `s` and `c`), a ``SessionDelta`` (`d`) or absent (`r`). Record lines start with
/// `{"type":`; delivery skips session lines without parsing them.
struct SessionLine: Sendable, Hashable {
    enum Kind: UInt8, Sendable, Hashable {
        /// A whole snapshot committed by a session's owner (fenced: the stored head is `expected` or lower).
        case snapshot = 0x73  // s
        /// The changes since version `expected` (fenced: the stored head is exactly `expected`).
        case delta = 0x64  // d
        /// A snapshot the log wrote itself, folding a chain up to `version` so that its old segments can go
        /// (admitted while the head is `version` or newer: deltas committed after it stay in the chain; one
        /// whose chain got a newer snapshot meanwhile is ignored).
        case compaction = 0x63  // c
        /// The session ended (fenced: the stored head is `version` or lower); its lines can go.
        case removal = 0x72  // r

        /// Whether the line holds a whole state.
        var isSnapshot: Bool { self == .snapshot || self == .compaction }
    }

    /// The user ID.
    var userID: String
    var version: Int64
    var expected: Int64
    var kind: Kind
    /// The change's identity (``SessionCheckpoint/id``).
    var id: UInt64
    /// The identity of the change it continues (``SessionCheckpoint/parent``).
    var parent: UInt64?

    /// The bytes every session line starts with.
    static let prefix: [UInt8] = Array(#"{"session":"#.utf8)

    /// Whether `line` is a session line (by its first bytes only).
    static func isSessionLine(_ line: ArraySlice<UInt8>) -> Bool {
        line.count > prefix.count && line.starts(with: prefix)
    }

    /// Whether a line with this header may follow a stored session whose newest version is `head`, its
    /// identity `headID`, `ended` when it is a removal (see ``SessionCheckpoint``).
    func isAdmitted(afterHead head: Int64, headID: UInt64, ended: Bool) -> Bool {
        switch kind {
        case .snapshot:
            guard head <= expected else { return false }
            guard let parent, parent != 0 else { return true }
            return parent == headID || headID == 0 || ended
        case .delta:
            guard head == expected else { return false }
            return parent == nil || parent == headID
        case .compaction: return head >= version
        case .removal: return head <= version
        }
    }

    /// Appends the line for `header` with `body` (written by `writeBody`), its checksum and a line feed.
    static func append(
        _ header: SessionLine,
        to json: inout JSONByteWriter,
        body writeBody: ((inout JSONByteWriter) -> Void)?
    ) {
        let start = json.count
        json.raw(#"{"session":"#)
        json.string(header.userID)
        json.raw(#","v":"#)
        json.integer(header.version)
        json.raw(#","x":"#)
        json.integer(header.expected)
        json.raw(#","i":"#)
        json.integer(Int64(bitPattern: header.id))
        if let parent = header.parent {
            json.raw(#","p":"#)
            json.integer(Int64(bitPattern: parent))
        }
        json.raw(#","k":""#)
        json.raw(header.kind.rawValue)
        json.raw(0x22)
        if let writeBody {
            json.raw(#","b":"#)
            writeBody(&json)
        }
        json.raw(0x7D)
        let crc = json.withBytes(from: start) { CRC32C.checksum(UnsafeRawBufferPointer($0)) }
        json.raw(SegmentLog.checksumSeparator)
        CRC32C.appendHex(crc, to: &json)
        json.raw(0x0A)
    }

    /// Appends the line of a push's checkpoint.
    static func append(_ checkpoint: SessionCheckpoint, to json: inout JSONByteWriter) {
        append(SessionLine(checkpoint), to: &json) { checkpoint.writeJSON(to: &$0) }
    }

    /// The header of a push's checkpoint.
    init(_ checkpoint: SessionCheckpoint) {
        self.init(
            userID: checkpoint.userID,
            version: checkpoint.version,
            expected: checkpoint.expected,
            kind: checkpoint.isDelta ? .delta : .snapshot,
            id: checkpoint.id,
            parent: checkpoint.parent
        )
    }

    init(
        userID: String,
        version: Int64,
        expected: Int64,
        kind: Kind,
        id: UInt64 = SessionCheckpoint.makeID(),
        parent: UInt64? = nil
    ) {
        self.userID = userID
        self.version = version
        self.expected = expected
        self.kind = kind
        self.id = id
        self.parent = parent
    }

    /// The line of a snapshot saved outside a push (fenced by version alone: it replaces versions below its own),
    /// with the writer of its body.
    static func snapshot(_ stored: StoredSession) -> (header: SessionLine, body: ((inout JSONByteWriter) -> Void)?) {
        let header = SessionLine(
            userID: stored.userID,
            version: stored.version,
            expected: stored.version - 1,
            kind: .snapshot,
            id: stored.checkpointID != 0 ? stored.checkpointID : SessionCheckpoint.makeID()
        )
        let snapshot = stored.snapshot
        return (header, { snapshot.writeJSON(to: &$0) })
    }

    /// A parsed session line: its header and its body.
    struct Parsed {
        var header: SessionLine
        var body: Value?
    }

    /// Parses a session line (without its line feed), checking its checksum.
    static func parse(_ line: ArraySlice<UInt8>) -> Result<Parsed, SegmentLog.LineProblem> {
        guard line.count > 9, line[line.endIndex - 9] == SegmentLog.checksumSeparator else {
            return .failure(SegmentLog.LineProblem(message: "the session line has no checksum", checksum: true))
        }
        let json = line[line.startIndex..<(line.endIndex - 9)]
        guard let stored = CRC32C.parseHex(line[(line.endIndex - 8)...]), stored == CRC32C.checksum(json) else {
            return .failure(
                SegmentLog.LineProblem(message: "checksum mismatch (the bytes changed on disk)", checksum: true)
            )
        }
        let value: Value
        do {
            value = try Value(jsonBytes: Array(json))
        } catch {
            return .failure(SegmentLog.LineProblem(message: error.message, checksum: false))
        }
        guard case .object(let map) = value, case .string(let userID)? = map["session"],
            case .int(let version)? = map["v"], case .int(let expected)? = map["x"],
            case .string(let kindText)? = map["k"], kindText.utf8.count == 1,
            let kind = Kind(rawValue: kindText.utf8.first!)
        else {
            return .failure(
                SegmentLog.LineProblem(
                    message: "not a session line (session, v, x, k missing or wrong)",
                    checksum: false
                )
            )
        }
        var id: UInt64 = 0
        if case .int(let value)? = map["i"] { id = UInt64(bitPattern: value) }
        var parent: UInt64?
        if case .int(let value)? = map["p"] { parent = UInt64(bitPattern: value) }
        let header = SessionLine(
            userID: userID,
            version: version,
            expected: expected,
            kind: kind,
            id: id,
            parent: parent
        )
        return .success(Parsed(header: header, body: map["b"]))
    }
}

/// Where a committed session line is in the log.
struct SessionLineRef: Sendable, Hashable {
    var segment: UInt64
    var offset: Int
    /// The line's length with its line feed.
    var length: Int
    var version: Int64
    var kind: SessionLine.Kind
}
