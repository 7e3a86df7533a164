import ContainerKit
import ContainerKitBraze
import Foundation
import Testing

@Suite struct AnalyticsSinkTests {
    @Test func inMemorySinkKeepsRecordsInOrder() async throws {
        let sink = InMemoryAnalyticsSink()
        let records = (0..<3).map { event("e\($0)") }
        sink.receive(records[0])
        sink.receive(Array(records[1...]))
        try await sink.flush()
        #expect(sink.records == records)
        #expect(sink.takeAll() == records)
        #expect(sink.count == 0)
        try await sink.deliver(records)
        #expect(sink.records == records)
    }

    @Test func jsonLinesSinkWritesOneReadableObjectPerLine() async throws {
        let directory = TemporaryDirectory("jsonl")
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        defer { directory.remove() }
        let path = directory.file("records.jsonl")
        let sink = try JSONLinesAnalyticsSink(destination: .file(path: path), synchronizesOnFlush: true)
        let records = AnalyticsRecordTests.samples
        sink.receive(Array(records[0..<5]))
        try await sink.deliver(Array(records[5...]))
        try await sink.flush()
        await sink.shutdown()
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == records.count + 1 && lines.last == "")
        for (line, record) in zip(lines, records) {
            #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) is [String: Any])
            #expect(try AnalyticsRecord(jsonLine: String(line)) == record)
        }
    }

    @Test func jsonLinesSinkReportsAnUnwritablePath() {
        do {
            _ = try JSONLinesAnalyticsSink(destination: .file(path: "/dev/null/records.jsonl"))
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .unwritable)
            #expect(error.message.contains("'/dev/null/records.jsonl'"))
        }
    }
}
