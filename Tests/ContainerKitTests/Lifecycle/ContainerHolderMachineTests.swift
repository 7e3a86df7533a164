import Testing

@testable import ContainerKit

/// The container holder's transitions, without I/O or clocks: versions are strings, waiting tasks numbers,
/// and time an argument.
@Suite struct ContainerHolderMachineTests {
    typealias Machine = ContainerHolderMachine<String, Int>

    /// The actions as text, in order.
    static func describe(_ actions: [Machine.Action]) -> [String] {
        actions.map { action in
            switch action {
            case .publish(let candidate): return "publish \(candidate)"
            case .resume(let waiters): return "resume \(waiters.sorted())"
            case .openFinished: return "open finished"
            case .replayDeferred: return "replay"
            }
        }
    }

    @Test func resolvingPublishesTheBestVersionAndWakesTheWaitersOnce() throws {
        var machine = Machine()
        machine.defaultCandidate = "default"
        let firstID = machine.makeWaiterID()
        let secondID = machine.makeWaiterID()
        let first = try #require(firstID)
        let second = try #require(secondID)
        #expect(machine.wait(10, id: first) == true)
        #expect(machine.wait(20, id: second) == true)
        #expect(Self.describe(machine.offer("saved", etag: "e1")) == ["replay"])
        #expect(Self.describe(machine.resolve()) == ["publish saved", "resume [10, 20]", "open finished", "replay"])
        #expect(Self.describe(machine.resolve()) == ["replay"])
        #expect(machine.makeWaiterID() == nil)
        #expect(machine.wait(30, id: 3) == false)
    }

    @Test func aVersionLoadedAfterTheResolutionGoesLiveAtOnce() {
        var machine = Machine()
        _ = machine.resolve()
        #expect(Self.describe(machine.offer("network", etag: "e2")) == ["publish network", "replay"])
        #expect(machine.startNetworkRefresh(now: .seconds(1)) == "e2")
    }

    @Test func aCancelledWaiterIsReturnedAndNotResumedByTheResolution() throws {
        var machine = Machine()
        let waiterID = machine.makeWaiterID()
        let id = try #require(waiterID)
        _ = machine.wait(10, id: id)
        #expect(machine.stopWaiting(id: id) == 10)
        #expect(Self.describe(machine.resolve()) == ["resume []", "open finished", "replay"])
    }

    @Test func aManualRefreshWakesTheSleepingLoopOnceAndIsLimitedInRate() {
        var machine = Machine()
        #expect(machine.loopStep(now: .seconds(0)) == .sleep(until: nil))
        #expect(machine.sleep(1) == true)
        let asked = machine.requestRefresh(now: .seconds(0), minimumInterval: .seconds(900), force: false)
        #expect(asked.accepted)
        #expect(Self.describe(asked.actions) == ["resume [1]"])
        // Asked already: refused until the refresh starts.
        let request1 = machine.requestRefresh(now: .seconds(0), minimumInterval: .seconds(900), force: true)
        #expect(!request1.accepted)
        #expect(machine.loopStep(now: .seconds(0)) == .refresh)
        #expect(machine.startNetworkRefresh(now: .seconds(10)) == nil)
        // Within the minimum interval of the last start: refused unless forced.
        let request2 = machine.requestRefresh(now: .seconds(100), minimumInterval: .seconds(900), force: false)
        #expect(!request2.accepted)
        let request3 = machine.requestRefresh(now: .seconds(100), minimumInterval: .seconds(900), force: true)
        #expect(request3.accepted)
    }

    @Test func theLoopRefreshesWhenDueAndSleepsUntilThen() {
        var machine = Machine()
        machine.nextRefresh = .seconds(60)
        #expect(machine.loopStep(now: .seconds(59)) == .sleep(until: .seconds(60)))
        #expect(machine.loopStep(now: .seconds(60)) == .refresh)
    }

    @Test func closingWakesTheLoopResolvesTheOpenAndRefusesEverythingAfter() {
        var machine = Machine()
        machine.defaultCandidate = "default"
        _ = machine.sleep(1)
        #expect(
            Self.describe(machine.close()) == ["resume [1]", "publish default", "resume []", "open finished", "replay"]
        )
        #expect(machine.loopStep(now: .zero) == .stop)
        #expect(machine.sleep(2) == false)
        #expect(machine.startRun() == false)
        let request4 = machine.requestRefresh(now: .zero, minimumInterval: .zero, force: true)
        #expect(!request4.accepted)
    }

    @Test func oneRunAtATimeAndTheInitialLoadIsClaimedOnce() {
        var machine = Machine()
        #expect(machine.startRun() == true)
        #expect(machine.startRun() == false)
        machine.endRun()
        #expect(machine.startRun() == true)
        #expect(machine.claimInitialLoad() == true)
        #expect(machine.claimInitialLoad() == false)
    }
}
