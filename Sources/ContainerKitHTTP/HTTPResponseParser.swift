import Foundation

/// Reads one HTTP/1.x answer from bytes as they arrive, without I/O: ``HTTPClient``'s I/O thread feeds it
/// what each `recv` returned and asks ``advance()`` whether the answer is complete.
///
/// Limits hold as bytes arrive: a header over 64 KiB, a body over the request's limit (declared or sent), a
/// chunk-size line over 1 KiB and trailers over 64 KiB fail the answer; bytes read but not consumed stay
/// under one header or line plus one `recv` step.
struct HTTPResponseParser {
    /// What the bytes fed so far make.
    enum Progress {
        /// More bytes are needed.
        case needMore
        /// The answer is complete; `reusable` when the connection can carry another request (an HTTP/1.1
        /// answer without `Connection: close` whose body had a known end, read to it, with nothing after it).
        case complete(BoundedHTTPResponse, reusable: Bool)
    }

    static let headLimit = 64 * 1024

    private enum Stage {
        case head
        case fixed(expected: Int)
        case untilClose
        case chunkSize
        case chunkData(left: Int)
        case chunkEnd
        case trailers(bytes: Int)
        case done
    }

    private let method: String
    private let limit: Int
    private var bytes: [UInt8] = []
    private var start = 0
    private var closed = false
    /// How far the current search for a terminator got (so a slow answer is not searched again and again).
    private var searched = 0
    private var stage = Stage.head
    private var status = 0
    private var headers: [String: String] = [:]
    private var keepsAlive = false
    private var body: [UInt8] = []

    /// A parser for the answer to a `method` request whose body may hold at most `limit` bytes.
    init(method: String, limit: Int) {
        self.method = method
        self.limit = limit
    }

    private var available: Int { bytes.count - start }

    /// Adds bytes read from the connection.
    mutating func feed(_ chunk: UnsafeRawBufferPointer) {
        if start > 0 && start == bytes.count {
            bytes.removeAll(keepingCapacity: true)
            start = 0
        } else if start > 4096 && start * 2 > bytes.count {
            bytes.removeSubrange(0..<start)
            start = 0
        }
        bytes.append(contentsOf: chunk)
    }

    /// Adds bytes read from the connection.
    mutating func feed(_ chunk: [UInt8]) { chunk.withUnsafeBytes { feed($0) } }

    /// Records that the server closed its side.
    mutating func endOfStream() { closed = true }

    /// Consumes what it can; throws when the answer is broken or over a limit.
    mutating func advance() throws(BoundedHTTPError) -> Progress {
        while true {
            switch stage {
            case .done:
                return .needMore
            case .head:
                guard let end = findHeadEnd() else {
                    guard available <= Self.headLimit else {
                        throw BoundedHTTPError(.badResponse, "the header is longer than \(Self.headLimit) bytes")
                    }
                    guard !closed else {
                        if available == 0 { throw BoundedHTTPError(.connectionFailed, "closed without an answer") }
                        throw BoundedHTTPError(.badResponse, "the answer ends inside its header")
                    }
                    return .needMore
                }
                // Also when the whole header came in one read: the limit does not depend on how bytes arrive.
                guard end - start <= Self.headLimit else {
                    throw BoundedHTTPError(.badResponse, "the header is longer than \(Self.headLimit) bytes")
                }
                try parseHead(upTo: end)
                if (100..<200).contains(status) && status != 101 { continue }
                if let progress = try startBody() { return progress }
            case .fixed(let expected):
                let taken = min(available, expected - body.count)
                body += take(taken)
                if body.count == expected { return complete() }
                guard !closed else { throw BoundedHTTPError(.truncated(received: body.count, expected: expected)) }
                return .needMore
            case .untilClose:
                guard body.count + available <= limit else { throw BoundedHTTPError(.tooLarge(declared: nil)) }
                body += take(available)
                guard closed else { return .needMore }
                stage = .done
                return .complete(BoundedHTTPResponse(status: status, headers: headers, body: body), reusable: false)
            case .chunkSize:
                guard let line = try readLine(limit: 1024) else { return .needMore }
                guard let size = Self.chunkSize(line) else {
                    throw BoundedHTTPError(.badResponse, "invalid chunk size line '\(Self.printable(line))'")
                }
                if size == 0 {
                    stage = .trailers(bytes: 0)
                } else {
                    guard body.count + size <= limit else { throw BoundedHTTPError(.tooLarge(declared: nil)) }
                    stage = .chunkData(left: size)
                }
            case .chunkData(let left):
                let taken = min(left, available)
                body += take(taken)
                if taken == left {
                    stage = .chunkEnd
                } else {
                    guard !closed else {
                        throw BoundedHTTPError(.truncated(received: body.count, expected: body.count + left - taken))
                    }
                    stage = .chunkData(left: left - taken)
                    return .needMore
                }
            case .chunkEnd:
                guard let line = try readLine(limit: 2) else { return .needMore }
                guard line.isEmpty else { throw BoundedHTTPError(.badResponse, "chunk data is longer than its size") }
                stage = .chunkSize
            case .trailers(let total):
                guard let line = try readLine(limit: Self.headLimit) else { return .needMore }
                let sum = total + line.count
                guard sum <= Self.headLimit else { throw BoundedHTTPError(.badResponse, "trailer too long") }
                if line.isEmpty { return complete() }
                stage = .trailers(bytes: sum)
            }
        }
    }

