import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A one-shot signal a thread waits on until another thread hands it its turn (and the turn's number).
///
/// The waiter first polls its state for a bounded time (``spinNanoseconds``: a turn or a combined push's result
/// usually comes within a push or two, and putting a thread to sleep and waking it costs more than that), then
/// sleeps on a semaphore made only then. The signaller posts the semaphore only when the waiter sleeps: a
/// result handed to a polling waiter costs no system call on either side.
final class ThreadWakeup: Sendable {
    private static let waiting: UInt8 = 0
    private static let signalled: UInt8 = 1
    private static let sleeping: UInt8 = 2
    /// How long the waiter polls before it sleeps: a few pushes (about 2.5 µs each) and more than a sleeping
    /// thread's wake-up. Bounded, so a waiter whose signaller was descheduled gives its core back soon.
    static let spinNanoseconds: UInt64 = 20_000
    /// Polls between two reads of the clock.
    private static let pollsPerClockRead = 64

    private let state = Atomic<UInt8>(ThreadWakeup.waiting)
    /// What the waiter sleeps on, made by the waiter just before it sleeps (most waits never do).
    private let parking = AtomicLazyReference<DispatchSemaphore>()
    /// The number of the turn handed over; written before the signal, read after it.
    private let turn = Atomic<UInt64>(0)

    /// Hands the waiter turn number `turn`.
    func signal(_ turn: UInt64) {
        self.turn.store(turn, ordering: .relaxed)
        let previous = state.exchange(ThreadWakeup.signalled, ordering: .acquiringAndReleasing)
        // The waiter made its semaphore before it said it sleeps: the exchange that read `sleeping` sees it.
        guard previous == ThreadWakeup.sleeping, let semaphore = parking.load() else { return }
        semaphore.signal()
    }

    /// Waits for the signal, polling for `spinning` nanoseconds before it sleeps; returns the number of the turn
    /// handed over.
    func wait(spinning: UInt64 = ThreadWakeup.spinNanoseconds) -> UInt64 {
        let signalled = ThreadWakeup.poll(for: spinning) {
            state.load(ordering: .acquiring) == ThreadWakeup.signalled
        }
        if !signalled {
            let semaphore = parking.storeIfNil(DispatchSemaphore(value: 0))
            let (sleeps, _) = state.compareExchange(
                expected: ThreadWakeup.waiting,
                desired: ThreadWakeup.sleeping,
                ordering: .acquiringAndReleasing
            )
            // Signalled after the last poll: no sleep. Else the signaller posts once, after its exchange.
            if sleeps {
                semaphore.wait()
                _ = state.load(ordering: .acquiring)
            }
        }
        return turn.load(ordering: .relaxed)
    }

    /// Polls `condition` until it holds (`true`) or `nanoseconds` passed (`false`). The clock is read only after
    /// the first polls: a condition that holds at once costs no clock read.
    private static func poll(for nanoseconds: UInt64, until condition: () -> Bool) -> Bool {
        var deadline: UInt64 = 0
        while true {
            for _ in 0..<pollsPerClockRead where condition() { return true }
            let now = monotonicNanoseconds()
            if deadline == 0 {
                deadline = now &+ nanoseconds
            } else if now >= deadline {
                return false
            }
        }
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
