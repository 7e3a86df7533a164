import Foundation
import Synchronization
import Testing

@testable import ContainerKitHTTP

/// Calls into FoundationNetworking that wait (for a session's work queue that libcurl holds) run off the
/// cooperative pool, so that any number of them waiting at once never stalls the process's tasks.
struct BlockingCallTests {
    /// Many more calls wait at once than the machine has cores, and the tasks of the process go on: each call
    /// waits until a task has run. On `DispatchQueue.global()` (the cooperative pool's root queue on Linux) the
    /// task could run only once Dispatch's monitor had added a thread per blocked call, about one a second: the
    /// time limit ends that run.
    @Test(.timeLimit(.minutes(1)))
    func callsThatWaitLeaveTheCooperativePoolToTheTasks() async {
        let calls = 128
        let released = DispatchSemaphore(value: 0)
        let finished = DispatchGroup()
        for _ in 0..<calls {
            finished.enter()
            BlockingCall.run {
                released.wait()
                finished.leave()
            }
        }
        // Tasks of the pool, started while the calls wait.
        let ran = await withTaskGroup(of: Int.self) { group in
            for n in 0..<8 { group.addTask { n } }
            return await group.reduce(0, +)
        }
        #expect(ran == 28)
        for _ in 0..<calls { released.signal() }
        await withCheckedContinuation { continuation in
            finished.notify(queue: DispatchQueue(label: "blocking-call-tests")) { continuation.resume() }
        }
    }
}
