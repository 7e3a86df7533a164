import ContainerKit
import ContainerKitTesting
import Foundation
import Testing

/// The trace a push records when asked (``PushTrace``): each outcome a tag can have, what the push changed and
/// produced, and that a push not asked for one records nothing.
@Suite struct PushTraceTests {
    /// A record a test handler makes.
    struct Record: TagRecord {
        var jsonValue: Value
        var recordID: String? { jsonValue.objectValue?["id"]?.stringValue }
    }

    /// Makes one record per call (`id` = the `id` argument); holds it instead when the argument `held` is true.
    struct RecordMaker: FunctionCallTagHandler {
        let durability: DurabilityToken?
        init(durability: DurabilityToken? = nil) { self.durability = durability }
        func execute(_ call: FunctionCall) throws { _ = try perform(call) }
        func perform(_ call: FunctionCall) throws -> TagOutput {
            let record = Record(jsonValue: ["id": call.arguments["id"] ?? .null, "type": "call"])
            if call.arguments["held"] == true {
                return TagOutput(pendingReason: "no user yet", pendingRecords: [record])
            }
            return TagOutput(records: [record], durability: durability)
        }
    }

    /// A source whose tickets are durable once the test says so (never here: the trace only reads the token).
    final class StillWriting: DurabilitySource {
        func waitUntilDurable(ticket: UInt64) async throws(DurabilityError) {}
    }

    /// Tags (by index): 0 fires on `e` with arguments; 1 is added on `e` when `{{Genre}}` equals `jazz`;
    /// 2 is added on `e` but blocked when `{{Genre}}` equals `rock`; 3 is paused; 4 is a custom HTML tag on `e`;
    /// 5 fires once per load on `e`; 6 is added on `e` unless `{{Genre}}` equals `rock`; 7 is added on `e` when
    /// `{{Missing}}` (never pushed) equals `x`.
    static func container() throws -> Container {
        try TestContainers.resource(
            macros: """
                [{"function": "__e", "instance_name": "Event Name"},
                 {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "genre", "instance_name": "Genre"},
                 {"function": "__md", "vtp_eventType": "CUSTOM", "vtp_key": "held", "instance_name": "Held"},
                 {"function": "__v", "vtp_name": "missing", "vtp_dataLayerVersion": 2, "instance_name": "Missing"}]
                """,
            tags: """
                [{"function": "__funct", "tag_id": 10, "instance_name": "Make", "vtp_classPath": "make",
                  "vtp_functionArgument": ["list", ["map", "key", "id", "value", "r-1"],
                                                   ["map", "key", "genre", "value", ["macro", 1]],
                                                   ["map", "key", "held", "value", ["macro", 2]]]},
                 {"function": "__funct", "tag_id": 11, "instance_name": "Jazz only", "vtp_classPath": "make"},
                 {"function": "__funct", "tag_id": 12, "instance_name": "Blocked on rock", "vtp_classPath": "make"},
                 {"function": "__paused", "tag_id": 13, "instance_name": "Paused"},
                 {"function": "__html", "tag_id": 14, "instance_name": "Pixel", "vtp_html": "<img>"},
                 {"function": "__funct", "tag_id": 15, "instance_name": "Once", "vtp_classPath": "other",
                  "once_per_load": true},
                 {"function": "__funct", "tag_id": 16, "instance_name": "Unless rock", "vtp_classPath": "other"},
                 {"function": "__funct", "tag_id": 17, "instance_name": "Needs missing", "vtp_classPath": "other"}]
                """,
            predicates: """
                [{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"},
                 {"function": "_eq", "arg0": ["macro", 1], "arg1": "jazz"},
                 {"function": "_eq", "arg0": ["macro", 1], "arg1": "rock"},
                 {"function": "_eq", "arg0": ["macro", 3], "arg1": "x"}]
                """,
            rules: """
                [[["if", 0], ["add", 0, 2, 4, 5, 3]],
                 [["if", 0, 1], ["add", 1]],
                 [["if", 0, 2], ["block", 2]],
                 [["if", 0], ["unless", 2], ["add", 6]],
                 [["if", 0, 3], ["add", 7]]]
                """
        )
    }

