import ContainerKitTesting
import Testing

/// The testing product's one way to await progress, and the manual clock's short sleeps that pass at once.
@Suite struct AwaitableStateTests {
    @Test func aWaitReturnsOnceAnUpdateMakesItsConditionHold() async {
        let progress = ProgressCounter()
        let reached = ProgressCounter()
        let waiter = Task {
            await progress.reach(3)
            reached.advance()
        }
        progress.advance(by: 2)
        #expect(reached.count == 0)
        progress.advance()
        await waiter.value
        #expect(reached.count == 1)
        #expect(progress.count == 3)
    }

    @Test func aWaitWhoseConditionAlreadyHoldsReturnsAtOnce() async {
        let progress = ProgressCounter()
        progress.advance(by: 5)
        await progress.reach(2)
        let gate = Gate()
        gate.open()
        await gate.wait()
        #expect(gate.isOpen)
    }

    @Test func cancellingTheWaitingTaskEndsItsWait() async {
        let never = Gate()
        let waiter = Task { await never.wait() }
        waiter.cancel()
        await waiter.value
        #expect(!never.isOpen)
    }

    @Test func updateReturnsWhatItsBodyReturns() {
        let state = AwaitableState([1, 2])
        let removed = state.update { $0.removeFirst() }
        #expect(removed == 1)
        #expect(state.value == [2])
    }

    @Test func shortSleepsPassAtOnceAndLongOnesWaitForTheClock() async throws {
        let clock = ManualClock(autoAdvance: .seconds(1))
        try await clock.sleep(for: .milliseconds(250))
        try await clock.sleep(for: .milliseconds(500))
        #expect(clock.autoAdvancedSleeps == [.milliseconds(250), .milliseconds(500)])
        #expect(clock.now.offset == .milliseconds(750))
        let long = Task { try await clock.sleep(for: .seconds(60)) }
        await clock.waitForSleepers(1)
        #expect(clock.pendingDeadlines == [ManualClock.Instant(offset: .milliseconds(60_750))])
        clock.advance(by: .seconds(60))
        try await long.value
        #expect(clock.autoAdvancedSleeps.count == 2)
    }

    @Test func aSleepThatPassesAtOnceWakesTheSleepersDueByItsDeadline() async throws {
        let clock = ManualClock(autoAdvance: .seconds(10))
        let earlier = Task { try await clock.sleep(until: .init(offset: .seconds(20))) }
        await clock.waitForSleepers(1)
        try await clock.sleep(for: .seconds(5))  // passes at once: now +5 s
        try await clock.sleep(for: .seconds(10))  // +15 s
        #expect(clock.sleeperCount == 1)
        try await clock.sleep(for: .seconds(10))  // +25 s: the earlier sleeper is due
        try await earlier.value
        #expect(clock.sleeperCount == 0)
        await clock.waitForAutoAdvancedSleeps(3)
    }
}
