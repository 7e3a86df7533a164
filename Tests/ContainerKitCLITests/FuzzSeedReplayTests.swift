import ContainerKitBraze
import ContainerKitTesting
import Foundation
import Testing

@testable import ContainerKit
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

    /// A session-log line with the checksum of its snapshot written in, as the harness's mode bit 1 does.
    static func fixingChecksums(_ bytes: [UInt8]) -> [UInt8] {
        let marker = Array(#","c":""#.utf8)
        let separator = Array(#"","s":"#.utf8)
        var out: [UInt8] = []
        for (index, line) in bytes.split(separator: 0x0A, omittingEmptySubsequences: false).enumerated() {
            if index > 0 { out.append(0x0A) }
            var fixed = line
            if line.count >= marker.count, line.last == 0x7D,
                let at = (line.startIndex...(line.endIndex - marker.count)).first(where: {
                    line[$0..<$0 + marker.count].elementsEqual(marker)
                })
            {
                let hole = at + marker.count
                let start = hole + 16 + separator.count
                if start < line.endIndex - 1, line[(hole + 16)..<start].elementsEqual(separator) {
                    let sum = FileSessionPersistence.checksum(line[start..<(line.endIndex - 1)])
                    fixed.replaceSubrange(hole..<hole + 16, with: Array(String(format: "%016llx", sum).utf8))
                }
            }
            out.append(contentsOf: fixed)
        }
        return out
    }

    @Test func sessionLogSeeds() async throws {
        let root = NSTemporaryDirectory() + "containerkit-seed-sessions-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        for (number, bytes) in Self.inputs("sessionlog").enumerated() {
            guard let mode = bytes.first else { continue }
            var rest = Array(bytes.dropFirst())
            if mode & 2 == 2 { rest = Self.fixingChecksums(rest) }
            if mode & 1 == 0 {
                if let parsed = FileSessionPersistence.parse(rest[...]), let range = parsed.snapshot {
                    #expect(range.upperBound <= rest.count)
                    _ = try? SessionSnapshot(jsonValue: Value(jsonBytes: Array(rest[range])))
                }
                continue
            }
            let directory = root + "/\(number)"
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            var segments = [rest]
            if mode & 4 == 4, let nul = rest.firstIndex(of: 0) {
                segments = [Array(rest[..<nul]), Array(rest[(nul + 1)...])]
            }
            var users: [String] = []
            var newest: Int64 = 0
            for (index, segment) in segments.enumerated() {
                try Data(segment).write(to: URL(fileURLWithPath: directory + "/00000000000\(index + 1).sessions"))
                for line in segment.split(separator: 0x0A) {
                    guard let parsed = FileSessionPersistence.parse(line) else { continue }
                    if !users.contains(where: { $0.utf8.elementsEqual(parsed.userID.utf8) }) {
                        users.append(parsed.userID)
                    }
                    if parsed.userID.utf8.elementsEqual(users[0].utf8) { newest = max(newest, parsed.version) }
                }
            }
            for extra in ["ada", ""] where !users.contains(where: { $0.utf8.elementsEqual(extra.utf8) }) {
                users.append(extra)
            }
            let persistence = FileSessionPersistence(directory: directory, segmentBytes: 4096)
            var expected: [StoredSession?] = []
            for user in users { expected.append(try? await persistence.load(userID: user)) }
            // The first user saved above every version it has, the second removed: every user loads as expected
            // after compaction, and from a second opening.
            var snapshot = expected[0]?.snapshot ?? SessionSnapshot(sessionID: users[0])
            snapshot.sessionID = users[0]
            let stored = StoredSession(snapshot: snapshot, version: newest + 1)
            #expect(try await persistence.save([.save(stored)]).superseded.isEmpty)
            expected[0] = stored
            if let removed = expected[1] {
                let removal = SessionChange.remove(userID: users[1], version: removed.version + 1)
                #expect(try await persistence.save([removal]).superseded.isEmpty)
                expected[1] = nil
            }
            try persistence.compact()
            let reopened = FileSessionPersistence(directory: directory, segmentBytes: 4096)
            for (index, user) in users.enumerated() {
                #expect((try? await persistence.load(userID: user)) == expected[index], "seed \(number) user \(index)")
                #expect((try? await reopened.load(userID: user)) == expected[index], "seed \(number) user \(index)")
            }
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