    // MARK: Steps

    private mutating func take(_ count: Int) -> ArraySlice<UInt8> {
        defer { start += count }
        return bytes[start..<(start + count)]
    }

    private mutating func complete() -> Progress {
        stage = .done
        let response = BoundedHTTPResponse(status: status, headers: headers, body: body)
        return .complete(response, reusable: keepsAlive && available == 0 && !closed)
    }

    /// The index just past the header's blank line, if it arrived.
    private mutating func findHeadEnd() -> Int? {
        let from = start + max(0, searched - 3)
        let end = bytes.withUnsafeBufferPointer { bytes -> Int? in
            var index = from
            while index + 3 < bytes.count {
                if bytes[index + 3] == 10, bytes[index + 2] == 13, bytes[index + 1] == 10, bytes[index] == 13 {
                    return index + 4
                }
                index += 1
            }
            return nil
        }
        if let end {
            searched = 0
            return end
        }
        searched = available
        return nil
    }

    /// One line (for chunk sizes and trailers) without its CRLF, or `nil` until it arrived.
    private mutating func readLine(limit: Int) throws(BoundedHTTPError) -> [UInt8]? {
        let window = bytes[(start + searched)...]
        guard let newline = window.firstIndex(of: 10) else {
            searched = available
            guard available <= limit else { throw BoundedHTTPError(.badResponse, "a line is too long") }
            guard !closed else { throw BoundedHTTPError(.truncated(received: 0, expected: 1), "cut short") }
            return nil
        }
        searched = 0
        // Also when the whole line came in one read (with its CR, as `available` counts above).
        guard newline - start <= limit else { throw BoundedHTTPError(.badResponse, "a line is too long") }
        var line = Array(take(newline - start + 1).dropLast())
        if line.last == 13 { line.removeLast() }
        return line
    }

