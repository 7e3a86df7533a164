import ContainerKit
import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Testing

@testable import ContainerKitCLI

/// Replays every input in `Fuzz/Seeds/<harness>/` through what that libFuzzer harness calls, so the seeds —
/// and every input that ever crashed a harness, which is added there as `crash-<what>` — run in `make test`.
struct FuzzSeedReplayTests {
    static let seeds = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fuzz/Seeds").path

    static func inputs(_ harness: String) -> [[UInt8]] {
        let directory = seeds + "/" + harness
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        return names.sorted().compactMap {
            FileManager.default.contents(atPath: directory + "/" + $0).map { [UInt8]($0) }
        }
    }

    static func split(_ bytes: [UInt8]) -> ([UInt8], [UInt8]?) {
        guard let nul = bytes.firstIndex(of: 0) else { return (bytes, nil) }
        return (Array(bytes[..<nul]), Array(bytes[(nul + 1)...]))
    }

    @Test func everyHarnessHasSeeds() {
        for harness in ["loader", "push", "regex", "previewurl", "eventsline", "queuerecord"] {
            #expect(!Self.inputs(harness).isEmpty, "Fuzz/Seeds/\(harness) is empty")
        }
    }

    @Test func loaderSeeds() {
        for bytes in Self.inputs("loader") {
            let loader = ContainerLoader()
            if let document = try? loader.readDocument(bytes: bytes, file: "GTM-FUZZ.json") {
                _ = try? loader.compile(document)
            }
        }
    }

    @Test func pushSeeds() {
        for bytes in Self.inputs("push") {
            let (containerBytes, pushBytes) = Self.split(bytes)
            guard let container = try? ContainerLoader().load(bytes: containerBytes, file: "GTM-FUZZ.json") else {
                continue
            }
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let layer = manager.makeDataLayer(debug: true)
            if let pushBytes, case .object(let message)? = try? Value(jsonBytes: pushBytes) {
                _ = layer.push(message)
            }
        }
    }

    @Test func regexSeeds() {
        for bytes in Self.inputs("regex") {
            guard let first = bytes.first else { continue }
            let (patternBytes, subjectBytes) = Self.split(Array(bytes.dropFirst()))
            let options: RegexPattern.Options = first & 1 == 1 ? .ignoreCase : []
            guard let pattern = try? RegexPattern(String(decoding: patternBytes, as: UTF8.self), options: options)
            else { continue }
            let subject = String(decoding: subjectBytes ?? [], as: UTF8.self)
            let matched = try? pattern.matches(subject, stepBudget: 1 << 20)
            var search: RegexPattern.Match?? = nil
            do { search = .some(try pattern.firstMatch(in: subject, stepBudget: 1 << 20)) } catch {}
            if let matched, let search { #expect(matched == (search != nil), "\(pattern.source)") }
        }
    }

    @Test func previewURLSeeds() {
        for bytes in Self.inputs("previewurl") {
            _ = try? PreviewURL(parsing: String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test func eventsLineSeeds() throws {
        for bytes in Self.inputs("eventsline") {
            let path = NSTemporaryDirectory() + "containerkit-seed-\(UUID().uuidString).jsonl"
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            defer { try? FileManager.default.removeItem(atPath: path) }
            let handle = try #require(FileHandle(forReadingAtPath: path))
            defer { try? handle.close() }
            var reader = LineReader(handle: handle, maximumLineLength: 4096)
            var number = 0
            while let line = reader.nextBytes() {
                number += 1
                _ = PushInput.parse(line, number: number)
            }
        }
    }

    @Test func queueRecordSeeds() throws {
        let directory = NSTemporaryDirectory() + "containerkit-seed-queue-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        for bytes in Self.inputs("queuerecord") {
            guard let mode = bytes.first else { continue }
            let rest = Array(bytes.dropFirst())
            if mode & 1 == 0 {
                if let record = try? AnalyticsRecord(jsonBytes: rest) {
                    #expect(try AnalyticsRecord(jsonLine: record.jsonLine) == record)
                }
            } else {
                try Data(rest).write(to: URL(fileURLWithPath: directory + "/segment-00000000000000000001.jsonl"))
                _ = try? DurableQueue.pendingRecords(in: directory)
            }
        }
    }
}
