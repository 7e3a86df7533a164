import ContainerKitTesting
import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ContainerKit

/// Callers waiting for one session's turn: the caller holding it processes their pushes too, each in a turn
/// of its own and in the order they came, and hands each caller its own result (flat combining) — unless it
/// runs inside another turn, or has processed ``DataLayer/maximumCombinedPushes`` of them already, when it
/// hands the turn over instead. A thread still polling for its turn is not served so: the session is kept for
/// the holding thread's next push, for a stretch of at most ``SessionTurnstile/maximumStretch`` turns, and then
/// handed to the polling thread; it takes the kept session itself when that push does not come.
///
/// Each test holds the turn in a handler until the callers it starts are queued (seen through
/// ``DataLayer/waitObservers``, debug builds only), so that who waits, and in which order, is known; a test of
/// combining waits until the waiting threads sleep, a test of a kept session has them poll until served.
struct SessionCombiningTests {
    /// Where each tick push was handled: its `n`, and the thread its handler ran on.
    final class Handled: Sendable {
        let calls = Mutex<[(n: Int64, thread: ObjectIdentifier)]>([])
        func append(_ n: Int64) { calls.withLock { $0.append((n, ObjectIdentifier(Thread.current))) } }
        var ns: [Int64] { calls.withLock { $0.map(\.n) } }
        func thread(of n: Int64) -> ObjectIdentifier? { calls.withLock { $0.first { $0.n == n }?.thread } }
    }

    /// How many callers wait for `session`'s turn, as its waits are noted, and how many waiting threads went to
    /// sleep; stops noting when the test ends. `spinning` and `patience` replace the waiting threads' defaults.
    final class Waits: Sendable {
        let count = AwaitableState(0)
        let sleeping = AwaitableState(0)
        let session: ObjectIdentifier
        init(_ session: DataLayer, spinning: UInt64? = nil, patience: UInt64? = nil) {
            self.session = ObjectIdentifier(session)
            let (count, sleeping) = (self.count, self.sleeping)
            let observer = DataLayer.WaitObserver(
                waits: { waiting in count.update { $0 = waiting } },
                asleep: { sleeping.update { $0 += 1 } },
                spinning: spinning,
                patience: patience
            )
            DataLayer.waitObservers.withLock { $0[self.session] = observer }
        }
        func stop() { _ = DataLayer.waitObservers.withLock { $0.removeValue(forKey: session) } }
        func reach(_ n: Int) async { await count.reach(n) }
        /// Returns once `n` waiting threads went to sleep.
        func asleep(_ n: Int) async { await sleeping.reach(n) }
    }

    /// A gate a handler blocks its thread on until the test opens it.
    final class HandlerGate: Sendable {
        private let semaphore = DispatchSemaphore(value: 0)
        /// Set when the handler reached the gate (its push holds the turn then).
        let reached = AwaitableState(false)
        func open() { semaphore.signal() }
        func pass() {
            reached.open()
            semaphore.wait()
        }
    }

    /// Runs `body` on a thread of its own; the returned state holds its result once it returned.
    static func onThread<R: Sendable>(_ body: @escaping @Sendable () -> R) -> AwaitableState<R?> {
        let result = AwaitableState<R?>(nil)
        Thread {
            let value = body(); result.update { $0 = value }
        }.start()
        return result
    }

    static func value<R: Sendable>(of state: AwaitableState<R?>) async -> R? {
        await state.wait(until: { $0 != nil })
        return state.value
    }

    /// A runtime with the tick container whose handler records each push (see ``Handled``) and, for `n == 0`,
    /// first blocks on `gate`.
    static func runtime(_ handled: Handled, gate: HandlerGate, also: (@Sendable (FunctionCall, Int64) -> Void)? = nil)
        throws
        -> TagManager
    {
        let manager = TagManager(logger: InMemoryLogger())
        manager.add(try SessionConcurrencyTests.tickContainer())
        manager.register(
            tagHandler: ClosureTagHandler { call in
                guard case .int(let n)? = call.arguments["n"] else { return }
                if n == 0 { gate.pass() }
                handled.append(n)
                also?(call, n)
            },
            for: "com.example.Tick"
        )
        return manager
    }

    static func tick(_ n: Int64) -> ValueMap { ["n": .int(n)] }
    static func ns(_ result: PushResult?) -> [Value?] { result?.fired.map { $0.parameters["n"] } ?? [] }

    /// A session whose turn a thread holds: its push of `n = 0` is blocked at the gate.
    struct Held {
        let handled = Handled()
        let gate = HandlerGate()
        let session: DataLayer
        let waits: Waits
        let holder: AwaitableState<PushResult?>

        /// `spinning` and `patience`: see ``Waits``. `then`: what the holding thread pushes after its push of 0.
        init(spinning: UInt64? = nil, patience: UInt64? = nil, then: [Int64] = []) async throws {
            session = try SessionCombiningTests.runtime(handled, gate: gate).makeDataLayer()
            waits = Waits(session, spinning: spinning, patience: patience)
            holder = await SessionCombiningTests.hold(session, pushing: 0, then: then, gate)
        }

