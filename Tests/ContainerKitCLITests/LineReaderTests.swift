import ContainerKit
import Foundation
import Testing

@testable import ContainerKitCLI

struct LineReaderTests {
    func lines(_ text: String, limit: Int) throws -> [String] {
        let path = NSTemporaryDirectory() + "containerkit-lines-\(UUID().uuidString)"
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        return Array(LineReader(handle: handle, maximumLineLength: limit))
    }

    @Test func splitsOnNewlinesAndDropsCarriageReturns() throws {
        #expect(try lines("a\r\nb\n\nc", limit: 100) == ["a", "b", "", "c"])
    }

    @Test func anOverlongLineIsCutOnceAndTheNextLinesKeepTheirNumbers() throws {
        let long = String(repeating: "x", count: 1_000)
        #expect(try lines("a\n\(long)\nb\n\(long)", limit: 10) == ["a", "xxxxxxxxxx", "b", "xxxxxxxxxx"])
    }

    /// An events file in UTF-16 (Windows PowerShell 5's `>` writes UTF-16 with a byte order mark) is refused once,
    /// not line by line (each line of it was an error of its own: `control byte 0x00`).
    @Test(arguments: [false, true])
    func aUTF16EventsFileIsRefusedOnceNotLineByLine(bigEndianWithoutMark: Bool) throws {
        var bytes: [UInt8] = bigEndianWithoutMark ? [] : [0xFF, 0xFE]
        for unit in "{\"event\": \"a\"}\n{\"event\": \"b\"}\n".utf16 {
            let (high, low) = (UInt8(unit >> 8), UInt8(unit & 0xFF))
            bytes += bigEndianWithoutMark ? [high, low] : [low, high]
        }
        let path = NSTemporaryDirectory() + "containerkit-pushes-\(UUID().uuidString)"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        let read = Array(PushInput(handle: handle, ownsHandle: false))
        try #require(read.count == 1)
        guard case .invalid(1, let problem) = read[0] else {
            Issue.record("the file is not refused")
            return
        }
        #expect(problem.code == "unsupported_encoding")
        #expect(problem.description.hasPrefix("line 1:1: the events file is UTF-16 or UTF-32 encoded ("))
        #expect(problem.description.hasSuffix("); save it as UTF-8: none of its lines was read"))
    }

    @Test func aUTF8FileWithAByteOrderMarkIsRead() throws {
        let path = NSTemporaryDirectory() + "containerkit-pushes-\(UUID().uuidString)"
        try Data([0xEF, 0xBB, 0xBF] + Array("{\"event\": \"a\"}\n[\"consent\", \"update\", {}]\n".utf8))
            .write(to: URL(fileURLWithPath: path))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        let read = Array(PushInput(handle: handle, ownsHandle: false))
        try #require(read.count == 2)
        guard case .push(1, let message, nil, nil, nil) = read[0] else {
            Issue.record("line 1 is not read")
            return
        }
        #expect(message["event"] == "a")
    }

    @Test func aLineOfExactlyTheLimitIsWholeAndOneByteMoreIsCut() throws {
        let path = NSTemporaryDirectory() + "containerkit-lines-\(UUID().uuidString)"
        try "0123456789\n0123456789A\n0123456789".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let handle = try #require(FileHandle(forReadingAtPath: path))
        defer { try? handle.close() }
        var reader = LineReader(handle: handle, maximumLineLength: 10)
        var read: [(String, Bool)] = []
        while let bytes = reader.nextBytes() {
            read.append((String(decoding: bytes, as: UTF8.self), reader.lastLineWasCut))
        }
        #expect(read.map(\.0) == ["0123456789", "0123456789", "0123456789"])
        #expect(read.map(\.1) == [false, true, false])
    }

    /// A push longer than the limit is refused as too long (not as the JSON error its cut would give), under its
    /// own number, and the pushes after it are read: whether the line ends with a newline, is cut before its
    /// newline was read, or is the last. With the limit of 50, the rest of a cut line takes more than one read to
    /// skip (before, each of those reads was taken for a line of its own).
    @Test func anOverlongPushIsRefusedAsTooLongAndTheNextPushesAreRead() throws {
        let long = #"{"event": "x", "p": ""# + String(repeating: "y", count: 100_000) + #""}"#
        let path = NSTemporaryDirectory() + "containerkit-pushes-\(UUID().uuidString)"
        try "\(long)\n{\"event\": \"a\"}\n\(long)".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        for limit in [50, 99_000] {
            let handle = try #require(FileHandle(forReadingAtPath: path))
            defer { try? handle.close() }
            var input = PushInput(handle: handle, ownsHandle: false)
            input.maximumLineLength = limit
            let read = Array(input)
            try #require(read.count == 3, "limit \(limit)")
            for index in [0, 2] {
                guard case .invalid(let number, let problem) = read[index] else {
                    Issue.record("line \(index + 1) is not refused")
                    continue
                }
                #expect(number == PushInput.Place(line: index + 1))
                #expect(problem.code == "line_too_long")
                #expect(
                    problem.description
                        == "line \(index + 1): the line is longer than \(limit) bytes, the most a push may be; it was not read"
                )
            }
            guard case .push(2, let message, _, _, _) = read[1] else {
                Issue.record("line 2 is not read")
                continue
            }
            #expect(message["event"] == "a")
        }
    }
}
