import ContainerKit
import ContainerKitBraze
public import ContainerKitDelivery
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
public import Testing

@Suite struct AnalyticsRecordTests {
    /// A session of `user` over the music fixture container, whose Braze tags write to `sink`.
    static func musicSession(sink: any AnalyticsSink, user: String) async throws -> DataLayer {
        let manager = TagManager(logger: InMemoryLogger())
        BrazeTagProvider(sink: sink).register(on: manager)
        manager.add(
            try await ContainerLoader().load(
                path: Fixtures.packageRoot.appendingPathComponent("Containers/GTM-MUSIC01.json").path
            )
        )
        let session = manager.makeDataLayer()
        BrazeTagProvider.setUser(.externalID(user), on: session)
        return session
    }

    @Test func aPushAnswerWrittenToBytesMatchesItsJSONValue() async throws {
        let session = try await Self.musicSession(sink: InMemoryAnalyticsSink(), user: "ada \"l\"")
        let result = await session.push(
            event: "played song",
            parameters: ["title": "So \"What\"\n", "genre": "jazz", "duration": 545]
        )
        var bytes: [UInt8] = []
        result.appendJSON(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == JSONWriter.string(result.jsonValue))
        #expect(!result.fired.isEmpty)
    }

    @Test func aPushAnswerReusesTheBytesTheSinkStoredForEachRecord() async throws {
        // Each record is encoded once, by the provider: the sink stores those bytes and the answer copies them.
        final class KeepingSink: AnalyticsSink {
            let kept = Mutex<[EncodedRecords]>([])
            func enqueue(_ records: [AnalyticsRecord]) throws(AnalyticsSinkError) -> DurabilityToken? {
                Issue.record("the provider handed over records to encode again")
                return nil
            }
            func enqueue(_ encoded: EncodedRecords) throws(AnalyticsSinkError) -> DurabilityToken? {
                kept.withLock { $0.append(encoded) }
                return nil
            }
        }
        let sink = KeepingSink()
        let session = try await Self.musicSession(sink: sink, user: "u-1")
        let result = await session.push(
            event: "played song",
            parameters: ["title": "So What", "genre": "jazz", "duration": 545]
        )
        let tag = try #require(result.fired.first { $0.output?.records.isEmpty == false })
        let output = try #require(tag.output)
        let json = try #require(output.recordsJSON)
        let stored = try #require(sink.kept.withLock { $0.first })
        // The very buffer the sink stored, not a second encoding.
        #expect(
            json.bytes.withUnsafeBufferPointer { $0.baseAddress }
                == stored.bytes.withUnsafeBufferPointer { $0.baseAddress }
        )
        #expect(json.count == output.records.count)
        for index in 0..<json.count {
            #expect(Array(json[index]) == Array(stored.json(at: index)))
            #expect(
                String(decoding: json[index], as: UTF8.self) == (output.records[index] as? AnalyticsRecord)?.jsonLine
            )
        }
        // The answer copies the stored bytes: a tag whose stored JSON reads otherwise is answered with it.
        let marker = Array(#"{"stored":1}"#.utf8)
        var replaced = tag
        replaced.output = TagOutput(
            records: output.records,
            recordsJSON: RecordsJSON(
                bytes: marker,
                ranges: Array(repeating: 0..<marker.count, count: output.records.count)
            )
        )
        var bytes: [UInt8] = []
        replaced.appendJSON(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""records":[{"stored":1}"#))
    }

    @Test func aPushAnswerListsTheRecordsOfEveryTagInOrder() async throws {
        // Two Braze tags on one event: the push's own list is copied from the tags' encodings, in order.
        let classPath = "com.appboy.googletagmanager.BrazeGtmTagProvider"
        let json = """
            {"resource": {"version": "1", "macros": [{"function": "__e"}],
              "tags": [
                {"function": "__funct", "tag_id": 1, "vtp_classPath": "\(classPath)", "vtp_functionArgument":
                  ["list", ["map", "key", "actionType", "value", "logEvent"], ["map", "key", "eventName", "value", "a"]]},
                {"function": "__funct", "tag_id": 2, "vtp_classPath": "\(classPath)", "vtp_functionArgument":
                  ["list", ["map", "key", "actionType", "value", "logEvent"], ["map", "key", "eventName", "value", "b"]]}],
              "predicates": [{"function": "_eq", "arg0": ["macro", 0], "arg1": "go"}],
              "rules": [[["if", 0], ["add", 0, 1]]]}}
            """
        let manager = TagManager(logger: InMemoryLogger())
        BrazeTagProvider(sink: InMemoryAnalyticsSink()).register(on: manager)
        manager.add(try ContainerLoader().load(bytes: Array(json.utf8), file: "GTM-TWO.json"))
        let session = manager.makeDataLayer()
        BrazeTagProvider.setUser(.externalID("u"), on: session)
        let result = await session.push(event: "go", parameters: [:])
        #expect(result.fired.compactMap { $0.output?.records.count } == [1, 1])
        var bytes: [UInt8] = []
        result.appendJSON(to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == JSONWriter.string(result.jsonValue))
        guard case .object(let answer) = try Value(jsonBytes: bytes), case .array(let records)? = answer["records"]
        else {
            Issue.record("the answer has no records")
            return
        }
        #expect(records.compactMap { $0.objectValue?["name"]?.stringValue } == ["a", "b"])
    }

    static let time = ISO8601Timestamp.date(from: "2024-05-01T12:00:00.250Z")!

    static let samples: [AnalyticsRecord] = [
        AnalyticsRecord(
            id: "r1",
            time: time,
            user: .externalID("u1"),
            payload: .customEvent(
                name: "played",
                properties: ["genre": "jazz", "plays": 3, "rating": 4.0, "tags": ["a"], "x": ["k": true]]
            )
        ),
        AnalyticsRecord(
            id: "r2",
            time: time,
            user: .brazeID("b1"),
            payload: .customAttribute(key: "level", operation: .set(.int(7)))
        ),
        AnalyticsRecord(
            id: "r3",
            time: time,
            user: .userAlias(name: "c-1", label: "cookie"),
            payload: .customAttribute(
                key: "since",
                operation: .set(.date(ISO8601Timestamp.date(from: "2023-02-03T04:05:06.007Z")!))
            )
        ),
        AnalyticsRecord(
            id: "r4",
            time: time,
            user: nil,
            payload: .customAttribute(key: "logins", operation: .increment(2))
        ),
        AnalyticsRecord(
            id: "r5",
            time: time,
            user: .externalID("u1"),
            payload: .customAttribute(key: "g", operation: .addToArray(["a", "b"]))
        ),
        AnalyticsRecord(
            id: "r6",
            time: time,
            user: .externalID("u1"),
            payload: .customAttribute(key: "g", operation: .removeFromArray(["a"]))
        ),
        AnalyticsRecord(
            id: "r7",
            time: time,
            user: .externalID("u1"),
            payload: .customAttribute(key: "g", operation: .set(.strings(["x"])))
        ),
        AnalyticsRecord(
            id: "r8",
            time: time,
            user: .externalID("u1"),
            payload: .customAttribute(key: "gone", operation: .set(.null))
        ),
        AnalyticsRecord(
            id: "r9",
            time: time,
            user: .externalID("u1"),
            payload: .purchase(
                productID: "sku",
                currency: "USD",
                price: 10,
                quantity: 2,
                properties: ["coupon": "A\"B\n"]
            )
        ),
        AnalyticsRecord(
            id: "r10",
            time: time,
            user: .externalID("u1"),
            payload: .userAttribute(.email, value: "a@b.co")
        ),
        AnalyticsRecord(
            id: "r11",
            time: time,
            user: nil,
            payload: .changeUser(externalID: "u2", previousUser: .brazeID("b1"))
        ),
        AnalyticsRecord(id: "r12", time: time, user: nil, payload: .changeUser(externalID: "u3", previousUser: nil)),
    ]

    @Test func jsonLineHasTheDocumentedShape() {
        let head = #""id":"%@","time":"2024-05-01T12:00:00.250Z""#
        func line(_ type: String, _ id: String, _ rest: String) -> String {
            #"{"type":""# + type + #"","# + head.replacingOccurrences(of: "%@", with: id) + rest + "}"
        }
        let expected: [Int: String] = [
            0: line(
                "custom_event",
                "r1",
                #","external_id":"u1","name":"played","#
                    + #""properties":{"genre":"jazz","plays":3,"rating":4.0,"tags":["a"],"x":{"k":true}}"#
            ),
            2: line(
                "custom_attribute",
                "r3",
                #","user_alias":{"alias_name":"c-1","alias_label":"cookie"},"#
                    + #""key":"since","value":"2023-02-03T04:05:06.007Z","value_type":"date""#
            ),
            3: line("custom_attribute", "r4", #","key":"logins","value":{"inc":2}"#),
            8: line(
                "purchase",
                "r9",
                #","external_id":"u1","product_id":"sku","currency":"USD","price":10.0,"quantity":2,"#
                    + #""properties":{"coupon":"A\"B\n"}"#
            ),
            9: line("user_attribute", "r10", #","external_id":"u1","key":"email","value":"a@b.co""#),
            10: line("change_user", "r11", #","external_id":"u2","previous_user":{"braze_id":"b1"}"#),
        ]
        for (index, text) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(Self.samples[index].jsonLine == text)
        }
    }

    @Test(arguments: samples)
    func recordsSurviveTheirJSONLine(record: AnalyticsRecord) throws {
        #expect(try AnalyticsRecord(jsonLine: record.jsonLine) == record)
        #expect(try AnalyticsRecord(jsonValue: record.jsonValue) == record)
    }

    @Test func jsonValueMatchesTheLine() throws {
        let record = Self.samples[0]
        let parsed = try JSONSerialization.jsonObject(with: Data(record.jsonLine.utf8)) as? NSDictionary
        let fromValue =
            try JSONSerialization.jsonObject(with: Data(JSONWriter.string(record.jsonValue).utf8)) as? NSDictionary
        #expect(parsed == fromValue)
    }

    @Test func timesAreKeptToTheMillisecond() {
        let record = AnalyticsRecord(
            time: Date(timeIntervalSince1970: 1.23456789),
            user: nil,
            payload: .changeUser(externalID: "u", previousUser: nil)
        )
        #expect(record.time == Date(timeIntervalSince1970: 1.234))
        #expect(record.user == .externalID("u"))
    }

    func decodingError(_ line: String) -> AnalyticsRecordError? {
        do {
            _ = try AnalyticsRecord(jsonLine: line)
            return nil
        } catch {
            return error
        }
    }

    @Test func unreadableLinesAreErrorsWithCodes() throws {
        #expect(decodingError(#"{"type":"custom_ev"#)?.code == .malformedJSON)
        let unknown = try #require(decodingError(#"{"type":"teleport","id":"x","time":"2024-01-01T00:00:00Z"}"#))
        #expect(unknown.code == .invalidRecord)
        #expect(unknown.message.contains("'teleport'"))
        let badTime = try #require(decodingError(#"{"type":"custom_event","id":"x","time":"noon","name":"n"}"#))
        #expect(badTime.code == .invalidRecord)
        #expect(badTime.message.contains("'noon'"))
    }

    @Test func recordLinesWriteTimesAsTheTimestampFormatterDoes() {
        // Both sides of 1970, leap days, the ends of the four-digit years, then dates spread over them all
        // (a fixed sequence, so a failure repeats).
        var seconds: [Double] = [
            0, -1, -0.001, 951_782_400.5, 951_868_799.999, 253_402_300_799.999, -62_135_596_800, 1_764_115_200.123,
        ]
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<2_000 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let millisecond = Int64(state >> 10) % 315_537_897_600_000 - 62_135_596_800_000
            seconds.append(Double(millisecond) / 1000)
        }
        for second in seconds {
            let date = Date(timeIntervalSince1970: second)
            var writer = JSONByteWriter()
            writer.time(date)
            #expect(writer.text == "\"\(ISO8601Timestamp.string(from: date))\"", "\(second)")
        }
    }

    @Test func isoTimestampsFormatAndParse() {
        #expect(ISO8601Timestamp.string(from: Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00.000Z")
        #expect(ISO8601Timestamp.string(from: Date(timeIntervalSince1970: 951_782_400.5)) == "2000-02-29T00:00:00.500Z")
        #expect(ISO8601Timestamp.string(from: Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59.000Z")
        #expect(ISO8601Timestamp.date(from: "2000-02-29") == Date(timeIntervalSince1970: 951_782_400))
        #expect(ISO8601Timestamp.date(from: "2000-02-29T01:00+01:00") == Date(timeIntervalSince1970: 951_782_400))
        #expect(ISO8601Timestamp.date(from: "2000-02-29T00:00:00.25Z") == Date(timeIntervalSince1970: 951_782_400.25))
        #expect(ISO8601Timestamp.date(from: "2001-02-29") == nil)
        #expect(ISO8601Timestamp.date(from: "2000-02-29T24:00") == nil)
        #expect(ISO8601Timestamp.date(from: "yesterday") == nil)
        #expect(ISO8601Timestamp.date(from: "2000-02-29T00:00:00Zjunk") == nil)
    }
}

extension AnalyticsRecord: CustomTestStringConvertible {
    public var testDescription: String { id }
}
