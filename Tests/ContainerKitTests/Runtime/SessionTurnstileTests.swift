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
}
