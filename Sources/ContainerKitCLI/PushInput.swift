import ContainerKit
import ContainerKitDelivery
import Foundation

/// The pushes `run`, `preview` and `diff` read, from a file or standard input: one JSON object per line, its
/// `message_id` the push's event ID. A line that is a JSON array is a gtag-style command, pushed as GTM pushes
/// gtag's `arguments` (not as an array): a consent command, `["consent", "default", {"ad_storage": "denied",
/// "region": ["ES"]}]`. So is an object whose keys are `"0"`, `"1"`, … in order: an `arguments` object as
/// `JSON.stringify` writes it.
///
/// An input that starts with a JSON array of pushes (its first item is not a string) is a **data-layer dump**,
/// `copy(JSON.stringify(dataLayer))` in a browser's console, on one line or over many: each item is read as a line
/// would be, and is named `dataLayer[i]` with its line.
struct PushInput: Sequence {
    /// One push, command or problem of the input: a non-blank line, or an item of a data-layer dump.
    enum Line {
        /// `eventID`: the push's `message_id` (``eventIDKey``), taken out of the message and checked: the push's
        /// event ID (``DataLayer/push(_:eventID:)``); `nil` when the push has none or it is `null`. `eventTime`: with
        /// a ``PushInput/timeKey``, that member's time, taken out of the message (`run --time-key`); else `nil`.
        case push(number: Place, message: ValueMap, eventID: String?, eventTime: Date?)
        case command(number: Place, command: ConsentCommand, arguments: [Value])
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
    /// The member of a line that says when its event happened (`run --time-key`), taken out of the push; `nil`:
    /// none is (a data layer's own `timestamp` stays in it).
    var timeKey: String?

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

