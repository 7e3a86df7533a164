import ContainerKitTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import ContainerKit

/// A planned call retains its argument keys and its origin: each thread takes its own copies of them (see
/// `ThreadCallConstants`), so that two threads pushing into two sessions write no reference count the other
/// writes. These pin that the copies are the thread's own and that what a handler sees is unchanged.
struct ThreadCallConstantsTests {
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
        let first = manager.makeDataLayer()
        let second = manager.makeDataLayer()
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
        let count = 2 * ThreadCallConstants.capacity + 1
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
}
