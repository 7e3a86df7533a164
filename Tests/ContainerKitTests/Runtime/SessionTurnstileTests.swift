import Testing

@testable import ContainerKit

/// The session turnstile's transitions, without threads or locks: who holds the turn, who waits, what is
/// nested, and to whom the turn goes next.
@Suite struct SessionTurnstileTests {
    typealias Turnstile = SessionTurnstile<String, Int>

    @Test func theFirstPushTakesTheTurnAndAnotherCallersPushWaits() {
        var turnstile = Turnstile()
        #expect(turnstile.arrive("a", enclosing: nil) == .acquired(1))
        #expect(turnstile.arrive("b", enclosing: nil) == .busy)
        #expect(turnstile.wait(7) == nil)
        #expect(turnstile.waitingCount == 1)
        #expect(turnstile.phase == .busy(turn: 1))
    }

    @Test func aPushInsideTheTurnIsNestedAndProcessedBeforeTheTurnIsHandedOver() {
        var turnstile = Turnstile()
        _ = turnstile.arrive("a", enclosing: nil)
        _ = turnstile.arrive("b", enclosing: nil)
        _ = turnstile.wait(7)
        #expect(turnstile.arrive("nested", enclosing: 1) == .nested)
        guard case .nested(let job) = turnstile.next() else {
            Issue.record("expected the nested push first")
            return
        }
        #expect(job == "nested")
        guard case .ended(let handOver?) = turnstile.next() else {
            Issue.record("expected the turn to be handed over")
            return
        }
        #expect(handOver.waiter == 7)
        #expect(handOver.turn == 2)
        #expect(turnstile.phase == .busy(turn: 2))
    }

    @Test func aPushCarryingAnEndedTurnIsNotNested() {
        var turnstile = Turnstile()
        _ = turnstile.arrive("a", enclosing: nil)
        _ = turnstile.wait(7)
        _ = turnstile.next()  // turn 1 ends, handed to 7 as turn 2
        // A task started inside turn 1 pushes after it ended: it waits like any other caller.
        #expect(turnstile.arrive("late", enclosing: 1) == .busy)
        #expect(turnstile.nestedCount == 0)
    }

    @Test func waitersAreServedFirstComeFirstServedThenTheSessionIsFree() {
        var turnstile = Turnstile()
        _ = turnstile.arrive("a", enclosing: nil)
        for waiter in 1...3 { _ = turnstile.wait(waiter) }
        var order: [Int] = []
        while case .ended(let handOver?) = turnstile.next() { order.append(handOver.waiter) }
        #expect(order == [1, 2, 3])
        #expect(turnstile.phase == .free)
        #expect(turnstile.arrive("b", enclosing: nil) == .acquired(5))
    }

    @Test func aWaiterArrivingAfterTheSessionFreedTakesTheTurnAtOnce() {
        var turnstile = Turnstile()
        _ = turnstile.arrive("a", enclosing: nil)
        #expect(turnstile.arrive("b", enclosing: nil) == .busy)
        _ = turnstile.next()  // the holder ends before "b" queued its waiter
        #expect(turnstile.wait(9) == 2)
        #expect(turnstile.waitingCount == 0)
    }

    @Test func theLoopGuardDropsTheQueuedNestedPushes() {
        var turnstile = Turnstile()
        _ = turnstile.arrive("a", enclosing: nil)
        for index in 0..<3 { _ = turnstile.arrive("n\(index)", enclosing: 1) }
        #expect(turnstile.dropNested() == 3)
        guard case .ended(nil) = turnstile.next() else {
            Issue.record("expected the turn to end")
            return
        }
    }

    @Test func aTurnEndsWithTheSessionKeptForTheHoldersThreadWhenTheFirstWaiterMayWait() {
        var turnstile = Turnstile()
        #expect(turnstile.arrive("a", enclosing: nil, thread: 5) == .acquired(1))
        _ = turnstile.wait(7)
        guard case .kept(let waiter) = turnstile.next(holder: 5, mayWait: { $0 == 7 }) else {
            Issue.record("expected the session kept")
            return
        }
        #expect(waiter == 7)
        #expect(turnstile.phase == .kept(for: 5))
        // Another thread's push, or a task's, waits; the keeping thread's next push takes the turn.
        #expect(turnstile.arrive("b", enclosing: nil, thread: 6) == .busy)
        #expect(turnstile.arrive("c", enclosing: nil) == .busy)
        #expect(turnstile.arrive("d", enclosing: nil, thread: 5) == .acquired(2))
        #expect(turnstile.waitingCount == 1)
    }

    @Test func theSessionIsNotKeptForATaskOrWhenTheFirstWaiterMayNotWait() {
        var turnstile = Turnstile()
        _ = turnstile.arrive("a", enclosing: nil, thread: 5)
        for waiter in [7, 8] { _ = turnstile.wait(waiter) }
        guard case .ended(let first?) = turnstile.next(holder: 0, mayWait: { _ in true }) else {
            Issue.record("expected the turn handed over")
            return
        }
        #expect(first.waiter == 7)
        guard case .ended(let second?) = turnstile.next(holder: 5, mayWait: { _ in false }) else {
            Issue.record("expected the turn handed over")
            return
        }
        #expect(second.waiter == 8)
        #expect(turnstile.phase == .busy(turn: second.turn))
    }

    @Test func aThreadKeepsTheSessionForAtMostOneStretchOfTurnsThenTheWaiterIsHandedTheTurn() {
        var turnstile = Turnstile()
        _ = turnstile.arrive("a", enclosing: nil, thread: 5)
        _ = turnstile.wait(7)
        var kept = 0
        while case .kept = turnstile.next(holder: 5, mayWait: { _ in true }) {
            kept += 1
            guard case .acquired = turnstile.arrive("again", enclosing: nil, thread: 5) else {
                Issue.record("expected the keeping thread to take the turn")
                return
            }
        }
        // The first turn and the kept ones: one stretch.
        #expect(kept + 1 == Turnstile.maximumStretch)
        #expect(turnstile.waitingCount == 0)
        guard case .busy = turnstile.phase else {
            Issue.record("expected the turn handed to the waiter")
            return
        }
        // The waiter's turn starts a stretch of its own: the session is kept for its thread.
        _ = turnstile.wait(8)
        guard case .kept = turnstile.next(holder: 7, mayWait: { _ in true }) else {
            Issue.record("expected the session kept for the new holder")
            return
        }
    }

    @Test func theFirstWaiterClaimsAKeptSessionAndNoOtherDoes() {
        var turnstile = Turnstile()
        _ = turnstile.arrive("a", enclosing: nil, thread: 5)
        for waiter in [7, 8] { _ = turnstile.wait(waiter) }
        #expect(turnstile.claim(by: { $0 == 7 }) == nil)  // not kept: busy
        _ = turnstile.next(holder: 5, mayWait: { _ in true })
        #expect(turnstile.claim(by: { $0 == 8 }) == nil)  // not the first
        #expect(turnstile.claim(by: { $0 == 7 }) == 2)
        #expect(turnstile.phase == .busy(turn: 2))
        #expect(turnstile.arrive("late", enclosing: nil, thread: 5) == .busy)
        #expect(turnstile.waitingCount == 1)
    }
}
