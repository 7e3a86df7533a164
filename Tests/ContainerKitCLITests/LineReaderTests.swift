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
}
