import ContainerKitTesting
import Foundation
import Testing

@testable import ContainerKitHTTP

/// Calls into FoundationNetworking that wait (for a session's work queue that libcurl holds) run off the
/// cooperative pool, so that calls waiting at once never stall the process's tasks.
struct BlockingCallTests {
    /// The name of the calling thread, as the kernel has it (Dispatch names its workers after their root queue);
    /// `nil` where it cannot be read.
    static func threadName() -> String? {
        (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8))
            .map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
    }

    /// More calls wait at once than the machine has cores, and tasks started meanwhile run. The calls run on
    /// threads of another root queue than the tasks' (on `DispatchQueue.global()`, the tasks' own on Linux, the
    /// tasks could run only once Dispatch's monitor had added a thread per blocked call, about one a second).
    @Test(.timeLimit(.minutes(1)))
    func callsThatWaitLeaveTheCooperativePoolToTheTasks() async {
        let calls = 16
        let released = DispatchSemaphore(value: 0)
        let started = AwaitableState<[String?]>([])
        let finished = DispatchGroup()
        for _ in 0..<calls {
            finished.enter()
            BlockingCall.run {
                started.update { $0.append(Self.threadName()) }
                released.wait()
                finished.leave()
            }
        }
        await started.wait(until: { $0.count == calls })
        // Tasks of the pool, started while every call waits.
        let taskThread = await Task.detached(priority: .medium) { Self.threadName() }.value
        let ran = await withTaskGroup(of: Int.self) { group in
            for n in 0..<8 { group.addTask { n } }
            return await group.reduce(0, +)
        }
        #expect(ran == 28)
        if let taskThread {
            #expect(!started.value.contains(taskThread), "a call ran on a thread of the tasks' root queue")
        }
        for _ in 0..<calls { released.signal() }
        await withCheckedContinuation { continuation in
            finished.notify(queue: DispatchQueue(label: "blocking-call-tests")) { continuation.resume() }
        }
    }
}
