import ContainerKit
import ContainerKitDelivery
import Foundation

/// The pushes `run`, `preview` and `diff` read, from a file or standard input: one JSON object per line, its
/// `message_id` the push's event ID. A line that is a JSON array is a gtag-style command, run as gtm.js runs
/// gtag's `arguments` (``GtagCommand``): a consent command, `["consent", "default", {"ad_storage": "denied",
/// "region": ["ES"]}]`, an event (`["event", "purchase", {…}]`, pushed as `{event, eventModel}`) or a `set`; the
/// Google tag's own (`config`, `js`, `get`) are skipped. So is an object whose keys are `"0"`, `"1"`, … in order:
/// an `arguments` object as `JSON.stringify` writes it.
///
/// An input that starts with a JSON array of pushes (its first item is not a string) is a **data-layer dump**,
/// `copy(JSON.stringify(dataLayer))` in a browser's console, on one line or over many: each item is read as a line
/// would be, and is named `dataLayer[i]` with its line.
struct PushInput: Sequence {
    /// One push, command or problem of the input: a non-blank line, or an item of a data-layer dump.
    enum Line {
        /// `eventID`: the push's `message_id` (``eventIDKey``), taken out of the message and checked: the push's
        /// event ID (``DataLayer/push(_:eventID:)``); `nil` when the push has none or it is `null`. `eventTime`: with
        /// a time key (``Keys/time``), that member's time, taken out of the message (`run --time-key`); else `nil`.
        /// `session`: with a session key (``Keys/session``), that member's value, left in the message; else `nil`.
        case push(number: Place, message: ValueMap, eventID: String?, eventTime: Date?, session: String?)
        case command(number: Place, command: ConsentCommand, arguments: [Value])
        /// A gtag command that changes nothing a container sees (``GtagCommand/ignored(command:reason:)``: the
        /// Google tag's `js`, `config`, `get`, a command gtm.js ignores): shown as skipped, with `reason`, and not an
        /// error.
        case skipped(number: Place, arguments: [Value], reason: String)
        /// `problem` reads like "line 3:7: expected ',' or '}' …".
        case invalid(number: Place, problem: Problem)

        /// The push at `place` is not one: `code`, `message` and where (`column`, on `line` when that is not the
        /// line the push starts on), when known.
        static func problem(
            _ place: Place,
            _ code: String,
            _ message: String,
            column: Int? = nil,
            line: Int? = nil
        ) -> Line {
            .invalid(
                number: place,
                problem: Problem(
                    line: line ?? place.line,
                    index: place.index,
                    code: code,
                    message: message,
                    column: column
                )
            )
        }
    }

    /// Where a push is in the input: the line it starts on, and in a data-layer dump its index in the array.
    struct Place: Equatable, ExpressibleByIntegerLiteral, CustomStringConvertible {
        /// The 1-based line the push (or the dump's item) starts on.
        var line: Int
        /// The item's 0-based index in a data-layer dump (`dataLayer[index]`); `nil` for a line of its own.
        var index: Int?

        init(line: Int, index: Int? = nil) { (self.line, self.index) = (line, index) }
        init(integerLiteral line: Int) { self.init(line: line) }

        /// "line 3", or "dataLayer[2] (line 1)".
        var description: String { index.map { "dataLayer[\($0)] (line \(line))" } ?? "line \(line)" }
    }

    /// Why a push is not one: a code (`syntax_error`, `not_an_object`, …), a message and where.
    struct Problem: CustomStringConvertible {
        var line: Int
        /// The item's index in a data-layer dump.
        var index: Int?
        var code: String
        var message: String
        var column: Int?

        init(line: Int, index: Int? = nil, code: String, message: String, column: Int? = nil) {
            (self.line, self.index, self.code, self.message, self.column) = (line, index, code, message, column)
        }

        /// "line 3:7: expected ',' or '}' …", or "dataLayer[2] at line 3:7: …" in a dump.
        var description: String {
            let place = "line \(line)\(column.map { ":\($0)" } ?? "")"
            return "\(index.map { "dataLayer[\($0)] at " } ?? "")\(place): \(message)"
        }

        /// `{"line": n, "error": {"code", "message", "column"}}` (and `"index"` for an item of a dump): what
        /// `run --format json` prints in the push's place.
        var jsonValue: Value {
            var error = ValueMap(minimumCapacity: 3)
            error["code"] = .string(code)
            error["message"] = .string(message)
            error["column"] = column.map { .int(Int64($0)) } ?? .null
            var object = ValueMap(minimumCapacity: 3)
            object["line"] = .int(Int64(line))
            if let index { object["index"] = .int(Int64(index)) }
            object["error"] = .object(error)
            return .object(object)
        }
    }