    func makeIterator() -> AnyIterator<Line> {
        var lines = LineReader(handle: handle, maximumLineLength: maximumLineLength)
        let limit = maximumLineLength
        let timeKey = timeKey
        var number = 0
        var stopped = false
        var first = true
        var dump: IndexingIterator<[Line]>?
        return AnyIterator {
            if dump != nil { return dump?.next() }
            while !stopped, let bytes = lines.nextBytes() {
                number += 1
                if number == 1, let encoding = DocumentReader.wideEncoding(bytes) {
                    // Every line of it would fail: the file is refused once, and nothing of it is read.
                    stopped = true
                    return .problem(
                        Place(line: number),
                        "unsupported_encoding",
                        "the events file is UTF-16 or UTF-32 encoded (\(encoding)); save it as UTF-8: "
                            + "none of its lines was read",
                        column: 1
                    )
                }
                if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) && !lines.lastLineWasCut { continue }
                if first {
                    first = false
                    if PushInput.startsDump(bytes) {
                        // The rest of the input is one array: read whole, then handed out item by item.
                        stopped = true
                        var items = PushInput.readDump(
                            bytes,
                            line: number,
                            rest: &lines,
                            limit: limit,
                            timeKey: timeKey
                        )
                        .makeIterator()
                        let next = items.next()
                        dump = items
                        return next
                    }
                }
                if lines.lastLineWasCut {
                    return .problem(
                        Place(line: number),
                        "line_too_long",
                        "the line is longer than \(limit) bytes, the most a push may be; it was not read"
                    )
                }
                return PushInput.parse(bytes, number: number, timeKey: timeKey)
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

    /// Whether the input's first non-blank line starts a data-layer dump: a `[` (after a byte order mark and
    /// spaces) not followed by a string on the same line. A line `["consent", …]` is one gtag command.
    static func startsDump(_ bytes: [UInt8]) -> Bool {
        var rest = bytes[...]
        if rest.starts(with: [0xEF, 0xBB, 0xBF]) { rest = rest.dropFirst(3) }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }
        rest = rest.drop(while: isSpace)
        guard rest.first == UInt8(ascii: "[") else { return false }
        return rest.dropFirst().first(where: { !isSpace($0) }) != UInt8(ascii: "\"")
    }

    /// Reads a data-layer dump whose first line, line `line`, is `first`, and the rest of the input: one JSON array,
    /// each item read as a line is (``entry(_:at:timeKey:locate:)``). A dump that cannot be read whole (too long,
    /// not JSON, a failed read) is one problem, and none of it is pushed: its items cannot be told apart.
    static func readDump(
        _ first: [UInt8],
        line: Int,
        rest lines: inout LineReader,
        limit: Int,
        timeKey: String?
    ) -> [Line] {
        let start = Place(line: line)
        var bytes = first
        var cut = lines.lastLineWasCut
        while !cut, let next = lines.nextBytes() {
            bytes.append(0x0A)
            bytes += next
            cut = lines.lastLineWasCut || bytes.count > limit
        }
        if cut {
            let rule =
                "the data-layer dump (a JSON array of pushes) is longer than \(limit) bytes, the most read as one"
            return [.problem(start, "input_too_long", "\(rule); write one push a line instead: none of it was read")]
        }
        if let error = lines.readError {
            let reason = "the data-layer dump could not be read (\(error)); none of it was read"
            return [.problem(start, "read_error", reason)]
        }
        let document: SourceDocument
        do throws(ContainerError) {
            // One level deeper than a line may nest: an item is read as deep as a line of its own.
            let options = LoadOptions(maximumFileSize: limit, maximumDepth: 257, recordPositions: true)
            document = try ContainerLoader(options: options).readDocument(bytes: bytes)
        } catch {
            let message =
                "the data-layer dump (a JSON array of pushes) is not valid JSON: \(error.message); none of it was read"
            let location = error.location
            return [
                .problem(
                    start,
                    error.code.rawValue,
                    message,
                    column: location?.column,
                    line: location.map { $0.line + line - 1 }
                )
            ]
        }
        // Lines and columns in the dump, which starts on line `line` of the input.
        func locate(_ pointer: String) -> (line: Int, column: Int)? {
            document.location(of: pointer).map { ($0.line + line - 1, $0.column) }
        }
        guard case .array(let items) = document.value, items.first?.stringValue == nil else {
            // A gtag command written over several lines: one command, as on one line.
            return [entry(document.value, at: start, timeKey: timeKey, locate: locate)]
        }
        return items.indices.map { index in
            let prefix = "/\(index)"
            let place = Place(line: locate(prefix)?.line ?? line, index: index)
            return entry(items[index], at: place, timeKey: timeKey) { locate(prefix + $0) }
        }
    }

    /// Parses one line's bytes as they were read: invalid UTF-8 is an error that says where, not replaced.
    static func parse(_ bytes: [UInt8], number: Int, timeKey: String? = nil) -> Line {
        let place = Place(line: number)
        let value: Value
        do throws(ContainerError) {
            value = try Value(jsonBytes: bytes)
        } catch {
            return .problem(place, error.code.rawValue, error.message, column: error.location?.column)
        }
        // Only a line with a problem is read again, with positions.
        return entry(value, at: place, timeKey: timeKey) { pointer in
            column(of: pointer, in: bytes).map { (number, $0) }
        }
    }

    /// What one value of the input is: a push (its event ID and, with `timeKey`, its time taken out), a command, or
    /// a problem placed by `locate` (a JSON pointer in the value → its line and column).
    static func entry(
        _ value: Value,
        at place: Place,
        timeKey: String?,
        locate: (String) -> (line: Int, column: Int)?
    ) -> Line {
        func problem(_ code: String, _ message: String, at pointer: String) -> Line {
            let found = locate(pointer)
            return .problem(place, code, message, column: found?.column, line: found?.line)
        }
        do throws(ContainerError) {
            if let arguments = gtagArguments(value) {
                return .command(
                    number: place,
                    command: try ConsentCommand(gtagArguments: arguments),
                    arguments: arguments
                )
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
            if let timeKey, let value = message.removeValue(forKey: timeKey), value != .null {
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
            return .push(number: place, message: message, eventID: eventID, eventTime: eventTime)
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

    /// The column of the value at `pointer` in the line `bytes`: the line is read again with positions, so only
    /// a line with a problem pays for it.
    static func column(of pointer: String, in bytes: [UInt8]) -> Int? {
        let reader = ContainerLoader(options: LoadOptions(recordPositions: true))
        return (try? reader.readDocument(bytes: bytes, file: nil))?.locate(pointer)?.column
    }
}
