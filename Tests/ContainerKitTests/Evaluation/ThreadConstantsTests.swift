import ContainerKitTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ContainerKit

/// A planned call retains its argument keys, its origin and its literal values, and an evaluation copies the
/// keys its variables read and the constant texts its conditions compare: each thread takes its own copies of
/// them (see `SessionRuntime`), so that two threads pushing into two sessions write no reference count the
/// other writes. These pin that the copies are the thread's own and that what a handler sees is unchanged.
struct ThreadConstantsTests {
    /// A container whose tag (a long class path, so that its string is a buffer of its own) fires on `e` and
    /// passes two arguments, one under a key longer than 15 bytes.
    private func container(id: String, value: String) throws -> Container {
        try TestContainers.resource(
            macros: #"[{"function": "__e"}]"#,
            tags: """
                [{"function": "__funct", "tag_id": 7, "vtp_classPath": "com.example.analytics.LongTagProvider",
                  "vtp_functionArgument": ["list", ["map", "key", "customAttributeKeyName", "value", "\(value)"],
                                                   ["map", "key", "v", "value", ["macro", 0]]]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#,
            id: id
        )
    }

    /// What one call carried: its origin and key array (kept, so that no later object takes their address),
    /// their identities, and what the handler read.
    struct Seen: Sendable {
        let originObject: FunctionCall.Origin
        let keyArray: [String]
        var origin: ObjectIdentifier { ObjectIdentifier(originObject) }
        var keys: UInt? { keyArray.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } }
        let name: String
        let containerID: String
        let tagID: Int?
        let arguments: ValueMap
    }

    final class Calls: Sendable {
        let seen = Mutex<[Seen]>([])
    }

    /// Two sessions of a runtime with `container` and a handler for the tests' class path that records every
    /// call it gets.
    private func twoSessionsRecordingCalls(of container: Container) -> (Calls, DataLayer, DataLayer) {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let calls = Calls()
        manager.register(
            tagHandler: ClosureTagHandler { call in
                let seen = Seen(
                    originObject: call.origin,
                    keyArray: call.arguments.keys,
                    name: call.name,
                    containerID: call.containerID,
                    tagID: call.tagID,
                    arguments: call.arguments
                )
                calls.seen.withLock { $0.append(seen) }
            },
            for: "com.example.analytics.LongTagProvider"
        )
        return (calls, manager.makeDataLayer(), manager.makeDataLayer())
    }

    /// Runs `body` on a thread of its own and waits for it.
    private func onThread(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }
        .start()
        done.wait()
    }

    @Test func eachThreadsCallsCarryItsOwnCopiesOfTheKeysAndOriginNotThePlans() throws {
        let container = try container(id: "GTM-THRD", value: "x")
        let (calls, first, second) = twoSessionsRecordingCalls(of: container)
        onThread {
            first.push(event: "e")
            first.push(event: "e")
        }
        onThread { second.push(event: "e") }
        let seen = calls.seen.withLock { $0 }
        try #require(seen.count == 3)
        let plan = try #require(container.storage.callPlans[0])
        let planKeys = plan.keys.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
        // One thread's calls share its copies; the other thread's are others; none is the plan's.
        #expect(seen[0].origin == seen[1].origin && seen[0].keys == seen[1].keys)
        #expect(seen[2].origin != seen[0].origin && seen[2].keys != seen[0].keys)
        #expect(seen.allSatisfy { $0.origin != ObjectIdentifier(plan.origin) && $0.keys != planKeys })
        // What the handler reads is what the container says.
        for call in seen {
            #expect(call.name == "com.example.analytics.LongTagProvider")
            #expect(call.containerID == "GTM-THRD" && call.tagID == 7)
            #expect(call.arguments == ["customAttributeKeyName": "x", "v": "e"])
            #expect(call.arguments.keys == ["customAttributeKeyName", "v"])
        }
    }

    @Test func aThreadCallingMoreContainersThanItKeepsGivesEachCallItsOwnArguments() throws {
        // Twice the containers a thread keeps the constants of, called in turn twice over: every table is
        // made again after it was dropped, and a container never reads another's.
        let count = 2 * SessionRuntime.ThreadTables.capacity + 1
        let manager = TagManager(logger: InMemoryLogger())
        for i in 0..<count { manager.add(try container(id: "GTM-C\(i)", value: "value \(i)")) }
        manager.register(tagHandler: ClosureTagHandler { _ in }, for: "com.example.analytics.LongTagProvider")
        let session = manager.makeDataLayer()
        let results = Mutex<[[ValueMap]]>([])
        onThread {
            for _ in 0..<2 {
                let fired = session.push(event: "e").fired.map(\.parameters)
                results.withLock { $0.append(fired) }
            }
        }
        let expected = (0..<count).map { i -> ValueMap in ["customAttributeKeyName": .string("value \(i)"), "v": "e"] }
        #expect(results.withLock { $0 } == [expected, expected])
    }

    @Test func everyContainerLoadedHasASerialNoOtherHas() throws {
        let serials = try (0..<5).map { try container(id: "GTM-S\($0)", value: "x").storage.serial }
        #expect(Set(serials).count == serials.count)
    }

    /// A container whose variables read keys longer than 15 bytes (with and without a default value, one with a
    /// nested path), whose condition compares the event name with a long constant, and whose tag passes a long
    /// literal beside them.
    private func variablesContainer() throws -> Container {
        try TestContainers.resource(
            macros: """
                [{"function": "__e"},
                 {"function": "__md", "vtp_key": "aParameterKeyLongerThan15"},
                 {"function": "__md", "vtp_key": "anotherLongParameterKey", "vtp_setDefaultValue": true,
                  "vtp_defaultValue": "a default longer than fifteen"},
                 {"function": "__v", "vtp_name": "aDataLayerNameLongerThan15", "vtp_dataLayerVersion": 2,
                  "vtp_setDefaultValue": true, "vtp_defaultValue": "the data layer's default"},
                 {"function": "__md", "vtp_key": "nested.parameter"}]
                """,
            tags: """
                [{"function": "__funct", "tag_id": 3, "vtp_classPath": "com.example.analytics.LongTagProvider",
                  "vtp_functionArgument": ["list", ["map", "key", "literal", "value", "a literal longer than 15 bytes"],
                                                   ["map", "key", "p1", "value", ["macro", 1]],
                                                   ["map", "key", "p2", "value", ["macro", 2]],
                                                   ["map", "key", "dl", "value", ["macro", 3]],
                                                   ["map", "key", "nested", "value", ["macro", 4]]]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "an event name longer than 15"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#,
            id: "GTM-VARS"
        )
    }

    /// Where a string's bytes are (a string of more than 15 bytes: its buffer).
    private static func address(_ value: Value?) -> UInt? {
        guard case .string(let string)? = value else { return nil }
        return string.utf8.withContiguousStorageIfAvailable { UInt(bitPattern: $0.baseAddress) } ?? nil
    }

    @Test func variablesLiteralsAndConditionsGiveTheSameValuesFromEachThreadsCopies() throws {
        let container = try variablesContainer()
        let (calls, first, second) = twoSessionsRecordingCalls(of: container)
        onThread {
            first.push(["aDataLayerNameLongerThan15": "from the model"])
            first.push(
                event: "an event name longer than 15",
                parameters: ["aParameterKeyLongerThan15": "first", "nested": ["parameter": 5]]
            )
            first.push(event: "another event name, which fires nothing")
        }
        onThread {
            second.push(
                event: "an event name longer than 15",
                parameters: ["anotherLongParameterKey": "given", "nested.parameter": "a literal dotted key"]
            )
        }
        let seen = calls.seen.withLock { $0 }
        try #require(seen.count == 2)
        #expect(
            seen[0].arguments == [
                "literal": "a literal longer than 15 bytes", "p1": "first", "p2": "a default longer than fifteen",
                "dl": "from the model", "nested": 5,
            ]
        )
        // `nested.parameter` is walked, never read as one name with dots (as the v5 runtime's `__md_main` reads it).
        #expect(
            seen[1].arguments == [
                "literal": "a literal longer than 15 bytes", "p2": "given", "dl": "the data layer's default",
            ]
        )
        // The literal each call carries is its thread's copy, not the plan's.
        let plan = try #require(container.storage.callPlans[0])
        guard case .literal(let planLiteral) = plan.slots[0] else {
            Issue.record("the first slot is not the literal")
            return
        }
        let literals = seen.map { Self.address($0.arguments["literal"]) }
        #expect(literals[0] != nil && literals[1] != nil && literals[0] != literals[1])
        #expect(!literals.contains(Self.address(planLiteral)))
    }

