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
/// result handed to a polling waiter costs no system call on either side. A waiter for whom a session was kept
/// for another thread's next push (``keptForAnother()``) polls on while such words keep coming, and takes the
/// session itself when that push is late (``wait(spinning:patience:claim:)``).
final class ThreadWakeup: Sendable {
    private static let waiting: UInt8 = 0
    private static let signalled: UInt8 = 1
    private static let sleeping: UInt8 = 2
    /// How long the waiter polls before it sleeps: a few pushes (about 2.5 µs each) and more than a sleeping
    /// thread's wake-up. Bounded, so a waiter whose signaller was descheduled gives its core back soon.
    static let spinNanoseconds: UInt64 = 20_000
    /// How often a waiter for whom a session was kept for another thread's next push (``keptForAnother()``)
    /// looks whether it was kept again since: when not, for one whole period, it takes the session. Longer than
    /// that thread's turnaround between two pushes (well under a microsecond in `containerkit-bench`, more when
    /// it is preempted: waiting 3 µs from the last word lost the session to the waiter too often), and short
    /// enough that a thread whose next push does not come holds a waiter back little (5 to 10 µs). The waiter
    /// reads the word once a period, not at every poll: the keeping thread then writes a line the waiter rarely
    /// took from it.
    static let keptPatience: UInt64 = 5_000
    /// Polls between two reads of the clock.
    private static let pollsPerClockRead = 64

    private let state = Atomic<UInt8>(ThreadWakeup.waiting)
    /// What the waiter sleeps on, made by the waiter just before it sleeps (most waits never do).
    private let parking = AtomicLazyReference<DispatchSemaphore>()
    /// The number of the turn handed over; written before the signal, read after it.
    private let turn = Atomic<UInt64>(0)
    /// Keeps ``keeps`` off the cache line of ``state`` (stored properties are laid out in order: 56 bytes after
    /// ``turn``), which the waiter polls: the thread for which the session is kept writes it at each of its turns.
    private let padding: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0)
    /// How many times the waiter was told that the session was kept for another thread's next push
    /// (``keptForAnother()``).
    private let keeps = Atomic<UInt32>(0)

    /// Hands the waiter turn number `turn`.
    func signal(_ turn: UInt64) {
        self.turn.store(turn, ordering: .relaxed)
        let previous = state.exchange(ThreadWakeup.signalled, ordering: .acquiringAndReleasing)
        // The waiter made its semaphore before it said it sleeps: the exchange that read `sleeping` sees it.
        guard previous == ThreadWakeup.sleeping, let semaphore = parking.load() else { return }
        semaphore.signal()
    }

    /// Tells the waiter that the session it waits for was kept for another thread's next push: it polls on, and
    /// claims the session (see ``wait(spinning:patience:claim:)``) if that push does not come in time.
    func keptForAnother() {
        keeps.wrappingAdd(1, ordering: .relaxed)
    }

    /// Whether the waiter has not gone to sleep: it polls (or was signalled). Read under the lock the waiter
    /// holds when it goes to sleep (``markSleeping()``), so that a session is kept only for a polling waiter.
    var isAwake: Bool { state.load(ordering: .acquiring) != ThreadWakeup.sleeping }

    /// The waiter says it sleeps from now on (under the lock ``isAwake`` is read under); `false` when it was
    /// signalled already.
    @discardableResult
    func markSleeping() -> Bool {
        state.compareExchange(
            expected: ThreadWakeup.waiting,
            desired: ThreadWakeup.sleeping,
            ordering: .acquiringAndReleasing
        ).exchanged
    }

    /// Waits for the signal, polling for `spinning` nanoseconds before it sleeps; returns the number of the turn
    /// handed over.
    func wait(spinning: UInt64 = ThreadWakeup.spinNanoseconds) -> UInt64 {
        wait(spinning: spinning, patience: .max) { sleeping in
            if sleeping { markSleeping() }
            return nil
        }
    }

    /// Waits for the signal as ``wait(spinning:)`` does, for a waiter that may be told the session was kept for
    /// another thread (``keptForAnother()``). Every `patience` nanoseconds it looks at those words: a new one
    /// starts the poll budget over; none since the last look, after one, and it calls `claim(false)`, which
    /// returns a turn number when it took the kept session. Before it sleeps it calls `claim(true)`, which, under
    /// the lock ``isAwake`` is read under, takes a kept session (a turn number) or calls ``markSleeping()``
    /// (`nil`).
    func wait(spinning: UInt64, patience: UInt64, claim: (_ beforeSleeping: Bool) -> UInt64?) -> UInt64 {
        var seen: UInt32 = 0  // a wake-up serves one wait: no word yet
        var lookAt: UInt64 = 0
        var sleepAt: UInt64 = 0
        while true {
            for _ in 0..<ThreadWakeup.pollsPerClockRead
            where state.load(ordering: .acquiring) == ThreadWakeup.signalled {
                return turn.load(ordering: .relaxed)
            }
            let now = ThreadWakeup.monotonicNanoseconds()
            if sleepAt == 0 {
                sleepAt = ThreadWakeup.deadline(now, after: spinning)
                lookAt = ThreadWakeup.deadline(now, after: patience)
            } else if now >= lookAt {
                lookAt = ThreadWakeup.deadline(now, after: patience)
                let word = keeps.load(ordering: .relaxed)
                if word != seen {
                    // The other thread's pushes go on.
                    seen = word
                    sleepAt = ThreadWakeup.deadline(now, after: spinning)
                } else if word != 0, let turn = claim(false) {
                    return turn
                }
            }
            if now >= sleepAt { break }
        }
        let semaphore = parking.storeIfNil(DispatchSemaphore(value: 0))
        if let turn = claim(true) { return turn }
        // Marked sleeping, unless signalled meanwhile: the signaller posts once, after its exchange read
        // `sleeping`.
        if state.load(ordering: .acquiring) == ThreadWakeup.sleeping {
            semaphore.wait()
            _ = state.load(ordering: .acquiring)
        }
        return turn.load(ordering: .relaxed)
    }

    /// `nanoseconds` after `now`; `.max` never comes.
    private static func deadline(_ now: UInt64, after nanoseconds: UInt64) -> UInt64 {
        let (sum, overflow) = now.addingReportingOverflow(nanoseconds)
        return overflow ? .max : sum
    }

    private static func monotonicNanoseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