    private let handle: FileHandle
    private let ownsHandle: Bool
    /// The longest line read: a longer one is refused (`line_too_long`) and the lines after it are read on.
    var maximumLineLength = LineReader.maximumLineLength
    /// The members of a push the command reads for itself.
    var keys = Keys()

    /// The members of a push a command reads for itself, besides its `message_id`.
    struct Keys {
        /// The member that says when its event happened (`run --time-key`), taken out of the push; `nil`: none is (a
        /// data layer's own `timestamp` stays in it).
        var time: String?
        /// The member that names the push's session (`--session-key`): a non-empty string or an integer, left in the
        /// push (the container may read it); `nil`: one session.
        var session: String?
    }

    /// Reads the pushes of `handle`; ``close()`` closes it when `ownsHandle`.
    init(handle: FileHandle, ownsHandle: Bool) {
        self.handle = handle
        self.ownsHandle = ownsHandle
    }

    /// Opens `path` (`-` is standard input); reports and returns `nil` when it cannot be opened.
    static func open(_ path: String, command: String, output: CommandOutput) -> PushInput? {
        if path == "-" { return PushInput(handle: .standardInput, ownsHandle: false) }
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue {
            output.error("containerkit \(command): '\(path)' is a directory, not an events file (one push a line)")
            return nil
        }
        guard let file = FileHandle(forReadingAtPath: path) else {
            output.error("containerkit \(command): cannot open events file '\(path)'")
            return nil
        }
        return PushInput(handle: file, ownsHandle: true)
    }

    /// Closes a file (not standard input).
    func close() { if ownsHandle { try? handle.close() } }

    func makeIterator() -> Iterator {
        Iterator(lines: LineReader(handle: handle, maximumLineLength: maximumLineLength), keys: keys)
    }

    /// Reads the input's lines, or a data-layer dump's items.
    struct Iterator: IteratorProtocol {
        private var lines: LineReader
        private let limit: Int
        private let keys: Keys
        /// The last line read.
        private var number = 0
        /// Whether the input's start was looked at (for an encoding it cannot be read in, and for a dump).
        private var started = false
        private var stopped = false
        /// A data-layer dump: its splitter, the lines before it, and what it completed that was not handed out yet.
        private var dump: DataLayerDump?
        private var linesBeforeDump = 0
        private var ready: [Line] = []
        private var readyIndex = 0

        fileprivate init(lines: LineReader, keys: Keys) {
            self.lines = lines
            self.limit = lines.limit
            self.keys = keys
        }

        mutating func next() -> Line? {
            if !started {
                started = true
                if let refusal = start() { return refusal }
            }
            while dump != nil || readyIndex < ready.count {
                if readyIndex < ready.count {
                    defer { readyIndex += 1 }
                    return ready[readyIndex]
                }
                readDump()
            }
            return nextLine()
        }

        /// Looks at the blank lines and the first line before reading them: an input in UTF-16 is refused once; a
        /// dump is read by its bytes from its `[` on.
        private mutating func start() -> Line? {
            while let peeked = lines.peekLine(enough: PushInput.decidesDump) {
                if number == 0, let encoding = DocumentReader.wideEncoding(Array(peeked.prefix(8))) {
                    // Every line of it would fail: the file is refused once, and nothing of it is read.
                    stopped = true
                    return .problem(
                        Place(line: 1),
                        "unsupported_encoding",
                        "the events file is UTF-16 or UTF-32 encoded (\(encoding)); save it as UTF-8: "
                            + "none of its lines was read",
                        column: 1
                    )
                }
                guard peeked.count < limit, peeked.allSatisfy(PushInput.isSpace) else {
                    if PushInput.startsDump(peeked) {
                        // A byte order mark is not a column of the dump.
                        if number == 0 && peeked.starts(with: [0xEF, 0xBB, 0xBF]) { lines.skip(3) }
                        dump = DataLayerDump(limit: limit)
                        linesBeforeDump = number
                    }
                    return nil
                }
                _ = lines.nextBytes()
                number += 1
            }
            return nil
        }

        /// Feeds the dump's splitter the next bytes, or ends it, and readies what they complete.
        private mutating func readDump() {
            guard var splitter = dump else { return }
            var pieces: [DataLayerDump.Piece] = []
            var failure: Line?
            if let chunk = lines.nextChunk() {
                splitter.feed(chunk, into: &pieces)
                dump = splitter
            } else {
                (dump, stopped) = (nil, true)
                if let error = lines.readError {
                    // Said once, where reading stopped; what was read before it stands.
                    failure = .problem(
                        Place(line: linesBeforeDump + splitter.line),
                        "read_error",
                        "the input could not be read from here on (\(error)); the rest of the data-layer dump was "
                            + "not read"
                    )
                } else {
                    splitter.finish(into: &pieces)
                }
            }
            ready = pieces.map { PushInput.line(of: $0, after: linesBeforeDump, limit: limit, keys: keys) }
            if let failure { ready.append(failure) }
            readyIndex = 0
        }

