import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Testing

@testable import ContainerKit
@testable import ContainerKitCLI
@testable import ContainerKitHTTP

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
        let harnesses = [
            "loader", "push", "regex", "previewurl", "eventsline", "queuerecord", "httpanswer", "sessionlog",
            "batchbody",
            "pgrow",
        ]
        for harness in harnesses {
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
            // The harness's differential check: behind `(?=)` the pattern runs on the backtracking matcher.
            if !pattern.usesBacktracking, let search,
                (try? RegexParser(pattern.source).root.hasOptionalNullableIteration) == false,
                let wrapped = try? RegexPattern("(?=)(?:" + pattern.source + ")", options: options)
            {
                var other: RegexPattern.Match?? = nil
                do { other = .some(try wrapped.firstMatch(in: subject, stepBudget: 1 << 20)) } catch {}
                if let other { #expect(other?.range == search?.range, "\(pattern.source)") }
            }
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
            var input = PushInput(handle: handle, ownsHandle: false)
            input.maximumLineLength = 4096
            input.keys = PushInput.Keys(time: "timestamp", session: "user_id")  // as the harness reads
            for _ in input {}
            // The dump's splitter finds the same items wherever its input is cut (the harness's check).
            let whole = DataLayerDump.pieces(of: bytes, limit: 4096)
            for cut in [0, bytes.count / 3, bytes.count / 2] {
                #expect(DataLayerDump.pieces(of: bytes, cutAt: cut, limit: 4096) == whole, "cut at \(cut)")
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
                _ = try? SegmentRecordStore.pendingRecords(in: directory)
            }
        }
    }

    /// What an answer read as: `nil` while it needs more, else its failure or its parts (`reusable` only when
    /// it completed with its last piece).
    struct AnswerOutcome: Equatable {
        var failed = false
        var status = 0
        var headers: [String: String] = [:]
        var body: [UInt8] = []
        var reusable: Bool?

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.failed == rhs.failed && lhs.status == rhs.status && lhs.headers == rhs.headers
                && lhs.body == rhs.body && (lhs.reusable == nil || rhs.reusable == nil || lhs.reusable == rhs.reusable)
        }
    }

    static func readAnswer(_ pieces: [ArraySlice<UInt8>], method: String, limit: Int, close: Bool) -> AnswerOutcome? {
        var parser = HTTPResponseParser(method: method, limit: limit)
        do {
            for (index, piece) in pieces.enumerated() {
                parser.feed(Array(piece))
                if case .complete(let response, let reusable) = try parser.advance() {
                    let last = index == pieces.count - 1
                    return AnswerOutcome(
                        status: response.status,
                        headers: response.headers,
                        body: response.body,
                        reusable: last ? reusable : nil
                    )
                }
            }
            guard close else { return nil }
            parser.endOfStream()
            if case .complete(let response, let reusable) = try parser.advance() {
                return AnswerOutcome(
                    status: response.status,
                    headers: response.headers,
                    body: response.body,
                    reusable: reusable
                )
            }
            return nil
        } catch {
            return AnswerOutcome(failed: true)
        }
    }

    @Test func httpAnswerSeedsReadTheSameWholeAndCut() {
        for bytes in Self.inputs("httpanswer") {
            guard bytes.count >= 2, bytes.count >= 2 + 3 * Int(bytes[1] & 7) else { continue }
            let cuts = Int(bytes[1] & 7)
            let answer = bytes[(2 + 3 * cuts)...]
            let method = bytes[0] & 1 == 1 ? "HEAD" : "POST"
            let close = bytes[0] & 2 == 2
            let limit = [1 << 20, 16, 100, 4096][Int(bytes[0] >> 2 & 3)]
            let points = (0..<cuts).map { index in
                let raw = Int(bytes[2 + 3 * index]) << 16 | Int(bytes[3 + 3 * index]) << 8 | Int(bytes[4 + 3 * index])
                return answer.startIndex + raw % (answer.count + 1)
            }.sorted()
            var pieces: [ArraySlice<UInt8>] = []
            var from = answer.startIndex
            for point in points + [answer.endIndex] {
                pieces.append(answer[from..<point])
                from = point
            }
            let whole = Self.readAnswer([answer], method: method, limit: limit, close: close)
            let split = Self.readAnswer(pieces, method: method, limit: limit, close: close)
            #expect(whole == split, "\(answer.prefix(60).map { $0 })")
        }
    }

    /// Session-file lines with their checksums written in (the whole line's `"k"`, else the snapshot's `"c"`), as
    /// the harness's mode bit 1 does.
    static func fixingChecksums(_ bytes: [UInt8]) -> [UInt8] {
        func find(_ text: String, in line: ArraySlice<UInt8>) -> Int? {
            let pattern = Array(text.utf8)
            guard line.count >= pattern.count else { return nil }
            return (line.startIndex...(line.endIndex - pattern.count)).first {
                line[$0..<$0 + pattern.count].elementsEqual(pattern)
            }
        }
        var out: [UInt8] = []
        for (index, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            if index > 0 { out.append(0x0A) }
            var fixed = line
            if let at = find(#","k":""#, in: line), line.endIndex - (at + 6) >= 16 {
                let sum = Array(line).withUnsafeBufferPointer {
                    LegacySessionFiles.lineChecksum($0, hole: at + 6 - line.startIndex)
                }
                fixed.replaceSubrange(at + 6..<at + 22, with: LegacySessionFiles.hex(sum))
            } else if line.last == 0x7D, let at = find(#","c":""#, in: line) {
                let hole = at + 6
                let start = hole + 16 + 6
                if start < line.endIndex - 1, line[(hole + 16)..<start].elementsEqual(#"","s":"#.utf8) {
                    let sum = LegacySessionFiles.checksum(line[start..<(line.endIndex - 1)])
                    fixed.replaceSubrange(hole..<hole + 16, with: LegacySessionFiles.hex(sum))
                }
            }
            out.append(contentsOf: fixed)
        }
        return out
    }

    /// As the harness: a line parses within its bounds and what reads back is written again the same; a
    /// directory of segments reads as its lines say (each user's newest version, removals, skipped lines).
    @Test func sessionLogSeeds() throws {
        let root = NSTemporaryDirectory() + "containerkit-seed-sessions-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (number, bytes) in Self.inputs("sessionlog").enumerated() {
            guard let mode = bytes.first else { continue }
            var rest = Array(bytes.dropFirst())
            if mode & 2 == 2 { rest = Self.fixingChecksums(rest) }
            if mode & 1 == 0 {
                if let parsed = LegacySessionFiles.parse(rest[...]), let range = parsed.snapshot {
                    #expect(range.upperBound <= rest.count)
                    if let snapshot = try? SessionSnapshot(jsonValue: Value(jsonBytes: Array(rest[range]))) {
                        let stored = StoredSession(snapshot: snapshot, version: parsed.version)
                        let written =
                            parsed.time.map { LegacySessionFileWriter.line(for: stored, time: $0) }
                            ?? LegacySessionFileWriter.earlierFormatLine(for: stored)
                        let again = try #require(LegacySessionFiles.parse(written[...]), "seed \(number)")
                        #expect(again.version == parsed.version && again.time == parsed.time, "seed \(number)")
                    }
                }
                continue
            }
            let directory = root + "/\(number)"
            var segments = [rest]
            if mode & 4 == 4, let nul = rest.firstIndex(of: 0) {
                segments = [Array(rest[..<nul]), Array(rest[(nul + 1)...])]
            }
            // Each user's newest line (of one version, the later), in file order, and the lines that do not read.
            var newest: [SessionKey: (position: (Int, Int), line: ArraySlice<UInt8>, version: Int64, removed: Bool)] =
                [:]
            var skipped = 0
            for (file, segment) in segments.enumerated() {
                try LegacySessionFileWriter.write([segment], segment: file + 1, in: directory)
                for (index, line) in segment.split(separator: 0x0A).enumerated()
                where !line.allSatisfy({ $0 == 0x20 || $0 == 0x0D || $0 == 0x09 }) {
                    guard let parsed = LegacySessionFiles.parse(line) else {
                        skipped += 1
                        continue
                    }
                    let key = SessionKey(parsed.userID)
                    if let old = newest[key], old.version > parsed.version { continue }
                    newest[key] = ((file, index), line, parsed.version, parsed.snapshot == nil)
                }
            }
            var expected: [StoredSession] = []
            for (key, entry) in newest.sorted(by: { $0.value.position < $1.value.position }) where !entry.removed {
                let line = Array(entry.line)
                let range = try #require(LegacySessionFiles.parse(line[...])?.snapshot)
                guard let snapshot = try? SessionSnapshot(jsonValue: Value(jsonBytes: Array(line[range]))),
                    snapshot.sessionID.utf8.elementsEqual(key.userID.utf8)
                else {
                    skipped += 1
                    continue
                }
                expected.append(StoredSession(snapshot: snapshot, version: entry.version))
            }
            let contents = try LegacySessionFiles.read(directory: directory)
            #expect(contents.storedSessions == expected, "seed \(number)")
            #expect(contents.endedSessions == newest.values.count { $0.removed }, "seed \(number)")
            #expect(contents.skippedLines == skipped, "seed \(number)")
            #expect(try LegacySessionFiles.read(directory: directory) == contents, "seed \(number)")
        }
    }

    @Test func postgresRowSeedsReadBackFromTheirOwnText() throws {
        let manager = TagManager(logger: InMemoryLogger())
        let path = Self.seeds + "/../../Containers/GTM-MUSIC01.json"
        let container = try #require(FileManager.default.contents(atPath: path))
        manager.add(try ContainerLoader().load(bytes: [UInt8](container), file: path))
        for bytes in Self.inputs("pgrow") {
            guard let snapshot = try? SessionSnapshot(jsonText: String(decoding: bytes, as: UTF8.self)) else {
                continue
            }
            #expect(try SessionSnapshot(jsonText: snapshot.jsonText) == snapshot)
            let layer = manager.restoreDataLayer(from: snapshot)
            _ = layer.push(event: "played song", parameters: ["title": "So What", "genre": "jazz", "duration": 545])
            let after = layer.snapshot()
            #expect(try SessionSnapshot(jsonText: after.jsonText) == after)
        }
    }
}
