import ContainerKit
import ContainerKitTesting
import Synchronization
import Testing

struct ConcurrencyTests {
    @Test func manySessionsEvaluateOneContainerInParallel() async throws {
        let container = try await ContainerLoader().load(path: TestContainers.bundled("GTM-MUSIC01.json"))
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(container)
        let calls = Atomic<Int>(0)
        manager.register(
            tagHandler: ClosureTagHandler { _ in calls.add(1, ordering: .relaxed) },
            for: "com.appboy.googletagmanager.BrazeGtmTagProvider"
        )
        let sessions = 64
        let eventsPerSession = 200
        await withTaskGroup(of: Void.self) { group in
            for s in 0..<sessions {
                group.addTask {
                    let layer = manager.makeDataLayer(sessionID: "user-\(s)")
                    for i in 0..<eventsPerSession {
                        await layer.push(
                            event: "played song",
                            parameters: ["genre": "jazz", "duration": .int(Int64(31 + i))]
                        )
                    }
                }
            }
        }
        #expect(calls.load(ordering: .relaxed) == sessions * eventsPerSession)
    }

    @Test func replacingTheContainerIsAtomicUnderConcurrentPushes() async throws {
        func version(_ v: String) throws -> Container {
            try TestContainers.resource(
                macros: #"[{"function": "__e"}]"#,
                tags: #"[{"function": "__funct", "tag_id": 1, "vtp_classPath": "v\#(v)"}]"#,
                predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "e"}]"#,
                rules: #"[[["if", 0], ["add", 0]]]"#
            )
        }
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try version("1"))
        let seen = Mutex<[String: Int]>([:])
        for name in ["v1", "v2"] {
            manager.register(
                tagHandler: ClosureTagHandler { call in seen.withLock { $0[call.name, default: 0] += 1 } },
                for: name
            )
        }
        let second = try version("2")
        await withTaskGroup(of: Void.self) { group in
            for s in 0..<8 {
                group.addTask {
                    let layer = manager.makeDataLayer(sessionID: "s\(s)")
                    for _ in 0..<500 {
                        // Every push fires exactly one tag: never none, never both versions.
                        #expect(await layer.push(event: "e").fired.count == 1)
                    }
                }
            }
            group.addTask { manager.add(second) }
        }
        #expect(manager.containers.count == 1)
        #expect(seen.withLock { $0.values.reduce(0, +) } == 4000)
    }
}
