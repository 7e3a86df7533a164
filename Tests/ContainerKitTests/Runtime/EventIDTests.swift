import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import Testing

@testable import ContainerKit

/// Event IDs: a push carrying an ID its session has seen is not applied again, and says what the original did;
/// the seen IDs are bounded by time and count, part of the session's state, and validated.
struct EventIDTests {
    /// A record with an ID, as a handler with stable record IDs makes them.
    struct NumberedRecord: TagRecord {
        let id: String
        var jsonValue: Value { ["id": .string(id)] }
        var recordID: String? { id }
    }

    /// Makes one record per call, numbered from 1, and counts its calls.
    final class RecordingTag: FunctionCallTagHandler {
        let calls = Atomic<Int>(0)
        func execute(_ call: FunctionCall) throws {}
        func perform(_ call: FunctionCall) throws -> TagOutput {
            let n = calls.add(1, ordering: .relaxed).newValue
            return TagOutput(records: [NumberedRecord(id: "r-\(n)")])
        }
        var count: Int { calls.load(ordering: .relaxed) }
    }

    /// A wall clock a test moves by hand (milliseconds since 1970).
    final class WallClock: Sendable {
        let milliseconds = Atomic<Int64>(1_700_000_000_000)
        func advance(by duration: Duration) {
            milliseconds.add(duration.components.seconds * 1000, ordering: .relaxed)
        }
    }