    private mutating func parseHead(upTo end: Int) throws(BoundedHTTPError) {
        let head = take(end - start).dropLast(4)
        var lines = Self.lines(head)[...]
        let statusLine = lines.removeFirst().split(separator: 32, maxSplits: 2)
        guard statusLine.count >= 2, statusLine[0].starts(with: "HTTP/1.".utf8), statusLine[1].count == 3,
            let status = Int(String(decoding: statusLine[1], as: UTF8.self)), status >= 100
        else { throw BoundedHTTPError(.badResponse, "not an http status line") }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: 58) else { throw BoundedHTTPError(.badResponse, "bad header line") }
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = String(decoding: Self.trimmingBlanks(line[(colon + 1)...]), as: UTF8.self)
            if name == "content-length", let previous = headers[name], previous != value {
                throw BoundedHTTPError(.badResponse, "conflicting content-length")
            }
            if let previous = headers[name], name != "content-length" {
                headers[name] = previous + ", " + value
            } else {
                headers[name] = value
            }
        }
        self.status = status
        self.headers = headers
        keepsAlive =
            statusLine[0].elementsEqual("HTTP/1.1".utf8) && status != 101
            && !(headers["connection"]?.lowercased().split(separator: ",").contains {
                $0.trimmingCharacters(in: .whitespaces) == "close"
            } ?? false)
    }

    /// The lines of a header, split at CRLF (a lone CR or LF stays inside its line).
    private static func lines(_ head: ArraySlice<UInt8>) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var lineStart = head.startIndex
        var index = head.startIndex
        while index < head.endIndex {
            if head[index] == 13, index + 1 < head.endIndex, head[index + 1] == 10 {
                lines.append(head[lineStart..<index])
                index += 2
                lineStart = index
            } else {
                index += 1
            }
        }
        lines.append(head[lineStart..<head.endIndex])
        return lines
    }

    /// `bytes` without leading and trailing spaces and tabs (HTTP's optional white space).
    private static func trimmingBlanks(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        var trimmed = bytes
        while let first = trimmed.first, first == 32 || first == 9 { trimmed.removeFirst() }
        while let last = trimmed.last, last == 32 || last == 9 { trimmed.removeLast() }
        return trimmed
    }

    /// The size a chunk-size line declares: 1 to 15 hexadecimal digits (no sign, no blanks before them),
    /// then optionally blanks and a `;` that starts extensions; `nil` for anything else.
    static func chunkSize(_ line: [UInt8]) -> Int? {
        var size = 0
        var index = 0
        while index < line.count, index < 16 {
            let byte = line[index]
            let digit: Int
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = Int(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = Int(byte - UInt8(ascii: "a")) + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = Int(byte - UInt8(ascii: "A")) + 10
            default: digit = -1
            }
            if digit < 0 { break }
            size = size << 4 | digit
            index += 1
        }
        guard index > 0, index <= 15 else { return nil }
        while index < line.count, line[index] == 32 || line[index] == 9 { index += 1 }
        guard index == line.count || line[index] == UInt8(ascii: ";") else { return nil }
        return size
    }

    /// A `Content-Length` value: 1 to 18 decimal digits between optional blanks; `nil` for anything else (a
    /// sign, a list, an empty value).
    static func decimal(_ text: String.UTF8View) -> Int64? {
        let digits = text.drop { $0 == 32 || $0 == 9 }.reversed().drop { $0 == 32 || $0 == 9 }.reversed()
        guard !digits.isEmpty, digits.count <= 18 else { return nil }
        var value: Int64 = 0
        for byte in digits {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }

    /// At most 40 bytes of `line` for an error message, with anything but printable ASCII as `?`.
    private static func printable(_ line: [UInt8]) -> String {
        String(decoding: line.prefix(40).map { (32..<127).contains($0) ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    /// Chooses how the body ends; the finished answer when it has none.
    private mutating func startBody() throws(BoundedHTTPError) -> Progress? {
        if let encoding = headers["content-encoding"]?.trimmingCharacters(in: .whitespaces).lowercased(),
            !encoding.isEmpty, encoding != "identity"
        {
            throw BoundedHTTPError(.unsupportedEncoding(encoding))
        }
        if method == "HEAD" || status == 204 || status == 304 { return complete() }
        if let transfer = headers["transfer-encoding"]?.lowercased() {
            let codings = transfer.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard codings == ["chunked"] else { throw BoundedHTTPError(.unsupportedEncoding(transfer)) }
            stage = .chunkSize
            return nil
        }
        if let declared = headers["content-length"] {
            guard let length = Self.decimal(declared.utf8) else {
                throw BoundedHTTPError(.badResponse, "invalid content-length '\(declared)'")
            }
            guard length <= Int64(limit) else { throw BoundedHTTPError(.tooLarge(declared: length)) }
            body.reserveCapacity(Int(length))
            stage = .fixed(expected: Int(length))
            return nil
        }
        stage = .untilClose
        return nil
    }
}
