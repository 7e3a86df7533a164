import ContainerKit
import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

/// Many callers pushing into one session: every caller gets its own result, nothing is dropped, and the
/// model ends as if the pushes ran in some serial order.
struct SessionConcurrencyTests {
    /// A container whose one function-call tag fires on `tick` with the pushed `caller` and `n`.
    static func tickContainer() throws -> Container {
        try TestContainers.resource(
            macros: """
                [{"function": "__e"},
                 {"function": "__md", "vtp_key": "caller"},
                 {"function": "__md", "vtp_key": "n"}]
                """,
            tags: """
                [{"function": "__funct", "tag_id": 1, "vtp_classPath": "com.example.Tick",
                  "vtp_functionArgument": ["list", ["map", "key", "caller", "value", ["macro", 1]],
                                                   ["map", "key", "n", "value", ["macro", 2]]]}]
                """,
            predicates: #"[{"function": "_eq", "arg0": ["macro", 0], "arg1": "tick"}]"#,
            rules: #"[[["if", 0], ["add", 0]]]"#
        )
    }

    /// Runs `body(i)` on `count` threads of their own, all started together; returns when all are done
    /// (suspending meanwhile: no thread of the cooperative pool is blocked).
    static func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) async {
        let done = ProgressCounter()
        let start = DispatchSemaphore(value: 0)
        for i in 0..<count {
            let thread = Thread {
                start.wait()
                body(i)
                done.advance()
            }
            thread.start()
        }
        for _ in 0..<count { start.signal() }
        await done.reach(count)
    }

    /// Two threads: the session kept for one thread's next pushes while the other polls, claimed, handed over.
    @Test(arguments: [2, 8])
    func everyThreadGetsItsOwnResultsAndNothingIsDropped(threads: Int) async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        let handled = Mutex<[Int: [Int64]]>([:])
        manager.register(
            tagHandler: ClosureTagHandler { call in
                guard case .int(let caller)? = call.arguments["caller"], case .int(let n)? = call.arguments["n"] else {
                    return
                }
                handled.withLock { $0[Int(caller), default: []].append(n) }
            },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        let pushes = 1_000
        let wrong = Atomic<Int>(0)
        await Self.onThreads(threads) { caller in
            for n in 0..<pushes {
                let result = session.push(
                    event: "tick",
                    parameters: ["caller": .int(Int64(caller)), "n": .int(Int64(n))]
                )
                let fired = result.fired
                let own =
                    fired.count == 1 && fired[0].parameters["caller"] == .int(Int64(caller))
                    && fired[0].parameters["n"] == .int(Int64(n)) && !result.loopGuardTripped
                if !own { wrong.add(1, ordering: .relaxed) }
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
        let seen = handled.withLock { $0 }
        for caller in 0..<threads {
            // Each caller's pushes ran in its own order, all of them.
            #expect(seen[caller] == (0..<pushes).map { Int64($0) })
        }
        // The model ends as after some serial order: the last push processed is some caller's last push.
        let model = session.model
        #expect(model["n"] == .int(Int64(pushes - 1)))
        #expect((0..<threads).map { Value.int(Int64($0)) }.contains(try #require(model["caller"])))
        #expect(session.snapshot().eventNumber == threads * pushes)
    }

    @Test func asyncCallersSuspendTheirTurnAndGetTheirOwnResults() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        let calls = Atomic<Int>(0)
        manager.register(
            tagHandler: ClosureTagHandler { _ in calls.add(1, ordering: .relaxed) },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        let tasks = 16
        let pushes = 300
        let wrong = await withTaskGroup(of: Int.self) { group in
            for caller in 0..<tasks {
                group.addTask {
                    var wrong = 0
                    for n in 0..<pushes {
                        let result = await session.push(
                            event: "tick",
                            parameters: ["caller": .int(Int64(caller)), "n": .int(Int64(n))]
                        )
                        if result.fired.map(\.parameters) != [["caller": .int(Int64(caller)), "n": .int(Int64(n))]] {
                            wrong += 1
                        }
                    }
                    return wrong
                }
            }
            return await group.reduce(0, +)
        }
        #expect(wrong == 0)
        #expect(calls.load(ordering: .relaxed) == tasks * pushes)
        #expect(session.snapshot().eventNumber == tasks * pushes)
    }

    /// A server's request tasks for one user on a few threads (as a NIO event loop runs them): a task that
    /// waited for its turn and resumed on another thread is never taken for a handler of another caller's
    /// push, and a handler's own push (`nesting`) is still nested, whichever thread its push runs on.
    /// (Recognised by thread, optimised builds failed both: answers held other callers' tags, and a
    /// handler's push waited for the turn its own push held, forever.)
    @Test(arguments: [1, 2], [false, true])
    func manyTasksOnFewThreadsEachGetTheirOwnResult(threads: Int, nesting: Bool) async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        let handled = Mutex<[Int: [Int64]]>([:])
        manager.register(
            tagHandler: ClosureTagHandler { call in
                guard case .int(let caller)? = call.arguments["caller"], case .int(let n)? = call.arguments["n"] else {
                    return
                }
                handled.withLock { $0[Int(caller), default: []].append(n) }
                // Every even push has its handler push a follow-up (negative n): nested in its own caller's result.
                if nesting && n >= 0 && n % 2 == 0 {
                    call.dataLayer.push(event: "tick", parameters: ["caller": .int(caller), "n": .int(-1 - n)])
                }
            },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        let tasks = 64
        let pushes = 40
        let wrong = await SmallTaskExecutor.run(threads: threads) { executor in
            await withTaskGroup(of: Int.self) { group in
                for caller in 0..<tasks {
                    group.addTask(executorPreference: executor) {
                        var wrong = 0
                        for n in 0..<pushes {
                            let own: ValueMap = ["caller": .int(Int64(caller)), "n": .int(Int64(n))]
                            let result = await session.push(event: "tick", parameters: own)
                            var expected = [own]
                            if nesting && n % 2 == 0 {
                                expected.append(["caller": .int(Int64(caller)), "n": .int(-1 - Int64(n))])
                            }
                            if result.fired.map(\.parameters) != expected || result.loopGuardTripped { wrong += 1 }
                        }
                        return wrong
                    }
                }
                return await group.reduce(0, +)
            }
        }
        #expect(wrong == 0)
        let seen = handled.withLock { $0 }
        for caller in 0..<tasks {
            let expected = (0..<Int64(pushes)).flatMap { (n: Int64) -> [Int64] in
                nesting && n % 2 == 0 ? [n, -1 - n] : [n]
            }
            #expect(seen[caller] == expected)
        }
        #expect(session.snapshot().eventNumber == tasks * (nesting ? pushes + pushes / 2 : pushes))
    }

    /// A push no rule can pass for, made from a handler, is nested like any other, and a push its turn
    /// processes later still recognises the handlers' pushes as nested.
    @Test func pushesNoRuleCanPassForInterleaveWithHandlerPushesInOneResult() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        manager.register(
            tagHandler: ClosureTagHandler { call in
                guard case .int(let n)? = call.arguments["n"], n < 2 else { return }
                call.dataLayer.push(event: "unmatched", parameters: ["n": .int(n)])
                call.dataLayer.push(event: "tick", parameters: ["n": .int(n + 1)])
            },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        let result = session.push(event: "tick", parameters: ["n": 0])
        #expect(result.events.map(\.eventName) == ["tick", "unmatched", "tick", "unmatched", "tick"])
        #expect(result.fired.map { $0.parameters["n"] } == [.int(0), .int(1), .int(2)])
    }

    /// A handler of one session pushing into a second, whose handler pushes back into the first: the push
    /// back is nested in the first session's turn (it runs inside it), not a caller waiting for that turn.
    @Test func aPushBackFromAnotherSessionsHandlerIsNested() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        let sessions = Mutex<(first: DataLayer?, second: DataLayer?, inner: [Value?])>((nil, nil, []))
        manager.register(
            tagHandler: ClosureTagHandler { call in
                let (first, second) = sessions.withLock { ($0.first!, $0.second!) }
                switch call.arguments["n"] {
                case .int(0):
                    let inner = second.push(event: "tick", parameters: ["n": 1])
                    sessions.withLock { $0.inner = inner.fired.map { $0.parameters["n"] } }
                case .int(1) where call.dataLayer === second:
                    first.push(event: "tick", parameters: ["n": 2])
                default:
                    break
                }
            },
            for: "com.example.Tick"
        )
        let first = manager.makeDataLayer()
        let second = manager.makeDataLayer()
        sessions.withLock { $0 = (first, second, []) }
        let result = first.push(event: "tick", parameters: ["n": 0])
        #expect(result.fired.map { $0.parameters["n"] } == [.int(0), .int(2)])
        #expect(sessions.withLock { $0.inner } == [.int(1)])
    }

    /// A task a handler starts inherits the mark of the push being processed; once that push is over, the
    /// task's push is an ordinary caller's: processed in its own turn, with its own result.
    @Test func aTaskAHandlerStartedPushesInItsOwnTurnAfterThePushEnded() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        let (gate, open) = AsyncStream<Void>.makeStream()
        let started = Mutex<Task<PushResult, Never>?>(nil)
        manager.register(
            tagHandler: ClosureTagHandler { call in
                guard call.arguments["n"] == .int(0) else { return }
                let session = call.dataLayer
                let task = Task {
                    for await _ in gate { break }
                    return await session.push(event: "tick", parameters: ["n": 1])
                }
                started.withLock { $0 = task }
            },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        let outer = await session.push(event: "tick", parameters: ["n": 0])
        #expect(outer.fired.map { $0.parameters["n"] } == [.int(0)])
        open.yield()
        let task = try #require(started.withLock { $0 })
        let own = await task.value
        #expect(own.fired.map { $0.parameters["n"] } == [.int(1)])
    }

    @Test func threadsAndTasksMixedOnOneSessionDropNothing() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        let calls = Atomic<Int>(0)
        manager.register(
            tagHandler: ClosureTagHandler { _ in calls.add(1, ordering: .relaxed) },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        async let tasksDone: Void = withTaskGroup(of: Void.self) { group in
            for caller in 0..<4 {
                group.addTask {
                    for n in 0..<500 {
                        await session.push(
                            event: "tick",
                            parameters: ["caller": .int(Int64(caller)), "n": .int(Int64(n))]
                        )
                    }
                }
            }
        }
        await Self.onThreads(4) { caller in
            for n in 0..<500 {
                session.push(event: "tick", parameters: ["caller": .int(Int64(100 + caller)), "n": .int(Int64(n))])
            }
        }
        await tasksDone
        #expect(calls.load(ordering: .relaxed) == 4_000)
    }

    @Test func handlerPushesStayNestedInTheirOwnCallersResult() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        manager.register(
            tagHandler: ClosureTagHandler { call in
                // Each tick pushes a follow-up tick once (n < 0 marks the follow-up).
                guard case .int(let n)? = call.arguments["n"], n >= 0 else { return }
                call.dataLayer.push(
                    event: "tick",
                    parameters: ["caller": call.arguments["caller"] ?? .null, "n": .int(-1 - n)]
                )
            },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        let wrong = Atomic<Int>(0)
        await Self.onThreads(6) { caller in
            for n in 0..<300 {
                let result = session.push(
                    event: "tick",
                    parameters: ["caller": .int(Int64(caller)), "n": .int(Int64(n))]
                )
                let ns = result.fired.map { $0.parameters["n"] }
                let callers = Set(result.fired.map { $0.parameters["caller"] })
                if ns != [.int(Int64(n)), .int(-1 - Int64(n))] || callers != [.int(Int64(caller))] {
                    wrong.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
    }

    @Test func concurrentCallersNeverTripTheLoopGuard() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        manager.register(tagHandler: ClosureTagHandler { _ in }, for: "com.example.Tick")
        let session = manager.makeDataLayer()
        let tripped = Atomic<Int>(0)
        // Far more pushes than the guard's 500, all from other callers at once.
        await Self.onThreads(4) { caller in
            for n in 0..<(2 * DataLayer.maximumNestedPushes) {
                let result = session.push(
                    event: "tick",
                    parameters: ["caller": .int(Int64(caller)), "n": .int(Int64(n))]
                )
                if result.loopGuardTripped || result.fired.count != 1 { tripped.add(1, ordering: .relaxed) }
            }
        }
        #expect(tripped.load(ordering: .relaxed) == 0)
    }

    @Test func theLoopGuardStillStopsAHandlerThatPushesForever() throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        manager.register(
            tagHandler: ClosureTagHandler { call in call.dataLayer.push(event: "tick", parameters: ["n": 1]) },
            for: "com.example.Tick"
        )
        let session = manager.makeDataLayer()
        let result = session.push(event: "tick", parameters: ["n": 0])
        #expect(result.loopGuardTripped)
        #expect(result.fired.count == DataLayer.maximumNestedPushes + 1)
        // The session is usable afterwards, and its next caller starts a fresh count.
        manager.register(tagHandler: ClosureTagHandler { _ in }, for: "com.example.Tick")
        let next = session.push(event: "tick", parameters: ["n": 2])
        #expect(!next.loopGuardTripped && next.fired.count == 1)
    }

    @Test func manyThreadsOnManySessionsKeepEachSessionsOwnModel() async throws {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try Self.tickContainer())
        manager.register(tagHandler: ClosureTagHandler { _ in }, for: "com.example.Tick")
        let sessions = (0..<4).map { manager.makeDataLayer(sessionID: "user-\($0)") }
        let wrong = Atomic<Int>(0)
        await Self.onThreads(8) { caller in
            let session = sessions[caller % sessions.count]
            for n in 0..<400 {
                let result = session.push(
                    event: "tick",
                    parameters: ["caller": .int(Int64(caller)), "n": .int(Int64(n))]
                )
                if result.fired.first?.parameters["caller"] != .int(Int64(caller)) { wrong.add(1, ordering: .relaxed) }
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
        for session in sessions { #expect(session.snapshot().eventNumber == 800) }
    }
}