    /// A runtime with one tag (`tag_id` 7, class path `record`) that fires on `purchase`, and the handler.
    static func manager(
        window: Duration = .seconds(86_400),
        count: Int = 1000,
        clock: WallClock = WallClock()
    ) throws -> (TagManager, RecordingTag) {
        let manager = TagManager(
            logger: InMemoryLogger(),
            eventIDs: EventIDWindow(duration: window, maximumCount: count) {
                clock.milliseconds.load(ordering: .relaxed)
            }
        )
        manager.add(
            try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: #"[{"function": "__funct", "tag_id": 7, "vtp_classPath": "record"}]"#,
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "purchase"}]"#,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
        )
        let handler = RecordingTag()
        manager.register(tagHandler: handler, for: "record")
        return (manager, handler)
    }

    @Test func aSecondPushWithTheSameIDIsNotApplied() async throws {
        let (manager, handler) = try Self.manager()
        let session = manager.makeDataLayer(sessionID: "u")
        let first = await session.push(event: "purchase", parameters: ["value": 9.99], eventID: "m-1")
        #expect(!first.isDuplicate && first.fired.map(\.tagID) == [7])
        let before = session.snapshot()

        let retry = await session.push(event: "purchase", parameters: ["value": 1.0, "extra": true], eventID: "m-1")
        #expect(retry.isDuplicate)
        #expect(retry.fired.isEmpty && retry.outputs.isEmpty, "nothing fired again")
        #expect(handler.count == 1, "the handler ran once")
        #expect(session.snapshot() == before, "model, counter and seen ids unchanged")
        #expect(session.get("value") == 9.99 && session.get("extra") == .undefined)
    }

    @Test func aDuplicateNamesTheOriginalsFiredTagsAndRecords() async throws {
        let clock = WallClock()
        let (manager, _) = try Self.manager(clock: clock)
        let session = manager.makeDataLayer(sessionID: "u")
        await session.push(event: "purchase", eventID: "m-1")
        clock.advance(by: .seconds(5))
        let retry = await session.push(event: "purchase", eventID: "m-1")
        let original = try #require(retry.duplicateOf)
        #expect(original.id == "m-1")
        #expect(original.time == clock.milliseconds.load(ordering: .relaxed) - 5000, "when the original was applied")
        #expect(original.fired == [SeenEventID.Tag(index: 0, tagID: 7, status: "ok", recordIDs: ["r-1"])])

        var bytes: [UInt8] = []
        retry.appendJSONMembers(to: &bytes)
        bytes.append(0x7D)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(
            text
                == #"{"fired":[{"tag":0,"tag_id":7,"status":"ok","record_ids":["r-1"]}],"records":[],"duplicate":true,"original_time":"#
                + "\(original.time)}"
        )
        #expect(try Value(json: text) == retry.jsonValue)
    }

    @Test func aPushWithoutAnIDIsAlwaysApplied() async throws {
        let (manager, handler) = try Self.manager()
        let session = manager.makeDataLayer(sessionID: "u")
        await session.push(event: "purchase")
        let again = await session.push(event: "purchase")
        #expect(!again.isDuplicate && handler.count == 2)
        #expect(session.seenEventIDs.isEmpty)
        #expect(!session.snapshot().jsonText.contains("event_ids"), "a session without ids stores none")
    }

    @Test func idsAreComparedAsBytes() async throws {
        let (manager, handler) = try Self.manager()
        let session = manager.makeDataLayer(sessionID: "u")
        await session.push(event: "purchase", eventID: "caf\u{E9}")
        let other = await session.push(event: "purchase", eventID: "cafe\u{301}")
        #expect(!other.isDuplicate && handler.count == 2)
    }

    @Test func anIDOlderThanTheWindowIsForgottenAndItsRetryApplied() async throws {
        let clock = WallClock()
        let (manager, handler) = try Self.manager(window: .seconds(60), clock: clock)
        let session = manager.makeDataLayer(sessionID: "u")
        await session.push(event: "purchase", eventID: "m-1")
        clock.advance(by: .seconds(59))
        #expect(await session.push(event: "purchase", eventID: "m-1").isDuplicate)
        clock.advance(by: .seconds(2))
        let late = await session.push(event: "purchase", eventID: "m-1")
        #expect(!late.isDuplicate && handler.count == 2)
        #expect(session.seenEventIDs.map(\.time) == [clock.milliseconds.load(ordering: .relaxed)])
    }

    @Test func theOldestIDsGoFirstAndASessionNeverHoldsMoreThanTheCount() async throws {
        let (manager, _) = try Self.manager(count: 50)
        let session = manager.makeDataLayer(sessionID: "u")
        for n in 0..<500 {
            await session.push(event: "purchase", eventID: "m-\(n)")
            #expect(session.seenEventIDs.count == min(n + 1, 50))
        }
        #expect(session.seenEventIDs.map(\.id) == (450..<500).map { "m-\($0)" })
        #expect(await session.push(event: "purchase", eventID: "m-499").isDuplicate)
        #expect(await session.push(event: "purchase", eventID: "m-450").isDuplicate)
        #expect(!(await session.push(event: "purchase", eventID: "m-449").isDuplicate), "forgotten: applied again")
        #expect(session.seenEventIDs.first?.id == "m-451", "which forgot the oldest")
    }

    /// Many IDs pushed, forgotten and looked up in a shuffled order, each with what its push fired (up to six tags,
    /// some that pack into words and some that do not): the table answers exactly what a plain list of the newest
    /// IDs answers (its probes and the deletions that move entries up their clusters stay consistent through
    /// growth and wrapping, and the bucket a probe ended at stays right when forgetting moved entries), and keeps
    /// each ID's tags. Crowded: the IDs' hashes start at five buckets only, so that every probe and deletion walks a
    /// long cluster and forgetting the oldest often empties a bucket on the new ID's probe path.
    @Test(arguments: [false, true])
    func theTableAgreesWithAListThroughGrowthAndPruning(crowded: Bool) {
        var generator = SystemRandomNumberGenerator()
        let table = SeenEventIDs()
        var reference: [SeenEventID] = []
        let window = EventIDWindow(duration: .seconds(1_000_000), maximumCount: 300)
        func fired(_ n: UInt32) -> [SeenEventID.Tag] {
            (0..<Int(n % 7)).map { index in
                n % 11 == 0 && index == 2
                    ? SeenEventID.Tag(index: index, status: "dropped", message: "no user")
                    : SeenEventID.Tag(index: index + Int(n), tagID: index % 2 == 0 ? Int(n) : nil, status: "ok")
            }
        }
        for step in 0..<5000 {
            let n = UInt32.random(in: 0..<2000, using: &generator)
            // Short IDs sit in their slots, long ones (over 48 bytes) beside them.
            let id = n % 3 == 0 ? "a-long-message-id-of-more-than-forty-eight-bytes-\(n)" : "id-\(n)"
            let hash = crowded ? UInt64(n % 5) << 32 | UInt64(n) : SeenEventIDs.hash(id, seed: 7)
            // Every other step only looks up (as a push that may be refused for its size does), and remembers
            // with a second call.
            let looksFirst = step % 2 == 1
            var admission = table.admit(
                id,
                hash: hash,
                now: Int64(step),
                window: window.milliseconds,
                maximumCount: window.maximumCount,
                remembers: !looksFirst
            )
            let seen = admission.found >= 0
            if seen {
                #expect(table.entry(at: admission.found).event.fired == fired(n), "step \(step): \(id)")
            }
            #expect(seen == reference.contains { $0.id == id }, "step \(step): \(id)")
            if !seen {
                if looksFirst {
                    #expect(admission.sequence == -1 && admission.forgotten == 0)
                    admission = table.admit(
                        id,
                        hash: hash,
                        now: Int64(step),
                        window: window.milliseconds,
                        maximumCount: window.maximumCount,
                        remembers: true
                    )
                }
                reference.removeFirst(admission.forgotten)
                table.setFired(fired(n), of: admission.sequence)
                reference.append(SeenEventID(id: id, time: Int64(step), fired: fired(n)))
            }
            #expect(table.count == reference.count && table.count <= 300)
        }
        #expect(table.events == reference)
        #expect(SeenEventIDs(reference, seed: 7).events == reference, "and a set restored from them")
    }

    @Test(arguments: [
        ("", "must not be empty"), (String(repeating: "x", count: 257), "the most is 256"),
        (String(repeating: "é", count: 129), "the most is 256"), ("a\u{0}b", "NUL"),
    ])
    func anInvalidIDRefusesThePush(id: String, message: String) async throws {
        let (manager, handler) = try Self.manager()
        let session = manager.makeDataLayer(sessionID: "u")
        let result = await session.push(event: "purchase", parameters: ["a": 1], eventID: id)
        let refusal = try #require(result.refusal)
        #expect(refusal.code == .invalidEventID && refusal.code.rawValue == "invalid_event_id")
        #expect(refusal.message.contains(message))
        #expect(handler.count == 0 && session.get("a") == .undefined)
        #expect(session.snapshot().eventNumber == 0)
    }

    @Test func aNULAnywhereInAnIDOfAnyLengthIsFoundAndAValidIDHashesAsItsStoredCopyDoes() {
        // The check reads 16 bytes a step and the bytes after the last whole step as the last 16 (8 or 4 for short
        // IDs, the first, middle and last byte for the shortest): every length up to a few steps, a NUL at every
        // position (and bytes of 0x01 and 0x80 around it, which a word-at-a-time zero test must not mistake for
        // one).
        for length in 1...72 {
            var letters: [UInt8] = []
            for index in 0..<length {
                let letter = UInt8(0x41 + index % 26)
                letters.append(index % 7 == 0 ? letter | 0x01 : letter)
            }
            let valid = String(decoding: letters, as: UTF8.self)
            #expect(DataLayer.checkedHash(of: valid, seed: 7) == SeenEventIDs.hash(valid, seed: 7), "length \(length)")
            #expect(DataLayer.isValid(eventID: valid))
            for position in 0..<length {
                var bytes = Array(valid.utf8)
                bytes[position] = 0
                if position + 1 < length { bytes[position + 1] = 0x01 }
                let invalid = String(decoding: bytes, as: UTF8.self)
                #expect(DataLayer.checkedHash(of: invalid, seed: 7) == nil, "length \(length), NUL at \(position)")
            }
        }
        #expect(DataLayer.checkedHash(of: nil, seed: 7) == 0)
        #expect(DataLayer.checkedHash(of: "é\u{80}ü", seed: 7) == SeenEventIDs.hash("é\u{80}ü", seed: 7))
    }

    @Test func everyByteOfAnIDChangesItsHash() {
        // Each step and each tail path of the hash reads every byte: changing any one byte of an ID of any length
        // up to a few steps changes the hash (a byte a path skipped would not), with either seed.
        for seed: UInt64 in [7, 0x9E37_79B9_7F4A_7C15] {
            for length in 1...72 {
                let bytes = (0..<length).map { UInt8(0x30 + $0 % 40) }
                let hash = SeenEventIDs.hash(String(decoding: bytes, as: UTF8.self), seed: seed)
                for position in 0..<length {
                    var changed = bytes
                    changed[position] ^= 0x03
                    let other = SeenEventIDs.hash(String(decoding: changed, as: UTF8.self), seed: seed)
                    #expect(other != hash, "length \(length), byte \(position)")
                }
            }
        }
        // The same ID under two seeds hashes differently (the seed is drawn per runtime).
        #expect(
            SeenEventIDs.hash("5f0c2d1e-7a4b-4c3d-9e8f-000000000001", seed: 7)
                != SeenEventIDs.hash("5f0c2d1e-7a4b-4c3d-9e8f-000000000001", seed: 8)
        )
    }

    @Test func anIDOf256BytesIsAccepted() async throws {
        let (manager, _) = try Self.manager()
        let session = manager.makeDataLayer(sessionID: "u")
        let id = String(repeating: "é", count: 128)
        #expect(await session.push(event: "purchase", eventID: id).refusal == nil)
        #expect(await session.push(event: "purchase", eventID: id).isDuplicate)
    }

    // MARK: State

    @Test func seenIDsSurviveASnapshotAndRestore() async throws {
        let (manager, handler) = try Self.manager()
        let session = manager.makeDataLayer(sessionID: "u")
        for n in 1...3 { await session.push(event: "purchase", eventID: "m-\(n)") }
        let text = session.snapshot().jsonText
        #expect(text.contains(#""event_ids":[{"id":"m-1","time":"#))
        let restored = manager.restoreDataLayer(from: try SessionSnapshot(jsonText: text))
        #expect(restored.snapshot() == session.snapshot())
        let retry = await restored.push(event: "purchase", eventID: "m-2")
        #expect(retry.duplicateOf?.fired.first?.recordIDs == ["r-2"])
        #expect(handler.count == 3)
    }

    @Test func aSnapshotWithoutEventIDsStillReads() throws {
        let old =
            #"{"format":1,"session_id":"u","model":{},"raw_values":{},"user_properties":{},"attributes":{},"#
            + #""fired_once_per_load":[],"event_number":2,"context":{}}"#
        let snapshot = try SessionSnapshot(jsonText: old)
        #expect(snapshot.eventIDs.isEmpty && snapshot.eventNumber == 2)
        #expect(!snapshot.jsonText.contains("event_ids"), "and writes none")
    }

    @Test(arguments: [
        #""event_ids":7"#, #""event_ids":[{"time":1}]"#, #""event_ids":[{"id":"m","time":"1"}]"#,
        #""event_ids":[{"id":"m","time":1,"fired":[{"status":"ok"}]}]"#,
    ])
    func aMalformedEventIDListIsRefused(member: String) {
        let text =
            #"{"format":1,"session_id":"u","model":{},"raw_values":{},"user_properties":{},"attributes":{},"#
            + #""fired_once_per_load":[],"event_number":2,"context":{},"# + member + "}"
        #expect(throws: ContainerError.self) { try SessionSnapshot(jsonText: text) }
    }

    @Test func theJSONWritersAgreeWithTheJSONValues() throws {
        let seen = SeenEventID(
            id: "m-\"1\"",
            time: 1_700_000_000_123,
            fired: [
                SeenEventID.Tag(index: 0, tagID: 7, status: "ok", recordIDs: ["r-1", "r-2"]),
                SeenEventID.Tag(index: 3, status: "dropped", message: "no user"),
            ]
        )
        let snapshot = SessionSnapshot(sessionID: "u", eventNumber: 1, eventIDs: [seen])
        #expect(try Value(json: snapshot.jsonText) == snapshot.jsonValue)
        #expect(try SessionSnapshot(jsonText: snapshot.jsonText) == snapshot)
        let delta = SessionDelta(sessionID: "u", eventNumber: 1, eventIDs: [seen], prunedEventIDs: 2)
        #expect(try SessionDelta(jsonText: delta.jsonText) == delta)
    }

    /// A delta carries the IDs its pushes added and how many of the oldest went, never the whole list.
    @Test func aDeltaCarriesOnlyTheNewIDs() async throws {
        let (manager, _) = try Self.manager(count: 100)
        let session = manager.makeDataLayer(
            context: nil,
            sessionID: "u",
            debug: false,
            committing: nil,
            keepsChanges: true
        )
        for n in 0..<150 { await session.push(event: "purchase", eventID: "message-\(n)") }
        _ = session.takeDelta()
        await session.push(event: "purchase", eventID: "the-next")
        let delta = try #require(session.takeDelta())
        #expect(delta.eventIDs.map(\.id) == ["the-next"] && delta.prunedEventIDs == 1)
        #expect(delta.jsonText.utf8.count < 300)
        #expect(session.snapshot().jsonText.utf8.count > 8000)
    }

    // MARK: Tags without records (summarised as the push is evaluated)

    /// A runtime whose six tags fire without records: `one` fires tag 0, `four` tags 0–3, `six` all of them (four
    /// handled, `tag_id` 10–13; one without a handler; one of a type ContainerKit does not run); `nest` fires tag
    /// 0, whose handler pushes `four` into the same session.
    static func plainManager() throws -> TagManager {
        let manager = TagManager(logger: InMemoryLogger())
        let handled = (0..<4).map { #"{"function": "__funct", "tag_id": \#(10 + $0), "vtp_classPath": "plain"}"# }
        manager.add(
            try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: "[" + handled.joined(separator: ", ")
                    + #", {"function": "__funct", "vtp_classPath": "nobody"}, {"function": "__html"}]"#,
                predicates: "["
                    + ["one", "four", "six", "nest"].map {
                        #"{"function": "_eq", "arg0": ["macro", 0], "arg1": "\#($0)"}"#
                    }.joined(separator: ", ") + "]",
                rules:
                    #"[[["if", 0], ["add", 0]], [["if", 1], ["add", 0, 1, 2, 3]], [["if", 2], ["add", 0, 1, 2, 3, 4, 5]], [["if", 3], ["add", 0]]]"#
            )
        )
        manager.register(
            tagHandler: ClosureTagHandler { call in
                if call.eventName == "nest" { call.dataLayer.push(event: "four") }
            },
            for: "plain"
        )
        return manager
    }

    @Test(arguments: ["one", "four", "six", "nest"])
    func aDuplicateNamesEveryTagWithoutRecordsTheOriginalFired(event: String) async throws {
        let manager = try Self.plainManager()
        let session = manager.makeDataLayer(sessionID: "u")
        let first = await session.push(event: event, eventID: "m-1")
        let expected = first.fired.map(SeenEventID.Tag.init)
        #expect(expected.count == ["one": 1, "four": 4, "six": 6, "nest": 5][event])
        #expect(Set(expected.map(\.status)) == (event == "six" ? ["ok", "unhandled", "unsupported"] : ["ok"]))
        let retry = await session.push(event: event, eventID: "m-1")
        #expect(retry.duplicateOf?.fired == expected)
        // Remembered as well when a newer ID was remembered after it, and after a snapshot and restore.
        await session.push(event: "one", eventID: "m-2")
        #expect(session.seenEventIDs.map(\.fired) == [expected, [SeenEventID.Tag(index: 0, tagID: 10, status: "ok")]])
        let restored = manager.restoreDataLayer(from: try SessionSnapshot(jsonText: session.snapshot().jsonText))
        #expect(await restored.push(event: event, eventID: "m-1").duplicateOf?.fired == expected)
    }

    @Test func aStoresDuplicateNamesTheTagsWithoutRecordsItsOriginalFired() async throws {
        let manager = try Self.plainManager()
        let store = SessionStore(tagManager: manager, configuration: .init(persistence: InMemorySessionPersistence()))
        let first = try await store.push(event: "four", for: "u", eventID: "m-1")
        let retry = try await store.push(event: "four", for: "u", eventID: "m-1")
        #expect(retry.duplicateOf?.fired == first.fired.map(SeenEventID.Tag.init) && first.fired.count == 4)
    }

    // MARK: Session store

    @Test func theStoreAnswersADuplicateAndDoesNotCommitIt() async throws {
        let (manager, handler) = try Self.manager()
        let log = InMemorySessionPersistence()
        let store = SessionStore(tagManager: manager, configuration: .init(persistence: log))
        let first = try await store.push(event: "purchase", for: "u", eventID: "m-1")
        let retry = try await store.push(event: "purchase", for: "u", eventID: "m-1")
        #expect(!first.isDuplicate && retry.isDuplicate)
        #expect(handler.count == 1)
        let refused = try await store.push(event: "purchase", for: "u", eventID: "")
        #expect(refused.refusal?.code == .invalidEventID)
        #expect(store.count == 1, "the refused push loaded nothing new")
    }

    @Test func aBatchWithOneIDTwiceAppliesItOnce() async throws {
        let (manager, handler) = try Self.manager()
        let store = SessionStore(tagManager: manager)
        let outcomes = await store.push([
            .init(event: "purchase", userID: "u", eventID: "m-1"),
            .init(event: "purchase", userID: "u", eventID: "m-1"),
            .init(event: "purchase", userID: "v", eventID: "m-1"),
            .init(event: "purchase", userID: "u", eventID: String(repeating: "x", count: 300)),
            .init(event: "purchase", userID: "u"),
        ])
        let results = try outcomes.map { try $0.get() }
        #expect(results.map(\.isDuplicate) == [false, true, false, false, false])
        #expect(results[3].refusal?.code == .invalidEventID)
        let original = results[0].fired.first?.output?.records.compactMap(\.recordID)
        #expect(results[1].duplicateOf?.fired.first?.recordIDs == original)
        #expect(handler.count == 3, "u twice (one id, then none), v once")
    }

    /// A durability source whose writes end when the test says, all at once, with or without a failure.
    final class GatedSource: DurabilitySource {
        private let state = Mutex<(open: Bool, failure: DurabilityError?, waiters: [CheckedContinuation<Void, Never>])>(
            (false, nil, [])
        )

        func waitUntilDurable(ticket: UInt64) async throws(DurabilityError) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let open = state.withLock { state in
                    if !state.open { state.waiters.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
            if let failure = state.withLock({ $0.failure }) { throw failure }
        }

        func open(failing failure: DurabilityError? = nil) {
            let waiters = state.withLock { state in
                state.open = true
                state.failure = failure
                defer { state.waiters = [] }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Commits each push as one write of `source`.
    final class GatedCommitter: PushCommitter {
        let source: GatedSource
        let tickets = Atomic<UInt64>(0)
        init(source: GatedSource) { self.source = source }
        var keepsSessions: Bool { false }
        func commit(_ result: PushResult, checkpoint: SessionCheckpoint?) -> Result<DurabilityToken?, DurabilityError> {
            .success(DurabilityToken(source: source, ticket: tickets.add(1, ordering: .relaxed).newValue))
        }
    }

    @Test(arguments: [false, true])
    func aDuplicateOfAPushInFlightWaitsForItsCommit(failing: Bool) async throws {
        let (manager, handler) = try Self.manager()
        let source = GatedSource()
        let store = SessionStore(tagManager: manager, configuration: .init(committer: GatedCommitter(source: source)))
        let first = try await store.push(event: "purchase", for: "u", eventID: "m-1", waitsForDurability: false)
        let answered = Atomic<Bool>(false)
        let retry = Task {
            defer { answered.store(true, ordering: .relaxed) }
            return try await store.push(event: "purchase", for: "u", eventID: "m-1")
        }
        try await Task.sleep(for: .milliseconds(50))
        let answeredEarly = answered.load(ordering: .relaxed)
        #expect(!answeredEarly, "the duplicate waits for the original's commit")
        source.open(failing: failing ? ContainerError(.diskFull, "no space") : nil)
        if failing {
            await #expect(throws: SessionStore.PushError.self) { try await retry.value }
            await #expect(throws: DurabilityError.self) { try await first.waitUntilDurable() }
        } else {
            #expect(try await retry.value.isDuplicate)
        }
        #expect(handler.count == 1)
    }
}
