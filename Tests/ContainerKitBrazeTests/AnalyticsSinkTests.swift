import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Testing

@Suite struct AnalyticsSinkTests {
    @Test func inMemorySinkKeepsRecordsInOrder() async throws {
        let sink = InMemoryAnalyticsSink()
        let records = (0..<3).map { event("e\($0)") }
        #expect(try sink.enqueue([records[0]]) == nil)
        _ = try sink.enqueue(Array(records[1...]))
        #expect(sink.records == records)
        #expect(sink.takeAll() == records)
        #expect(sink.count == 0)
        let result = await sink.deliver(records)
        #expect(result.accepted == records && result.retryable.isEmpty && result.rejected.isEmpty)
        #expect(sink.records == records)
    }

    @Test func jsonLinesDestinationWritesOneReadableObjectPerLine() async throws {
        let directory = TemporaryDirectory("jsonl")
        try FileManager.default.createDirectory(atPath: directory.path, withIntermediateDirectories: true)
        defer { directory.remove() }
        let path = directory.file("records.jsonl")
        let sink = try JSONLinesDestination(destination: .file(path: path), synchronizes: true)
        let records = AnalyticsRecordTests.samples
        #expect(await sink.deliver(Array(records[0..<5])).accepted.count == 5)
        #expect(await sink.deliver(Array(records[5...])).accepted.count == records.count - 5)
        sink.close()
        let late = await sink.deliver([records[0]])
        #expect(late.retryable.count == 1 && late.retryError?.code == .shutDown)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == records.count + 1 && lines.last == "")
        for (line, record) in zip(lines, records) {
            #expect(try JSONSerialization.jsonObject(with: Data(line.utf8)) is [String: Any])
            #expect(try AnalyticsRecord(jsonLine: String(line)) == record)
        }
    }

    @Test func jsonLinesDestinationReportsAnUnwritablePath() {
        do {
            _ = try JSONLinesDestination(destination: .file(path: "/dev/null/records.jsonl"))
            Issue.record("expected an error")
        } catch {
            #expect(error.code == .unwritable)
            #expect(error.message.contains("'/dev/null/records.jsonl'"))
        }
    }
}
