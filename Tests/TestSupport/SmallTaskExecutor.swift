import Foundation

/// A task executor with a few threads of its own, the way a NIO-based server runs request tasks: many tasks
/// take turns on each thread, and a task that suspends may resume on another thread than the one it left.
///
/// ```swift
/// let answers = await SmallTaskExecutor.run(threads: 2) { executor in
///     await withTaskGroup(of: Int.self) { group in
///         for i in 0..<64 { group.addTask(executorPreference: executor) { i } }
///         return await group.reduce(0, +)
///     }
/// }
/// ```
public final class SmallTaskExecutor: TaskExecutor, @unchecked Sendable {
    // Guarded by `condition`.
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var head = 0
    private var stopping = false
    private var running = 0
    private var stopped: CheckedContinuation<Void, Never>?

    private init() {}

    /// Runs `body` with an executor of `threads` threads, and stops them (after their queued jobs) when it
    /// returns.
    public static func run<T: Sendable>(
        threads: Int,
        _ body: @Sendable (SmallTaskExecutor) async throws -> T
    ) async rethrows -> T {
        let executor = SmallTaskExecutor()
        executor.start(threads)
        do {
            let result = try await withTaskExecutorPreference(executor) { try await body(executor) }
            await executor.stop()
            return result
        } catch {
            await executor.stop()
            throw error
        }
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    private func start(_ threads: Int) {
        running = threads
        for i in 0..<threads {
            let thread = Thread { [self] in work() }
            thread.name = "small-executor-\(i)"
            thread.start()
        }
    }

    private func work() {
        while let job = next() { job.runSynchronously(on: asUnownedTaskExecutor()) }
        condition.lock()
        running -= 1
        let last = running == 0 ? stopped : nil
        condition.unlock()
        last?.resume()
    }

    /// The next job, waiting for one; `nil` once stopping with nothing left.
    private func next() -> UnownedJob? {
        condition.lock()
        defer { condition.unlock() }
        while head == jobs.count && !stopping { condition.wait() }
        guard head < jobs.count else { return nil }
        let job = jobs[head]
        head += 1
        if head == jobs.count {
            jobs.removeAll(keepingCapacity: true)
            head = 0
        }
        return job
    }

    private func stop() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            condition.lock()
            stopping = true
            condition.broadcast()
            if running == 0 {
                condition.unlock()
                continuation.resume()
            } else {
                stopped = continuation
                condition.unlock()
            }
        }
    }
}
