/// The turn-taking of one session's pushes, as a state machine without I/O or locks: ``DataLayer`` keeps
/// one under its lock and performs what the transitions return (resume a waiter) after unlocking.
///
/// A session is ``Phase/free`` or ``Phase/busy(turn:)`` — one caller holds turn number `turn` and
/// processes its push. Another caller arriving meanwhile waits (first come, first served); a push made
/// inside the turn's processing (it carries the turn's number) is nested: queued and processed by the
/// holder after its own push. When the holder has nothing nested left, the turn goes directly to the first
/// waiter under a new number (nobody can overtake it), or the session becomes free — or, when the holder is a
/// thread (`holder` is not 0) and the first waiter may wait a little longer, the session is
/// ``Phase/kept(for:)`` for the holder's thread: its next push takes the next turn ahead of the waiters (a
/// stretch of at most ``maximumStretch`` turns), so that the session's data stays on one core; the first waiter
/// may take the kept session (``claim(by:)``) when that push does not come.
///
/// ```swift
/// var turnstile = SessionTurnstile<String, Int>()
/// turnstile.arrive("a", enclosing: nil)   // .acquired(1)
/// turnstile.arrive("b", enclosing: nil)   // .busy: the caller waits
/// turnstile.wait(7)                       // nil: queued
/// turnstile.arrive("c", enclosing: 1)     // .nested
/// turnstile.next()                        // .nested("c")
/// turnstile.next()                        // .handOver(7, turn: 2)
/// ```
struct SessionTurnstile<Job, Waiter> {
    /// Whether some caller holds the turn.
    enum Phase: Equatable {
        case free
        /// A caller holds turn number `turn`.
        case busy(turn: UInt64)
        /// No push is processed, and the next push of thread `thread` takes the turn ahead of the waiters.
        case kept(for: UInt)
    }

    /// What an arriving push does.
    enum Arrival: Equatable {
        /// It holds turn number `turn` now: process it.
        case acquired(UInt64)
        /// It was queued behind the push being processed (it was made inside that turn).
        case nested
        /// Another caller holds the turn: wait for it (``wait(_:)``).
        case busy
    }

    /// What the holder does after a push.
    enum Step {
        /// Process this nested push next.
        case nested(Job)
        /// The turn ended: resume `waiter` with turn number `turn`, or with `nil` the session is free.
        case ended(handOver: (waiter: Waiter, turn: UInt64)?)
        /// The turn ended and the session is kept for the holder's thread; `waiter`, the first waiting, is told.
        case kept(waiter: Waiter)
    }

    /// The most turns one thread takes in a row while others wait (``Phase/kept(for:)``): a polling waiter waits
    /// for at most this many pushes of that thread.
    static var maximumStretch: Int { 32 }

    private(set) var phase = Phase.free
    /// How many turns in a row the current turn's thread took, this one included: 1 unless it took them while
    /// the session was kept for it. (A byte beside ``phase``, in its padding: a session grows by nothing.)
    private var stretch: UInt8 = 0
    /// The number of the last turn given (each turn gets a new one).
    private var lastTurn: UInt64 = 0
    private var nested = HeadIndexQueue<Job>()
    private var waiters = HeadIndexQueue<Waiter>()

    /// Callers waiting for their turn.
    var waitingCount: Int { waiters.count }
    /// Nested pushes not processed yet.
    var nestedCount: Int { nested.count }

    /// A push of `job` arrives; `enclosing` is the turn of this session the caller runs inside, if any;
    /// `thread` identifies the calling thread when it blocks until its turn (0: a task).
    mutating func arrive(_ job: Job, enclosing: UInt64?, thread: UInt = 0) -> Arrival {
        switch phase {
        case .free:
            return .acquired(take())
        case .busy(let turn):
            guard let enclosing, enclosing == turn else { return .busy }
            nested.append(job)
            return .nested
        case .kept(let keeper):
            guard thread != 0, thread == keeper else { return .busy }
            let taken = stretch
            let turn = take()
            stretch = taken &+ 1
            return .acquired(turn)
        }
    }

    /// A caller that found the session busy waits: the turn number when the session is free now, or `nil`
    /// when `waiter` was queued (``next()`` hands it a turn later).
    mutating func wait(_ waiter: Waiter) -> UInt64? {
        guard case .free = phase else {
            waiters.append(waiter)
            return nil
        }
        return take()
    }

    /// The holder asks for its next step: a nested push, or the end of its turn. `holder` identifies its
    /// thread when the session may be kept for that thread's next push (0: never), and `mayWait` says whether
    /// the first waiter may wait for it.
    mutating func next(holder: UInt = 0, mayWait: (Waiter) -> Bool = { _ in false }) -> Step {
        if let job = nested.popFirst() { return .nested(job) }
        guard let waiter = waiters.first else {
            phase = .free
            return .ended(handOver: nil)
        }
        if holder != 0, Int(stretch) < Self.maximumStretch, mayWait(waiter) {
            phase = .kept(for: holder)
            return .kept(waiter: waiter)
        }
        // Handed over directly: the session stays busy, under a new number that ends the old turn for any
        // push still carrying it.
        _ = waiters.popFirst()
        return .ended(handOver: (waiter, take()))
    }

    /// The first waiter takes the session kept for another thread (whose next push did not come): its turn
    /// number, or `nil` when the session is not kept or `isFirst` says the first waiter is another.
    mutating func claim(by isFirst: (Waiter) -> Bool) -> UInt64? {
        guard case .kept = phase, let waiter = waiters.first, isFirst(waiter) else { return nil }
        _ = waiters.popFirst()
        return take()
    }

    /// Drops the nested pushes still queued (the loop guard); returns how many.
    mutating func dropNested() -> Int { nested.removeAll() }

    private mutating func take() -> UInt64 {
        lastTurn &+= 1
        phase = .busy(turn: lastTurn)
        stretch = 1
        return lastTurn
    }
}

extension SessionTurnstile: Sendable where Job: Sendable, Waiter: Sendable {}
extension SessionTurnstile.Step: Sendable where Job: Sendable, Waiter: Sendable {}
