import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A one-shot signal a thread waits on until another thread hands it its turn (and the turn's number).
///
/// The waiter first spins briefly (a turn usually comes within a push's few microseconds, and waking a
/// sleeping thread costs more than that), then sleeps on a condition variable. The signaller only takes
/// the mutex when the waiter is asleep.
final class ThreadWakeup: Sendable {
    private static let waiting: UInt8 = 0
    private static let signalled: UInt8 = 1
    private static let sleeping: UInt8 = 2
    /// How many times the waiter checks before it sleeps (tens of microseconds).
    private static let spins = 4_000

    private let state = Atomic<UInt8>(ThreadWakeup.waiting)
    private let condition = ConditionBox()
    /// The number of the turn handed over; written before the signal, read after it.
    private let turn = Atomic<UInt64>(0)

    /// Hands the waiter turn number `turn`.
    func signal(_ turn: UInt64) {
        self.turn.store(turn, ordering: .relaxed)
        let previous = state.exchange(ThreadWakeup.signalled, ordering: .acquiringAndReleasing)
        guard previous == ThreadWakeup.sleeping else { return }
        condition.lock()
        condition.broadcast()
        condition.unlock()
    }

    /// Waits for the signal; returns the number of the turn handed over.
    func wait() -> UInt64 {
        for _ in 0..<ThreadWakeup.spins where state.load(ordering: .acquiring) == ThreadWakeup.signalled {
            return turn.load(ordering: .relaxed)
        }
        condition.lock()
        defer { condition.unlock() }
        let (slept, _) = state.compareExchange(
            expected: ThreadWakeup.waiting,
            desired: ThreadWakeup.sleeping,
            ordering: .acquiringAndReleasing
        )
        if slept {
            while state.load(ordering: .acquiring) != ThreadWakeup.signalled { condition.wait() }
        }
        return turn.load(ordering: .relaxed)
    }
}

/// A pthread mutex and condition variable with a stable address.
///
/// `@unchecked`: it holds only the two pthread objects, which are made to be shared between threads; the
/// pointers never change after `init`.
final class ConditionBox: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    func wait() { pthread_cond_wait(cond, mutex) }
    func broadcast() { pthread_cond_broadcast(cond) }
}