        /// The next non-blank line, or the read error that ended the input.
        private mutating func nextLine() -> Line? {
            while !stopped, let bytes = lines.nextBytes() {
                number += 1
                if lines.lastLineWasCut {
                    return .problem(
                        Place(line: number),
                        "line_too_long",
                        "the line is longer than \(limit) bytes, the most a push may be; it was not read"
                    )
                }
                if bytes.allSatisfy(PushInput.isSpace) { continue }
                return PushInput.parse(bytes, at: Place(line: number), keys: keys)
            }
            if !stopped, let error = lines.readError {
                // Said once, in the place of the line that could not be read.
                stopped = true
                number += 1
                return .problem(
                    Place(line: number),
                    "read_error",
                    "the input could not be read from here on (\(error)); the lines after it were not read"
                )
            }
            return nil
        }
    }

    /// A space, a tab or a carriage return: what a blank line holds.
    static func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0D }

    /// Whether the input's first non-blank line starts a data-layer dump: a `[` (after a byte order mark and
    /// spaces) not followed by a string on the same line. A line `["consent", …]` is one gtag command.
    static func startsDump(_ bytes: ArraySlice<UInt8>) -> Bool {
        let (first, second) = leadingBytes(bytes)
        return first == UInt8(ascii: "[") && second != UInt8(ascii: "\"")
    }

    /// Whether the start of a line, `bytes`, already shows whether it starts a dump (the rest of the line is not
    /// needed): a byte other than `[` first, or two bytes.
    static func decidesDump(_ bytes: ArraySlice<UInt8>) -> Bool {
        let (first, second) = leadingBytes(bytes)
        return second != nil || (first != nil && first != UInt8(ascii: "["))
    }

    /// The first two bytes of `bytes` that are not spaces (after a byte order mark).
    private static func leadingBytes(_ bytes: ArraySlice<UInt8>) -> (UInt8?, UInt8?) {
        var rest = bytes
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        rest = rest.drop(while: isSpace)
        guard let first = rest.first else { return (nil, nil) }
        return (first, rest.dropFirst().first(where: { !isSpace($0) }))
    }

    /// What a piece of a data-layer dump that starts after line `linesBefore` is: an item parsed as a line is
    /// (named `dataLayer[i]`), a command, or a problem.
    static func line(of piece: DataLayerDump.Piece, after linesBefore: Int, limit: Int, keys: Keys) -> Line {
        switch piece {
        case .item(let bytes, let index, let line, let column):
            return parse(bytes, at: Place(line: linesBefore + line, index: index), column: column, keys: keys)
        case .command(let bytes, let line, let column):
            return parse(bytes, at: Place(line: linesBefore + line), column: column, keys: keys)
        case .tooLong(let index, let line, let column):
            return .problem(
                Place(line: linesBefore + line, index: index),
                "input_too_long",
                "the item is longer than \(limit) bytes, the most a push may be; it was not read",
                column: column
            )
        case .broken(let message, let line, let column):
            let place = Place(line: linesBefore + line)
            let rest = "; the rest of the data-layer dump (a JSON array of pushes) was not read"
            return .problem(place, "syntax_error", message + rest, column: column)
        }
    }

    /// Parses the bytes of one line, or of a dump's item (which starts at `place`, `column`), as they were read:
    /// invalid UTF-8 is an error that says where, not replaced.
    static func parse(_ bytes: [UInt8], at place: Place, column origin: Int = 1, keys: Keys = Keys()) -> Line {
        // A position in `bytes` → its line and column in the input.
        func shift(_ location: SourceLocation) -> (line: Int, column: Int) {
            (place.line + location.line - 1, location.line == 1 ? origin - 1 + location.column : location.column)
        }
        let value: Value
        do throws(ContainerError) {
            value = try Value(jsonBytes: bytes)
        } catch {
            let found = error.location.map(shift)
            return .problem(place, error.code.rawValue, error.message, column: found?.column, line: found?.line)
        }
        // Only a push with a problem is read again, with positions.
        return entry(value, at: place, keys: keys) { pointer in location(of: pointer, in: bytes).map(shift) }
    }

    /// What one value of the input is: a push (its event ID and, with ``Keys/time``, its time taken out; with
    /// ``Keys/session``, its session read), a command, or a problem placed by `locate` (a JSON pointer in the value →
    /// its line and column).
    static func entry(
        _ value: Value,
        at place: Place,
        keys: Keys,
        locate: (String) -> (line: Int, column: Int)?
    ) -> Line {
        func problem(_ code: String, _ message: String, at pointer: String) -> Line {
            let found = locate(pointer)
            return .problem(place, code, message, column: found?.column, line: found?.line)
        }
        do throws(ContainerError) {
            var value = value
            if let arguments = gtagArguments(value) {
                // What gtm.js does with the command: `event` and `set` are messages pushed like any other.
                let command = try GtagCommand(gtagArguments: arguments)
                switch command {
                case .consent(let consent):
                    return .command(number: place, command: consent, arguments: arguments)
                case .ignored(_, let reason):
                    return .skipped(number: place, arguments: arguments, reason: reason)
                case .event, .set:
                    value = .object(command.message ?? ValueMap())
                }
            }
            guard case .object(var message) = value else {
                let kinds = "a JSON object (or a gtag command, a JSON array)"
                // In a dump, `null` is what JSON.stringify writes for a function pushed onto the data layer.
                let function = value == .null && place.index != nil
                let why = function ? " (a function pushed onto the data layer, which JSON.stringify writes so)" : ""
                return problem("not_an_object", "a push must be \(kinds), not \(value.typeName)\(why)", at: "")
            }
            let eventID: String?
            let idPointer = "/" + eventIDKey
            switch message.removeValue(forKey: eventIDKey) {
            case nil, .null?:
                eventID = nil
            case .string(let id)?:
                do throws(ContainerError) {
                    try DataLayer.validate(eventID: id)
                } catch {
                    let code = ContainerError.Code.invalidEventID.rawValue
                    return problem(code, "'\(eventIDKey)' is refused: \(error.message)", at: idPointer)
                }
                eventID = id
            case let other?:
                let rule = "a string of 1 to \(DataLayer.maximumEventIDBytes) bytes without NUL"
                let code = ContainerError.Code.invalidEventID.rawValue
                return problem(code, "'\(eventIDKey)' must be \(rule), not \(other.typeName)", at: idPointer)
            }
            var eventTime: Date?
            if let timeKey = keys.time, let value = message.removeValue(forKey: timeKey), value != .null {
                guard case .string(let text) = value, let time = ISO8601Timestamp.date(from: text) else {
                    let found = value.stringValue.map { "'\($0.prefix(64))'" } ?? value.typeName
                    return problem(
                        "invalid_time",
                        "'\(timeKey)' (--time-key) must be an ISO-8601 time such as 2024-05-01T12:30:00.250Z, "
                            + "not \(found)",
                        at: "/" + JSONPointer.escape(timeKey)
                    )
                }
                eventTime = time
            }
            var session: String?
            if let sessionKey = keys.session {
                switch message[sessionKey] {
                case nil, .null?: break
                case .string(let name)? where !name.isEmpty: session = name
                case .int(let number)?: session = String(number)
                case let other?:
                    let found = other.stringValue.map { "'\($0.prefix(64))'" } ?? other.typeName
                    return problem(
                        "invalid_session",
                        "'\(sessionKey)' (--session-key) must be a non-empty string or an integer, not \(found)",
                        at: "/" + JSONPointer.escape(sessionKey)
                    )
                }
            }
            return .push(number: place, message: message, eventID: eventID, eventTime: eventTime, session: session)
        } catch {
            // A command's error: its pointer, placed in the value.
            return problem(error.code.rawValue, error.message, at: error.pointer)
        }
    }

    /// The arguments of a gtag command: a JSON array, or an `arguments` object as `JSON.stringify` writes it in a
    /// data-layer dump (`{"0": "consent", "1": "update", "2": {…}}`: its keys `"0"`, `"1"`, … in order).
    static func gtagArguments(_ value: Value) -> [Value]? {
        switch value {
        case .array(let items):
            return items
        case .object(let map) where !map.isEmpty:
            var items: [Value] = []
            items.reserveCapacity(map.count)
            for (offset, key) in map.keys.enumerated() {
                guard key == String(offset), let item = map[key] else { return nil }
                items.append(item)
            }
            return items
        default:
            return nil
        }
    }

    /// The key of a line's event ID: `message_id`, Segment's name and the service's. (Not `event_id`: data layers
    /// use that name for their own IDs, Meta's deduplication key among them.) `null` is no ID, as in the service.
    static let eventIDKey = "message_id"

    /// Where the value at `pointer` is in the push `bytes`: they are read again with positions, so only a push with a
    /// problem pays for it.
    static func location(of pointer: String, in bytes: [UInt8]) -> SourceLocation? {
        let reader = ContainerLoader(options: LoadOptions(recordPositions: true))
        return (try? reader.readDocument(bytes: bytes, file: nil))?.locate(pointer)
    }
}