        /// Starts a thread that pushes `n`; returns once it is the `position`th caller waiting (so that callers
        /// queue in the order they were started).
        func queue(_ n: Int64, position: Int) async -> AwaitableState<PushResult?> {
            await SessionCombiningTests.queue(session, pushing: n, until: waits, count: position)
        }
    }

    /// Starts a thread that pushes `n` into `session` and returns once its handler reached `gate` (it holds the
    /// turn of the session it pushed into then). Once that push returns, the thread pushes `then`'s, one by one;
    /// its result is that of `n`.
    static func hold(_ session: DataLayer, pushing n: Int64, then: [Int64] = [], _ gate: HandlerGate)
        async -> AwaitableState<PushResult?>
    {
        let result = onThread {
            let first = session.push(event: "tick", parameters: tick(n))
            for next in then { session.push(event: "tick", parameters: tick(next)) }
            return first
        }
        await gate.reached.wait()
        return result
    }

    /// Starts a thread that pushes `n` into `session` and returns once `count` callers wait (see ``Waits``).
    static func queue(_ session: DataLayer, pushing n: Int64, until waits: Waits, count: Int) async
        -> AwaitableState<PushResult?>
    {
        let result = onThread { session.push(event: "tick", parameters: tick(n)) }
        await waits.reach(count)
        return result
    }

    /// Two sessions of one runtime whose handler (see ``runtime(_:gate:also:)``) also calls `also` with both.
    static func twoSessions(_ also: @escaping @Sendable (DataLayer, DataLayer, Int64) -> Void) throws
        -> (Handled, HandlerGate, DataLayer, DataLayer)
    {
        let handled = Handled()
        let gate = HandlerGate()
        let sessions = Mutex<(DataLayer, DataLayer)?>(nil)
        let manager = try runtime(handled, gate: gate) { _, n in
            if let (first, second) = sessions.withLock({ $0 }) { also(first, second, n) }
        }
        let pair = (manager.makeDataLayer(), manager.makeDataLayer())
        sessions.withLock { $0 = pair }
        return (handled, gate, pair.0, pair.1)
    }

    @Test(.timeLimit(.minutes(1)))
    func theCallerHoldingTheTurnProcessesTheWaitingPushesInOrderAndHandsEachItsOwnResult() async throws {
        let held = try await Held()
        defer { held.waits.stop() }
        let (handled, session) = (held.handled, held.session)
        var waiters: [AwaitableState<PushResult?>] = []
        for n in 1...3 { waiters.append(await held.queue(Int64(n), position: n)) }
        await held.waits.asleep(3)
        held.gate.open()
        #expect(Self.ns(await Self.value(of: held.holder)) == [.int(0)])
        for (i, waiter) in waiters.enumerated() {
            #expect(Self.ns(await Self.value(of: waiter)) == [.int(Int64(i + 1))])
        }
        // Applied in the order the turns were taken, all on the thread that held the first turn.
        #expect(handled.ns == [0, 1, 2, 3])
        let holderThread = try #require(handled.thread(of: 0))
        #expect((1...3).allSatisfy { handled.thread(of: $0) == holderThread })
        #expect(session.model["n"] == .int(3))
        #expect(session.snapshot().eventNumber == 4)
    }

    @Test(.timeLimit(.minutes(1)))
    func tasksWaitingForTheTurnAreHandedTheirResults() async throws {
        let held = try await Held()
        defer { held.waits.stop() }
        let (handled, session) = (held.handled, held.session)
        let first = Task { await session.push(event: "tick", parameters: Self.tick(1)) }
        await held.waits.reach(1)
        let second = Task { await session.push(event: "tick", parameters: Self.tick(2)) }
        await held.waits.reach(2)
        held.gate.open()
        #expect(Self.ns(await first.value) == [.int(1)])
        #expect(Self.ns(await second.value) == [.int(2)])
        #expect(Self.ns(await Self.value(of: held.holder)) == [.int(0)])
        #expect(handled.ns == [0, 1, 2])
        let holderThread = try #require(handled.thread(of: 0))
        #expect(handled.thread(of: 1) == holderThread && handled.thread(of: 2) == holderThread)
    }

    @Test(.timeLimit(.minutes(1)))
    func afterTheMostWaitingPushesItProcessesTheHolderHandsTheTurnToTheNextCaller() async throws {
        let held = try await Held()
        defer { held.waits.stop() }
        let handled = held.handled
        let count = DataLayer.maximumCombinedPushes + 2
        var waiters: [AwaitableState<PushResult?>] = []
        for n in 1...count { waiters.append(await held.queue(Int64(n), position: n)) }
        await held.waits.asleep(count)
        held.gate.open()
        for (i, waiter) in waiters.enumerated() {
            #expect(Self.ns(await Self.value(of: waiter)) == [.int(Int64(i + 1))])
        }
        _ = await Self.value(of: held.holder)
        #expect(handled.ns == (0...Int64(count)).map { $0 })
        let holderThread = try #require(handled.thread(of: 0))
        let limit = Int64(DataLayer.maximumCombinedPushes)
        #expect((1...limit).allSatisfy { handled.thread(of: $0) == holderThread })
        // The next caller was handed the turn: it processed its own push and the one after it.
        let next = try #require(handled.thread(of: limit + 1))
        #expect(next != holderThread && handled.thread(of: limit + 2) == next)
    }

