/// The turn-taking of one session's pushes, as a state machine without I/O or locks: ``DataLayer`` keeps
/// one under its lock and performs what the transitions return (resume a waiter) after unlocking.
///
/// A session is ``Phase/free`` or ``Phase/busy(turn:)`` — one caller holds turn number `turn` and
/// processes its push. Another caller arriving meanwhile waits (first come, first served); a push made
/// inside the turn's processing (it carries the turn's number) is nested: queued and processed by the
/// holder after its own push. When the holder has nothing nested left, the turn goes directly to the first
/// waiter under a new number (nobody can overtake it), or the session becomes free.
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
    }

    private(set) var phase = Phase.free
    /// The number of the last turn given (each turn gets a new one).
    private var lastTurn: UInt64 = 0
    private var nested = HeadIndexQueue<Job>()
    private var waiters = HeadIndexQueue<Waiter>()

    /// Callers waiting for their turn.
    var waitingCount: Int { waiters.count }
    /// Nested pushes not processed yet.
    var nestedCount: Int { nested.count }

    /// A push of `job` arrives; `enclosing` is the turn of this session the caller runs inside, if any.
    mutating func arrive(_ job: Job, enclosing: UInt64?) -> Arrival {
        switch phase {
        case .free:
            return .acquired(take())
        case .busy(let turn):
            guard let enclosing, enclosing == turn else { return .busy }
            nested.append(job)
            return .nested
        }
    }

    /// A caller that found the session busy waits: the turn number when the session is free now, or `nil`
    /// when `waiter` was queued (``next()`` hands it a turn later).
    mutating func wait(_ waiter: Waiter) -> UInt64? {
        guard case .busy = phase else { return take() }
        waiters.append(waiter)
        return nil
    }

    /// The holder asks for its next step: a nested push, or the end of its turn.
    mutating func next() -> Step {
        if let job = nested.popFirst() { return .nested(job) }
        guard let waiter = waiters.popFirst() else {
            phase = .free
            return .ended(handOver: nil)
        }
        // Handed over directly: the session stays busy, under a new number that ends the old turn for any
        // push still carrying it.
        return .ended(handOver: (waiter, take()))
    }

    /// Drops the nested pushes still queued (the loop guard); returns how many.
    mutating func dropNested() -> Int { nested.removeAll() }

    private mutating func take() -> UInt64 {
        lastTurn &+= 1
        phase = .busy(turn: lastTurn)
        return lastTurn
    }
}

extension SessionTurnstile: Sendable where Job: Sendable, Waiter: Sendable {}
extension SessionTurnstile.Step: Sendable where Job: Sendable, Waiter: Sendable {}