    static func session(durability: DurabilityToken? = nil) throws -> DataLayer {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try container())
        manager.register(tagHandler: RecordMaker(durability: durability), for: "make")
        manager.register(tagHandler: RecordMaker(), for: "other")
        return manager.makeDataLayer(sessionID: "s-1")
    }

    @Test func aPushNotAskedForATraceRecordsNone() throws {
        let session = try Self.session()
        #expect(session.push(event: "e", parameters: ["genre": "rock"]).trace == nil)
        #expect(session.push(["genre": "jazz"]).trace == nil)
        #expect(session.push(event: "e", parameters: ["genre": "rock"], eventID: "m-1").trace == nil)
        #expect(session.push(event: "e", parameters: ["genre": "rock"], tracing: false).trace == nil)
    }

    @Test func aFiredTagShowsItsArgumentsAsEvaluatedAndItsStatus() throws {
        let session = try Self.session()
        let trace = try #require(session.push(event: "e", parameters: ["genre": "rock"], tracing: true).trace)
        #expect(trace.outcome == .applied && trace.sessionID == "s-1" && trace.event == "e")
        let tag = try #require(trace.tags.first { $0.tagID == 10 })
        #expect(tag.outcome == .fired)
        #expect(tag.classPath == "make")
        #expect(tag.arguments == .object(["id": "r-1", "genre": "rock"]))
        #expect(tag.status == PushTrace.Status(name: "ok"))
        #expect(tag.reason == nil)
    }

    @Test func aBlockedTagNamesTheBlockingRule() throws {
        let session = try Self.session()
        let trace = try #require(session.push(event: "e", parameters: ["genre": "rock"], tracing: true).trace)
        let tag = try #require(trace.tags.first { $0.tagID == 12 })
        #expect(tag.outcome == .blocked)
        #expect(tag.blockedBy?.map(\.index) == [2] && tag.blockedBy?.first?.name == nil)
        #expect(tag.reason == "blocked by rule 2")
        #expect(tag.arguments == nil && tag.status == nil)
    }

    @Test func aTagNotFiredNamesTheFailedConditionWithBothOperandsAsEvaluated() throws {
        let session = try Self.session()
        let trace = try #require(session.push(event: "e", parameters: ["genre": "rock"], tracing: true).trace)
        let tag = try #require(trace.tags.first { $0.tagID == 11 })
        #expect(tag.outcome == .notFired)
        let condition = try #require(tag.failedConditions?.first)
        #expect(condition.rule.index == 1 && condition.rule.name == nil)
        #expect(condition.predicate == 1 && condition.role == .if && condition.operator == "_eq")
        #expect(condition.variable == "{{Genre}}")
        #expect(condition.left == "rock" && condition.right == "jazz")
        #expect(tag.reason == #"rule 1: {{Genre}} equals "jazz" (value: "rock") was false"#)

        let exception = try #require(trace.tags.first { $0.tagID == 16 })
        #expect(exception.outcome == .notFired)
        #expect(exception.failedConditions?.first?.role == .unless)
        #expect(exception.reason == #"rule 3: exception {{Genre}} equals "rock" (value: "rock") held"#)
    }

    @Test func anUndefinedOperandIsLeftOutAndReadAsUndefined() throws {
        let session = try Self.session()
        let trace = try #require(session.push(event: "e", tracing: true).trace)
        let tag = try #require(trace.tags.first { $0.tagID == 17 })
        let condition = try #require(tag.failedConditions?.first)
        #expect(condition.left == nil && condition.right == "x")
        #expect(tag.reason == #"rule 4: {{Missing}} equals "x" (value: undefined) was false"#)
        #expect(trace.evaluations.first?.variables.contains { $0.name == "Missing" && $0.value == nil } == true)
        let decoded = try PushTrace(json: trace.json())
        #expect(decoded.tags.first { $0.tagID == 17 }?.failedConditions?.first?.left == nil)
        // A null stays null: only undefined is left out. (A data-layer value: an event parameter that is null is a
        // missing one, as the v5 runtime's `__md` reads it.)
        let null = try #require(session.push(event: "e", parameters: ["missing": .null], tracing: true).trace)
        #expect(null.tags.first { $0.tagID == 17 }?.failedConditions?.first?.left == .null)
        let decodedNull = try PushTrace(json: null.json())
        #expect(decodedNull.tags.first { $0.tagID == 17 }?.failedConditions?.first?.left == .null)
        #expect(decodedNull == null)
    }

    @Test func pausedUnsupportedPendingAndAlreadyFiredTagsAreReportedAsSuch() throws {
        let session = try Self.session()
        let first = try #require(session.push(event: "e", parameters: ["held": true], tracing: true).trace)
        #expect(first.tags.first { $0.tagID == 13 }?.outcome == .paused)
        let pixel = try #require(first.tags.first { $0.tagID == 14 })
        #expect(pixel.outcome == .unsupported && pixel.status?.name == "unsupported")
        #expect(pixel.arguments == .object(["html": "<img>"]))
        let held = try #require(first.tags.first { $0.tagID == 10 })
        #expect(held.outcome == .pending && held.status == PushTrace.Status(name: "pending", message: "no user yet"))
        #expect(first.tags.first { $0.tagID == 15 }?.outcome == .fired)

        let second = try #require(session.push(event: "e", tracing: true).trace)
        #expect(second.tags.first { $0.tagID == 15 }?.outcome == .alreadyFired)
    }

    @Test func aDuplicateShowsTheOriginalsTagsAndAppliesNothing() throws {
        let session = try Self.session()
        let original = session.push(event: "e", parameters: ["genre": "rock"], eventID: "m-1", tracing: true)
        #expect(original.trace?.eventID == "m-1")
        let retry = session.push(event: "e", parameters: ["genre": "jazz"], eventID: "m-1", tracing: true)
        let trace = try #require(retry.trace)
        #expect(trace.outcome == .duplicate)
        #expect(trace.evaluations.isEmpty && trace.changes.isEmpty && trace.records.isEmpty)
        let tags = try #require(trace.duplicateOf?.tags)
        #expect(tags.allSatisfy { $0.outcome == .duplicate })
        #expect(tags.first { $0.tagID == 10 }?.recordIDs == ["r-1"])
        #expect(trace.dataLayer.objectValue?["genre"] == "rock")
    }

    @Test func aRefusedPushSaysWhy() throws {
        let session = try Self.session()
        let trace = try #require(session.push(event: "e", eventID: "", tracing: true).trace)
        #expect(trace.outcome == .refused)
        #expect(trace.refusal?.code == "invalid_event_id")
    }

    @Test func theChangesAreTheTopLevelKeysThePushChangedBeforeAndAfter() throws {
        let session = try Self.session()
        session.push(["genre": "rock", "user": ["name": "Ada", "plan": "free"], "same": 1])
        let trace = try #require(
            session.push(["genre": "jazz", "user.plan": "pro", "same": 1, "new": true], tracing: true).trace
        )
        #expect(trace.changes.map(\.key) == ["genre", "user", "new"])
        #expect(trace.changes.map(\.before) == ["rock", .object(["name": "Ada", "plan": "free"]), nil])
        #expect(trace.changes.map(\.after) == ["jazz", .object(["name": "Ada", "plan": "pro"]), true])
        #expect(trace.event == nil && trace.evaluations.isEmpty)
        #expect(trace.dataLayer.objectValue?["new"] == true)
    }

    @Test func recordsCarryTheirTagStateAndDurability() throws {
        let token = DurabilityToken(source: StillWriting(), ticket: 1)
        let session = try Self.session(durability: token)
        var trace = try #require(session.push(event: "e", parameters: ["genre": "jazz"], tracing: true).trace)
        // Tags 10, 11 and 12 call `make` (durable, still writing); tags 15 and 16 call `other` (no promise).
        #expect(trace.records.map(\.tagID) == [10, 11, 12, 15, 16])
        #expect(trace.records.map(\.durability) == [.writing, .writing, .writing, .none, .none])
        #expect(trace.records.allSatisfy { $0.state == .sent && $0.containerID == "GTM-TEST1" })
        #expect(trace.records.first?.recordID == "r-1")
        trace.markDurable()
        #expect(trace.records.map(\.durability) == [.durable, .durable, .durable, .none, .none])

        let held = try #require(session.push(event: "e", parameters: ["held": true], tracing: true).trace)
        let record = try #require(held.records.first { $0.tagID == 10 })
        #expect(record.state == .held && record.durability == .session)
    }

    @Test func theJSONRoundTripsWithSnakeCaseMembersAndSortedKeys() throws {
        let session = try Self.session()
        let trace = try #require(session.push(event: "e", parameters: ["genre": "rock"], tracing: true).trace)
        let json = trace.json()
        #expect(try PushTrace(json: json) == trace)
        #expect(json.hasPrefix(#"{"changes":["#))
        for member in ["session_id", "data_layer", "container_id", "container_version", "failed_conditions", "tag_id"] {
            #expect(json.contains("\"\(member)\""), "\(member)")
        }
        #expect(json == trace.json())
    }

    @Test func aDebugSessionTracesEveryPush() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.container())
        let session = manager.makeDataLayer(debug: true)
        #expect(session.push(event: "e").trace != nil)
        #expect(session.push(["a": 1]).trace != nil)
    }

    @Test func tracingOneSessionWhileOthersPushLeavesTheOthersUntracedAndTheTracesWhole() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.container())
        manager.register(tagHandler: RecordMaker(), for: "make")
        manager.register(tagHandler: RecordMaker(), for: "other")
        let followed = manager.makeDataLayer(sessionID: "followed")
        let others = (0..<8).map { manager.makeDataLayer(sessionID: "other-\($0)") }
        let rounds = 50
        let (traces, untraced) = await withTaskGroup(of: ([PushTrace], Int).self) { group in
            group.addTask {
                var traces: [PushTrace] = []
                for n in 0..<rounds {
                    let result = await followed.push(event: "e", parameters: ["n": .int(Int64(n))], tracing: true)
                    if let trace = result.trace { traces.append(trace) }
                }
                return (traces, 0)
            }
            for session in others {
                group.addTask {
                    var untraced = 0
                    for n in 0..<rounds {
                        let result = await session.push(event: "e", parameters: ["genre": "rock", "n": .int(Int64(n))])
                        if result.trace == nil, !result.fired.isEmpty { untraced += 1 }
                    }
                    return ([], untraced)
                }
            }
            var traces: [PushTrace] = []
            var untraced = 0
            for await (some, count) in group {
                traces += some
                untraced += count
            }
            return (traces, untraced)
        }
        #expect(untraced == others.count * rounds)
        #expect(traces.count == rounds)
        for (n, trace) in traces.enumerated() {
            #expect(trace.sessionID == "followed")
            let change = trace.changes.first { $0.key == "n" }
            #expect(change?.before == (n == 0 ? nil : .int(Int64(n - 1))) && change?.after == .int(Int64(n)))
            #expect(trace.evaluations.count == 1 && trace.evaluations[0].tags.count == 8)
            #expect(trace.dataLayer.objectValue?["n"] == .int(Int64(n)))
        }
    }

    @Test func aTracedConsentCommandShowsEachTypeBeforeAndAfter() throws {
        let session = try Self.session()
        session.push(try ConsentCommand(gtagArguments: ["consent", "default", ["ad_storage": "denied"]]))
        let command = try ConsentCommand(
            gtagArguments: ["consent", "update", ["ad_storage": "granted", "analytics_storage": "denied"]]
        )
        let trace = try #require(session.push(command, tracing: true).trace)
        #expect(trace.outcome == .applied && trace.event == nil && trace.evaluations.isEmpty)
        #expect(trace.message == ["ad_storage": "granted", "analytics_storage": "denied"])
        let consent = try #require(trace.consent)
        #expect(consent.kind == "update" && consent.regions == nil)
        #expect(consent.types.map(\.type) == ["ad_storage", "analytics_storage"])
        #expect(consent.types.map(\.before) == ["denied", nil])
        #expect(consent.types.map(\.after) == ["granted", "denied"])
        #expect(
            trace.textLines.prefix(3) == [
                "  consent update:", "    ad_storage: denied → granted", "    analytics_storage: not set → denied",
            ]
        )
        // The JSON reads back; a push not asked for a trace records none.
        #expect(try PushTrace(json: trace.json()) == trace)
        #expect(trace.json().contains(#""consent":{"kind":"update","types":[{"after":"granted","before":"denied""#))
        #expect(session.push(command).trace == nil)
    }

    @Test func aDefaultForAnotherRegionIsShownUnchanged() throws {
        let manager = TagManager(logger: InMemoryLogger())
        var context = ClientContext()
        context.country = "FR"
        let session = manager.makeDataLayer(context: context, sessionID: "s")
        let command = try ConsentCommand(
            gtagArguments: ["consent", "default", ["ad_storage": "denied", "region": ["ES"]]]
        )
        let trace = try #require(session.push(command, tracing: true).trace)
        #expect(trace.consent?.regions == ["ES"])
        #expect(trace.consent?.types.first?.before == nil && trace.consent?.types.first?.after == nil)
        #expect(trace.textLines.contains("    ad_storage: not set → not set (unchanged)"))
    }

    @Test func aSessionStorePushOfATracedCommandHasItsTrace() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        let store = SessionStore(tagManager: manager)
        let command = try ConsentCommand(gtagArguments: ["consent", "update", ["ad_storage": "granted"]])
        let traced = try await store.push(command, for: "u", waitsForDurability: false, tracing: true)
        #expect(traced.trace?.consent?.types.first?.after == "granted")
        let untraced = try await store.push(command, for: "u", waitsForDurability: false)
        #expect(untraced.trace == nil)
    }
}
