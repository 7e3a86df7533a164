import ContainerKit
import ContainerKitDelivery
import Foundation

/// The pushes `run`, `preview` and `diff` read: one JSON object per line, from a file or standard input, its
/// `message_id` the push's event ID. A line that is a JSON array is a gtag-style command, pushed as GTM pushes
/// gtag's `arguments` (not as an array): a consent command, `["consent", "default", {"ad_storage": "denied",
/// "region": ["ES"]}]`.
struct PushInput: Sequence {
    /// One non-blank input line: a push, a command, or why it is neither.
    enum Line {
        /// `eventID`: the line's `message_id` (``eventIDKey``), taken out of the message and checked: the push's
        /// event ID (``DataLayer/push(_:eventID:)``); `nil` when the line has none or it is `null`. `eventTime`: with
        /// a ``PushInput/timeKey``, that member's time, taken out of the message (`run --time-key`); else `nil`.
        case push(number: Int, message: ValueMap, eventID: String?, eventTime: Date?)
        case command(number: Int, command: ConsentCommand, arguments: [Value])
        /// `problem` reads like "line 3:7: expected ',' or '}' …".
        case invalid(number: Int, problem: Problem)

        /// Line `number` is not a push: `code`, `message` and where in it (`column`), when known.
        static func problem(_ number: Int, _ code: String, _ message: String, column: Int? = nil) -> Line {
            .invalid(number: number, problem: Problem(line: number, code: code, message: message, column: column))
        }
    }

    /// Why a line is not a push: a code (`syntax_error`, `not_an_object`, …), a message and the column.
    struct Problem: CustomStringConvertible {
        var line: Int
        var code: String
        var message: String
        var column: Int?

        /// "line 3:7: expected ',' or '}' …".
        var description: String { "line \(line)\(column.map { ":\($0)" } ?? ""): \(message)" }

        /// `{"line": n, "error": {"code", "message", "column"}}`: what `run --format json` prints in the line's place.
        var jsonValue: Value {
            var error = ValueMap(minimumCapacity: 3)
            error["code"] = .string(code)
            error["message"] = .string(message)
            error["column"] = column.map { .int(Int64($0)) } ?? .null
            var object = ValueMap(minimumCapacity: 2)
            object["line"] = .int(Int64(line))
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
        return AnyIterator {
            while !stopped, let bytes = lines.nextBytes() {
                number += 1
                if number == 1, let encoding = DocumentReader.wideEncoding(bytes) {
                    // Every line of it would fail: the file is refused once, and nothing of it is read.
                    stopped = true
                    return .problem(
                        number,
                        "unsupported_encoding",
                        "the events file is UTF-16 or UTF-32 encoded (\(encoding)); save it as UTF-8: "
                            + "none of its lines was read",
                        column: 1
                    )
                }
                if lines.lastLineWasCut {
                    return .problem(
                        number,
                        "line_too_long",
                        "the line is longer than \(limit) bytes, the most a push may be; it was not read"
                    )
                }
                if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) { continue }
                return PushInput.parse(bytes, number: number, timeKey: timeKey)
            }
            if !stopped, let error = lines.readError {
                // Said once, in the place of the line that could not be read.
                stopped = true
                number += 1
                return .problem(
                    number,
                    "read_error",
                    "the input could not be read from here on (\(error)); the lines after it were not read"
                )
            }
            return nil
        }
    }

    /// Parses one line's bytes as they were read: invalid UTF-8 is an error that says where, not replaced.
    static func parse(_ bytes: [UInt8], number: Int, timeKey: String? = nil) -> Line {
        do throws(ContainerError) {
            let value = try Value(jsonBytes: bytes)
            if case .array(let arguments) = value {
                return .command(
                    number: number,
                    command: try ConsentCommand(gtagArguments: arguments),
                    arguments: arguments
                )
            }
            guard case .object(var message) = value else {
                return .problem(
                    number,
                    "not_an_object",
                    "a push must be a JSON object (or a gtag command, a JSON array), not \(value.typeName)",
                    column: column(of: "", in: bytes)
                )
            }
            let eventID: String?
            switch message.removeValue(forKey: eventIDKey) {
            case nil, .null?:
                eventID = nil
            case .string(let id)?:
                do throws(ContainerError) {
                    try DataLayer.validate(eventID: id)
                } catch {
                    return invalidEventID("'\(eventIDKey)' is refused: \(error.message)", bytes, number)
                }
                eventID = id
            case let other?:
                let rule = "a string of 1 to \(DataLayer.maximumEventIDBytes) bytes without NUL"
                return invalidEventID("'\(eventIDKey)' must be \(rule), not \(other.typeName)", bytes, number)
            }
            var eventTime: Date?
            if let timeKey, let value = message.removeValue(forKey: timeKey), value != .null {
                guard case .string(let text) = value, let time = ISO8601Timestamp.date(from: text) else {
                    let found = value.stringValue.map { "'\($0.prefix(64))'" } ?? value.typeName
                    return .problem(
                        number,
                        "invalid_time",
                        "'\(timeKey)' (--time-key) must be an ISO-8601 time such as 2024-05-01T12:30:00.250Z, "
                            + "not \(found)",
                        column: column(of: "/" + JSONPointer.escape(timeKey), in: bytes)
                    )
                }
                eventTime = time
            }
            return .push(number: number, message: message, eventID: eventID, eventTime: eventTime)
        } catch {
            // A syntax error has its place; a command's error its pointer, placed in the line read again.
            return .problem(
                number,
                error.code.rawValue,
                error.message,
                column: error.location.map(\.column) ?? column(of: error.pointer, in: bytes)
            )
        }
    }

    /// The key of a line's event ID: `message_id`, Segment's name and the service's. (Not `event_id`: data layers
    /// use that name for their own IDs, Meta's deduplication key among them.) `null` is no ID, as in the service.
    static let eventIDKey = "message_id"

    /// The line refused for its `message_id`, placed at the ID's column.
    private static func invalidEventID(_ message: String, _ bytes: [UInt8], _ number: Int) -> Line {
        .problem(
            number,
            ContainerError.Code.invalidEventID.rawValue,
            message,
            column: column(of: "/" + eventIDKey, in: bytes)
        )
    }

    /// The column of the value at `pointer` in the line `bytes`: the line is read again with positions, so only
    /// a line with a problem pays for it.
    static func column(of pointer: String, in bytes: [UInt8]) -> Int? {
        let reader = ContainerLoader(options: LoadOptions(recordPositions: true))
        return (try? reader.readDocument(bytes: bytes, file: nil))?.locate(pointer)?.column
    }
}