    /// A push waiting for the first session's turn was made by a handler of a second session's push: processed
    /// by the first session's holder, on its thread, its handler's push back into the second session is still
    /// nested in that session's turn (the turns its caller ran inside go with it), not a caller waiting for a
    /// turn that will never end.
    @Test(.timeLimit(.minutes(1)))
    func aWaitingPushMadeInsideAnotherSessionsTurnKeepsThatTurnWhenAnotherThreadProcessesIt() async throws {
        let (handled, gate, first, second) = try Self.twoSessions { first, second, n in
            switch n {
            case 10: first.push(event: "tick", parameters: Self.tick(11))  // waits: the first session is busy
            case 11: second.push(event: "tick", parameters: Self.tick(12))  // back into the second: nested
            default: break
            }
        }
        let waits = Waits(first)
        defer { waits.stop() }
        let holder = await Self.hold(first, pushing: 0, gate)
        let other = await Self.queue(second, pushing: 10, until: waits, count: 1)
        await waits.asleep(1)
        gate.open()
        #expect(Self.ns(await Self.value(of: other)) == [.int(10), .int(12)])
        #expect(Self.ns(await Self.value(of: holder)) == [.int(0)])
        #expect(handled.ns == [10, 0, 11, 12])
        #expect(handled.thread(of: 11) == handled.thread(of: 0))
    }

    /// The holder's own push runs inside a turn of another session (a handler's push): it hands the turn to
    /// the caller waiting, whose push runs on that caller's thread.
    @Test(.timeLimit(.minutes(1)))
    func aHolderInsideAnotherTurnHandsTheTurnOverInsteadOfProcessingWaitingPushes() async throws {
        let (handled, gate, first, outer) = try Self.twoSessions { first, _, n in
            if n == 20 { first.push(event: "tick", parameters: Self.tick(0)) }
        }
        let waits = Waits(first)
        defer { waits.stop() }
        let holder = await Self.hold(outer, pushing: 20, gate)
        let waiter = await Self.queue(first, pushing: 1, until: waits, count: 1)
        gate.open()
        #expect(Self.ns(await Self.value(of: waiter)) == [.int(1)])
        #expect(Self.ns(await Self.value(of: holder)) == [.int(20)])
        #expect(handled.ns == [20, 0, 1])
        #expect(handled.thread(of: 1) != handled.thread(of: 0))
    }

    /// The waiting thread polls (it never sleeps) when the holder's turn ends: the session is kept for the holding
    /// thread's next push, which does not come, and the waiter takes the session and processes its push itself.
    @Test(.timeLimit(.minutes(1)))
    func aPollingWaiterTakesTheSessionKeptForAThreadWhoseNextPushDoesNotCome() async throws {
        let held = try await Held(spinning: .max)
        defer { held.waits.stop() }
        let handled = held.handled
        let waiter = await held.queue(1, position: 1)
        held.gate.open()
        #expect(Self.ns(await Self.value(of: held.holder)) == [.int(0)])
        #expect(Self.ns(await Self.value(of: waiter)) == [.int(1)])
        #expect(handled.ns == [0, 1])
        #expect(handled.thread(of: 1) != handled.thread(of: 0))
        #expect(held.session.snapshot().eventNumber == 2)
    }

    /// While a thread polls for its turn (it never sleeps and never takes the kept session), the holding thread's
    /// next pushes take the turn ahead of it, up to a stretch of ``SessionTurnstile/maximumStretch`` turns; then
    /// the turn goes to the polling thread, which processes its push on its own thread.
    @Test(.timeLimit(.minutes(1)))
    func theHoldingThreadsNextPushesGoAheadOfAPollingWaiterForOneStretchThenItIsHandedTheTurn() async throws {
        let stretch = Int64(SessionTurnstile<Int, Int>.maximumStretch)
        let held = try await Held(spinning: .max, patience: .max, then: Array(1..<stretch))
        defer { held.waits.stop() }
        let handled = held.handled
        let waiter = await held.queue(1000, position: 1)
        held.gate.open()
        #expect(Self.ns(await Self.value(of: waiter)) == [.int(1000)])
        #expect(Self.ns(await Self.value(of: held.holder)) == [.int(0)])
        #expect(handled.ns == Array(0..<stretch) + [1000])
        let holderThread = try #require(handled.thread(of: 0))
        #expect((1..<stretch).allSatisfy { handled.thread(of: $0) == holderThread })
        #expect(handled.thread(of: 1000) != holderThread)
        #expect(held.session.model["n"] == .int(1000))
    }
}
