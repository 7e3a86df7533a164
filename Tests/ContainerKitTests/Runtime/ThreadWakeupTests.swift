import Foundation
import Synchronization
import Testing

@testable import ContainerKit

/// The signal a thread waiting for a session's turn waits on: whether it comes before the wait, while the waiter
/// polls, or after it went to sleep, the waiter returns the turn signalled.
struct ThreadWakeupTests {
    @Test func aSignalGivenBeforeTheWaitIsReturnedAtOnce() {
        let wakeup = ThreadWakeup()
        wakeup.signal(7)
        #expect(wakeup.wait() == 7)
    }

    @Test func aWaiterReturnsTheTurnSignalledFromAnotherThreadWhetherItPolledOrSlept() {
        // Waiters that poll for no time sleep unless the signal is already there; waiters with the default budget
        // mostly poll. Both ways, each returns its own turn.
        for spinning: UInt64 in [0, ThreadWakeup.spinNanoseconds] {
            let wakeups = (1...200).map { _ in ThreadWakeup() }
            let returned = Mutex<[UInt64]>([])
            let done = DispatchGroup()
            for wakeup in wakeups {
                done.enter()
                Thread {
                    let turn = wakeup.wait(spinning: spinning)
                    returned.withLock { $0.append(turn) }
                    done.leave()
                }.start()
            }
            for (index, wakeup) in wakeups.enumerated() { wakeup.signal(UInt64(index + 1)) }
            done.wait()
            #expect(returned.withLock { $0.sorted() } == Array(1...200).map { UInt64($0) })
        }
    }
}
