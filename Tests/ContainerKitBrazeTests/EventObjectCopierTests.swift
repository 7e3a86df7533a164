import ContainerKit
import Foundation
import Testing

@testable import ContainerKitBraze
@testable import ContainerKitDelivery

/// The Braze batcher copies a custom event's object out of the record's JSON line (encoded once, when it was
/// enqueued) instead of encoding the record again: the request bodies must be the same bytes either way.
@Suite struct EventObjectCopierTests {
    static let users: [UserIdentity?] = [
        .externalID("u-1"), .brazeID("device \"quoted\" \\ back"),
        .userAlias(name: "a\u{1F600}", label: "l,\"name\":x"),
        .externalID("caf\u{e9}\n\t"), nil,
    ]

    static func records() -> [AnalyticsRecord] {
        var records: [AnalyticsRecord] = []
        let time = Date(timeIntervalSince1970: 1_764_000_000.123)
        let properties: [ValueMap] = [
            [:], ["title": "Track \"1\"", "rating": 4.5, "count": .int(3), "liked": true],
            ["nested": .object(["name": "inner", "list": .array([1, "two", .null])])], ["undefined": .undefined],
            ["name": ",\"name\":", "properties": "{}"],
        ]
        for (u, user) in users.enumerated() {
            for (p, map) in properties.enumerated() {
                records.append(
                    AnalyticsRecord(
                        id: "r-\(u)-\(p)\\\"",
                        time: time,
                        user: user,
                        payload: .customEvent(name: "played \"song\" \(p)", properties: map)
                    )
                )
            }
            records.append(
                AnalyticsRecord(
                    time: time,
                    user: user,
                    payload: .purchase(productID: "sku", currency: "USD", price: 1.5, quantity: 2, properties: [:])
                )
            )
            records.append(AnalyticsRecord(time: time, user: user, payload: .userAttribute(.firstName, value: "Ann")))
        }
        return records
    }

    @Test(arguments: [true, false])
    func eventObjectsCopiedFromTheRecordLinesAreTheEncodedBytes(createsAliasOnlyProfiles: Bool) throws {
        let records = Self.records()
        let encoded = EncodedRecords(records)
        for limit in [BrazeUsersTrackDestination.ObjectLimit.total(7), .perCategory(3)] {
            let batcher = BrazeUsersTrackBatcher(limit: limit, createsAliasOnlyProfiles: createsAliasOnlyProfiles)
            let copied = batcher.requests(for: records, json: encoded.recordsJSON)
            let written = batcher.requests(for: records)
            #expect(
                copied.requests.map { String(decoding: $0.body, as: UTF8.self) }
                    == written.requests.map { String(decoding: $0.body, as: UTF8.self) }
            )
            #expect(copied.skipped.map(\.id) == written.skipped.map(\.id))
        }
        // Every custom event with a user was copied, not encoded.
        for (index, record) in records.enumerated() {
            guard case .customEvent = record.payload, record.user != nil else { continue }
            let parts = encoded.recordsJSON[index].withUnsafeBufferPointer { EventObjectCopier.parts(of: $0) }
            #expect(parts != nil, "\(record.jsonLine)")
        }
    }

    @Test func aLineNotInTheExpectedShapeIsEncodedInstead() {
        let record = event("played", user: .externalID("u-1"), ["genre": "jazz"])
        let batcher = BrazeUsersTrackBatcher(limit: .total(75), createsAliasOnlyProfiles: true)
        let line = Array(#"{"type":"custom_event","id":"x","time":"2026-01-01T00:00:00.000Z","name":"other"}"#.utf8)
        let foreign = RecordsJSON(bytes: line, ranges: [0..<line.count])
        #expect(
            batcher.requests(for: [record], json: foreign).requests.map(\.body)
                == batcher.requests(for: [record]).requests.map(\.body)
        )
        #expect(line.withUnsafeBufferPointer { EventObjectCopier.parts(of: $0) } == nil)
    }
}