    @Test func aThreadsTableCopiesTheConditionTextsAndVariableKeysAndPathsAndTellsHowEachMacroReads() throws {
        let storage = try variablesContainer().storage
        let table = SessionRuntime.ThreadTables.Table(storage: storage)
        let text = try #require(table.text(ofPredicate: 0))
        #expect(text == "an event name longer than 15")
        #expect(
            Self.address(.string(text)) != Self.address(storage.program.predicates[0].constantText.map(Value.string))
        )
        #expect(table.key(ofMacro: 1) == "aParameterKeyLongerThan15")
        #expect(table.key(ofMacro: 3) == "aDataLayerNameLongerThan15")
        #expect(table.key(ofMacro: 0).isEmpty)
        guard case .eventParameter(let key, _, _, _) = storage.program.macros[1].kind else {
            Issue.record("macro 1 is not an event parameter")
            return
        }
        #expect(Self.address(.string(table.key(ofMacro: 1))) != Self.address(.string(key)))
        #expect(table.read(ofMacro: 0) == .other)
        #expect(table.read(ofMacro: 1) == .eventParameter(checksEcommerce: false, hasDefault: false, nested: false))
        #expect(table.read(ofMacro: 2) == .eventParameter(checksEcommerce: false, hasDefault: true, nested: false))
        #expect(table.read(ofMacro: 3) == .dataLayer(hasDefault: true, nested: false))
        #expect(table.read(ofMacro: 4) == .eventParameter(checksEcommerce: false, hasDefault: false, nested: true))
        #expect(table.path(ofMacro: 4) == ["nested", "parameter"] && table.path(ofMacro: 1).isEmpty)
    }
}
