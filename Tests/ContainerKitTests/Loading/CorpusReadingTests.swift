import ContainerKit
import Foundation
import TestSupport
import Testing

extension Loading {
    @Suite(.enabled(if: Fixtures.corpusDirectory != nil, Fixtures.corpusMissing))
    struct CorpusReadingTests {
        static var jsonFiles: [URL] {
            Fixtures.corpusFiles().filter { $0.pathExtension == "json" || $0.lastPathComponent.hasSuffix(".json.js") }
        }

        @Test func findsTheWholeCorpus() {
            #expect(Fixtures.corpusFiles().count == 26)
            #expect(Self.jsonFiles.count == 19)
            #expect(Fixtures.corpusFiles(in: "v3-default").filter { $0.pathExtension == "binary" }.count == 7)
        }

        @Test(arguments: jsonFiles)
        func readsEveryJSONFileAsFoundationDoes(_ url: URL) throws {
            let bytes = try Fixtures.bytes(of: url)
            let document = try readDocument(bytes)
            #expect(document.syntax == .json)
            #expect(document.value == (try foundationValue(bytes)), "\(Fixtures.corpusName(url))")
            #expect(document.duplicateKeys.isEmpty)
            var pointers: [String] = []
            allPointers(document.value, into: &pointers)
            #expect(document.sourceMap?.valueCount == pointers.count)
        }

        @Test(arguments: jsonFiles)
        func locatesValuesTheSameWithAndWithoutRecordedPositions(_ url: URL) throws {
            let bytes = try Fixtures.bytes(of: url)
            let recorded = try readDocument(bytes)
            let scanned = try readDocument(bytes, positions: false)
            var pointers: [String] = []
            allPointers(recorded.value, into: &pointers)
            // Every pointer has a location whose byte starts the value; rescans agree (sampled: each is O(n)).
            for (index, pointer) in pointers.enumerated() {
                let location = try #require(recorded.location(of: pointer), "\(pointer)")
                let first = bytes[location.offset]
                #expect(Array("{[\"-0123456789tfn".utf8).contains(first), "\(pointer)")
                if index % 97 == 0 { #expect(scanned.locate(pointer) == location, "\(pointer)") }
            }
        }

        @Test func refusesEveryTruncationOfACorpusFile() throws {
            // One export and the smaller resource extract (each cut costs a parse of up to the whole file).
            for url in Fixtures.corpusFiles(in: "export-web").prefix(1) + Fixtures.corpusFiles(in: "resource").suffix(1)
            {
                let bytes = try Fixtures.bytes(of: url)
                var contentEnd = bytes.count
                while contentEnd > 0, [0x20, 0x0A, 0x0D, 0x09].contains(bytes[contentEnd - 1]) { contentEnd -= 1 }
                for length in stride(from: 0, to: contentEnd, by: 997) {
                    let error = readError(Array(bytes[..<length]))
                    #expect(error?.code == .syntax, "\(Fixtures.corpusName(url)) cut at \(length)")
                    if length > 0 { #expect(error?.location != nil, "\(Fixtures.corpusName(url)) cut at \(length)") }
                }
            }
        }

        @Test func neverCrashesOnMutatedCorpusFiles() throws {
            let url = try #require(Fixtures.corpusFiles(in: "v5-mobile").first)
            let original = try Fixtures.bytes(of: url)
            let insertions: [[UInt8]] =
                ["{", "}", "[", "]", ",", ":", "\"", "\\", "\\ud800", "1e999", "é"].map {
                    Array($0.utf8)
                } + [[0xFF], [0x00], [0xED, 0xA0, 0x80]]
            var seed: UInt64 = 42
            func next() -> Int {
                seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                return Int(truncatingIfNeeded: seed >> 33)
            }
            for round in 0..<300 {
                var bytes = original
                for _ in 0..<(1 + next() % 3) {
                    let at = next() % bytes.count
                    switch next() % 3 {
                    case 0: bytes[at] = UInt8(truncatingIfNeeded: next())
                    case 1: bytes.insert(contentsOf: insertions[next() % insertions.count], at: at)
                    default: bytes.removeSubrange(at..<min(bytes.count, at + 1 + next() % 8))
                    }
                }
                do {
                    let recorded = try readDocument(bytes)
                    let scanned = try readDocument(bytes, positions: false)
                    #expect(recorded.value == scanned.value, "round \(round)")
                    var pointers: [String] = []
                    allPointers(recorded.value, into: &pointers)
                    for pointer in pointers.prefix(40) {
                        #expect(scanned.locate(pointer) == recorded.location(of: pointer), "round \(round) \(pointer)")
                    }
                } catch let error as ContainerError {
                    #expect(error.location.map { $0.offset <= bytes.count } ?? true, "round \(round)")
                    #expect(!error.message.isEmpty)
                }
            }
        }

        @Test(arguments: Fixtures.corpusFiles(in: "v3-default").filter { $0.pathExtension == "binary" })
        func refusesLegacyBinaryContainers(_ url: URL) throws {
            let error = try #require(readError(try Fixtures.bytes(of: url)))
            #expect(error.code == .legacyBinary)
            #expect(error.message.contains("legacy binary (protobuf)"))
            #expect(error.message.contains("export the container from the GTM UI as JSON"))
        }

        @Test func readsTheFlatLegacyJSONContainer() throws {
            let url = try #require(Fixtures.corpusFiles(in: "v3-default").first { $0.pathExtension == "json" })
            let document = try readDocument(try Fixtures.bytes(of: url))
            #expect(document.value.objectValue?.count == 4)
            #expect(document.value.objectValue?["app_background_color"] == "#fff8b9")
        }

        @Test(arguments: Fixtures.corpusFiles(in: "resource"))
        func readsResourceFilesWrappedInTheGtmJsAssignment(_ url: URL) throws {
            let bytes = try Fixtures.bytes(of: url)
            let wrapped = Array("var data = ".utf8) + bytes + Array(";\n".utf8)
            let plain = try readDocument(bytes)
            let document = try readDocument(wrapped)
            #expect(document.value == plain.value)
            let pointer = "/resource/macros/1"
            let shifted = try #require(plain.location(of: pointer))
            let location = try #require(document.location(of: pointer))
            #expect(location.offset == shifted.offset + 11)
            #expect(location.line == shifted.line)
        }
    }
}
