import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

@Suite(
    .enabled(if: TestContainers.corpus != nil, "corpus not found at ../shared/research/corpus; corpus tests skipped")
)
struct CorpusTests {
    static var jsonFiles: [String] {
        guard let corpus = TestContainers.corpus,
            let kinds = try? FileManager.default.contentsOfDirectory(atPath: corpus.path)
        else { return [] }
        return kinds.sorted().flatMap { kind -> [String] in
            let dir = corpus.appendingPathComponent(kind).path
            let files = (try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []
            return files.filter { $0.hasSuffix(".json") || $0.hasSuffix(".json.js") }.sorted().map { "\(kind)/\($0)" }
        }
    }

    @Test func everyJSONFileInTheCorpusLoads() async throws {
        let files = CorpusTests.jsonFiles
        #expect(files.count == 19)
        for file in files {
            let path = try #require(TestContainers.corpusFile(file))
            let container = try await ContainerLoader().load(path: path)
            let counts = container.counts
            // Evaluating a few events never crashes, whatever the container holds.
            let manager = TagManager(logger: InMemoryLogger())
            manager.add(container)
            let layer = manager.makeDataLayer(debug: true)
            for event in ["gtm.js", "gtm.load", "logEvent", "_e", "purchase"] { await layer.push(event: event) }
            #expect(counts.tags + counts.macros + container.variableNames.count > 0, "\(file) compiled to nothing")
        }
    }

    /// Every corpus container, written by Foundation as an XML property list, reads back as the same value
    /// (property lists hold no `null`: those are left out of both sides) and compiles to the same container.
    @Test func everyJSONContainerReadsTheSameAsAnXMLPropertyList() async throws {
        func withoutNulls(_ value: Value) -> Value? {
            switch value {
            case .null, .undefined: return nil
            case .array(let elements): return .array(elements.compactMap(withoutNulls))
            case .object(let map):
                var kept = ValueMap()
                for (key, member) in map { kept[key] = withoutNulls(member) }
                return .object(kept)
            default: return value
            }
        }
        func foundationObject(_ value: Value) -> Any {
            switch value {
            case .bool(let b): return b
            case .int(let i): return NSNumber(value: i)
            case .double(let d): return NSNumber(value: d)
            case .string(let s): return s
            case .array(let elements): return elements.map(foundationObject)
            case .object(let map):
                var dictionary: [String: Any] = [:]
                for (key, member) in map { dictionary[key] = foundationObject(member) }
                return dictionary
            case .null, .undefined: return ""  // removed before
            }
        }
        var compared = 0
        for file in CorpusTests.jsonFiles {
            let path = try #require(TestContainers.corpusFile(file))
            let json = try await ContainerLoader().readDocument(path: path)
            let expected = try #require(withoutNulls(json.value))
            let xml = try PropertyListSerialization.data(
                fromPropertyList: foundationObject(expected),
                format: .xml,
                options: 0
            )
            let name = "GTM-PLIST\(compared).plist"
            let loader = ContainerLoader(options: LoadOptions(recordPositions: true))
            let plist = try loader.readDocument(bytes: [UInt8](xml), file: name)
            #expect(plist.syntax == .xmlPropertyList)
            #expect(plist.value == expected, "\(file)")
            #expect(plist.location(of: "") != nil)
            let fromPlist = try loader.load(bytes: [UInt8](xml), file: name)
            let fromJSON = try loader.load(
                bytes: [UInt8](try JSONSerialization.data(withJSONObject: foundationObject(expected))),
                file: name
            )
            #expect(fromPlist.counts == fromJSON.counts, "\(file)")
            compared += 1
        }
        #expect(compared == 19)
    }

    @Test func webOnlyPartsAreReportedAsUnsupported() async throws {
        let path = try #require(TestContainers.corpusFile("resource/wubinyanjiao__yii2Cloud__gtm.js.data.json"))
        let container = try await ContainerLoader().load(path: path)
        #expect(container.unsupported.contains { $0.message.contains("'__ua'") })
        #expect(container.unsupported.allSatisfy { $0.code == .unsupportedFeature })
    }

    @Test func brazeSampleFiresItsLogEventTagWithTypedArguments() async throws {
        let path = try #require(TestContainers.corpusFile("v5-mobile/Appboy__appboy-android-sdk__GTM-5HM9ZRX.json"))
        let container = try await ContainerLoader().load(path: path)
        #expect(container.id == "GTM-5HM9ZRX")
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let recorder = RecordingHandler()
        manager.register(tagHandler: recorder, for: "com.appboy.googletagmanager.BrazeGtmTagProvider")
        await manager.makeDataLayer().push(
            event: "logEvent",
            parameters: [
                "eventName": "played song", "boolParam": true, "doubleParam": 2.5, "intParam": 3, "stringParam": "s",
            ]
        )
        #expect(
            recorder.calls.first?.arguments
                == [
                    "eventName": "played song", "boolParam": true, "doubleParam": 2.5, "intParam": 3,
                    "stringParam": "s", "actionType": "logEvent",
                ]
        )
    }

    @Test func cargoContainerRoutesEventsToItsHandlerMethods() async throws {
        let path = try #require(TestContainers.corpusFile("v5-mobile/fifty-five__Cargo-android__GTM-NFJ2XRG.json"))
        let container = try await ContainerLoader().load(path: path)
        #expect(container.counts.tags == 25)
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let recorder = RecordingHandler()
        manager.register(tagHandler: recorder, for: "com.fiftyfive.cargo.Tags")
        let layer = manager.makeDataLayer()
        for event in ["applicationStart", "screen_view", "purchase", "login", "sign_up"] {
            await layer.push(event: event)
        }
        #expect(!recorder.calls.isEmpty)
        #expect(recorder.calls.allSatisfy { $0.arguments["handlerMethod"] != nil })
    }
}
