import ContainerKit
import ContainerKitBraze
import Foundation
import HTTPTypes
import Synchronization

/// One traced push as the debug page keeps it.
struct DebugPushEntry: Sendable {
    /// Its number among the user's traced pushes, from 1 (the server-sent event's `id`).
    let sequence: Int
    /// When it was traced.
    let time: Date
    /// Whose push it was, and whether the request carried the debug header (``DebugHub/header``) rather than the
    /// user being followed.
    let userID: String, viaHeader: Bool
    /// What the push did (its records' delivery state updated as it becomes known).
    var trace: PushTrace
}

/// Why a push is traced.
enum DebugTracing: Sendable {
    /// Its user is followed (a page asked for them).
    case followed
    /// The request carried the debug header with the token.
    case header
}

/// What a live stream of a user's page receives.
enum DebugStreamMessage: Sendable {
    /// A traced push.
    case push(DebugPushEntry)
    /// A kept push whose records' delivery state changed (``DebugDeliveryTracker``).
    case delivery(DebugPushEntry)
    /// A comment line that keeps the connection open and tells a dead one.
    case heartbeat
}

/// The debug page's state: who is followed, each followed user's last pushes (a ring), the open streams, and the
/// counts and samples of the overview (``DebugOverview``, which counts every push through the tag manager's
/// observer). Every bound is ``DebugSettings``'.
///
/// **The push path.** ``tracing(userID:headers:)`` is what every push asks: with nobody followed it reads one
/// atomic (a 64-bit filter of the followed users, zero) and looks for the debug header; with someone followed it also
/// hashes the user id, and takes the lock only when the user's bit is set — so following
/// one user costs the others' pushes no lock (but one in 64). Only a push it answers for is traced,
/// ``record(_:userID:tracing:)``ed and ``ended(_:)``; while no such push is in flight, the destination's answers of the
/// others' records cost an atomic load or two (``noteDelivery(_:)``, ``DebugDeliveryTracker``). Recording appends to
/// the user's ring and yields to that user's open streams, each an `AsyncStream` with a bounded buffer: a stream that
/// cannot take a message (a browser that does not read) is finished — its page reconnects and catches up from the
/// ring — so a push never waits for a browser.
///
/// **Following.** ``follow(_:)`` (a request for the user's page) starts following a user, up to
/// ``DebugSettings/maximumFollowedUsers``; past it the user followed the longest ago without an open page makes
/// room, else the follow is refused. A user stays followed while a stream of theirs is open and for
/// ``DebugSettings/followGrace`` after the last one closed or the page was last requested (``sweep()``).
final class DebugHub: Sendable {
    /// The header that asks for a request's push to be traced whoever its user is (as sGTM preview's header):
    /// `X-TagService-Debug: <token>`.
    static let header = HTTPField.Name("X-TagService-Debug")!

    let settings: DebugSettings
    private let token: [UInt8]
    /// One bit per followed user, of 64, chosen by the hash of their id (``DebugFilterBit``): the one atomic a push
    /// reads. Zero: nobody is followed. A clear bit: the push's user is not followed, known without the lock; a set
    /// bit (the user, or another user whose id falls on the same bit: one in 64 per followed user) takes the lock to
    /// be sure.
    private let followedFilter = Atomic<UInt64>(0)
    /// How many traced pushes are in flight: asked for by ``tracing(userID:headers:)`` and not yet ``ended(_:)``.
    /// While any is, a destination's answers of records not tracked are remembered (a record of such a push can be
    /// answered before the push is recorded); while none is, they are not looked at (``DebugDeliveryTracker``).
    private let tracesInFlight = Atomic<Int>(0)
    private let state: Mutex<State>
    /// Monotonic time (tests move it by hand).
    let now: @Sendable () -> Duration
    /// The overview's counts and samples.
    let overview: DebugOverview
    /// The delivery state of the kept pushes' records.
    let deliveries = DebugDeliveryTracker()

    private struct Followed {
        var entries: [DebugPushEntry] = []
        var nextSequence = 1
        var openStreams = 0
        var lastActive: Duration
        let since: Date
        var subscribers: [Int: AsyncStream<DebugStreamMessage>.Continuation] = [:]
    }

    private struct State {
        var users: [String: Followed] = [:]
        var streams = 0
        /// The open streams, by number.
        var live = Set<Int>()
        var nextStream = 0
        var closed = false
    }

    /// Why a follow or a stream was refused.
    enum Refusal: Error, Equatable {
        /// ``DebugSettings/maximumFollowedUsers`` users are followed, each with an open page.
        case tooManyUsers(Int)
        /// ``DebugSettings/maximumStreams`` streams are open.
        case tooManyStreams(Int)
        /// The service is shutting down.
        case closed
    }

    init(settings: DebugSettings, now: (@Sendable () -> Duration)? = nil) {
        self.settings = settings
        token = Array((settings.token ?? "").utf8)
        if let now {
            self.now = now
        } else {
            let start = ContinuousClock.now
            self.now = { ContinuousClock.now - start }
        }
        state = Mutex(State())
        overview = DebugOverview(now: self.now)
    }

    /// Whether `presented` is the token, in time that does not depend on where they differ.
    func accepts(_ presented: some Sequence<UInt8>) -> Bool {
        !token.isEmpty && WriteKeys.constantTimeEquals(Array(presented), token)
    }

    // MARK: The push path

    /// Whether (and why) a push for `userID` arriving with `headers` is traced; `nil`: it is not. A request that
    /// carries the debug header with the token starts following its user. A push it answers for is in flight until
    /// ``ended(_:)``: call it once the push is recorded or failed (a push never ended only costs the delivery
    /// answers' remembering from then on, never a wrong delivery state).
    func tracing(userID: String, headers: HTTPFields) -> DebugTracing? {
        if let presented = headers[Self.header] {
            if accepts(presented.utf8), (try? follow(userID)) != nil { return began(.header) }
        }
        let followed = followedFilter.load(ordering: .relaxed)
        guard followed != 0, followed & DebugFilterBit.mask(of: userID) != 0 else { return nil }
        return state.withLock { $0.users[userID] != nil } ? began(.followed) : nil
    }

    private func began(_ tracing: DebugTracing) -> DebugTracing {
        tracesInFlight.wrappingAdd(1, ordering: .sequentiallyConsistent)
        return tracing
    }

    /// The traced push that `tracing` was answered for has ended: recorded (``record(_:userID:tracing:)``, its records
    /// tracked) or failed.
    func ended(_ tracing: DebugTracing) {
        tracesInFlight.wrappingSubtract(1, ordering: .sequentiallyConsistent)
    }

    /// How many traced pushes are in flight (asked for and not yet ended).
    var tracedPushesInFlight: Int { tracesInFlight.load(ordering: .sequentiallyConsistent) }

    /// Publishes who is followed (the filter) after `state.users` changed; under the lock.
    private func publishFollowed(_ state: State) {
        var filter: UInt64 = 0
        for userID in state.users.keys { filter |= DebugFilterBit.mask(of: userID) }
        followedFilter.store(filter, ordering: .relaxed)
    }

    /// Keeps `trace` as the user's newest push and sends it to their open streams. Its records sent to the delivery
    /// pipeline show `queued` until the destination answers for them (``noteDelivery(_:)``).
    func record(_ trace: PushTrace, userID: String, tracing: DebugTracing) {
        let time = Date()
        var dropped: [AsyncStream<DebugStreamMessage>.Continuation] = []
        var trace = trace
        var queued: [String] = []
        for i in trace.records.indices {
            guard trace.records[i].state == .sent, trace.records[i].durability != .failed,
                let id = trace.records[i].recordID
            else { continue }
            trace.records[i].delivery = .queued
            queued.append(id)
        }
        state.withLock { state in
            guard var user = state.users[userID] else { return }
            if !queued.isEmpty {
                // Answered already (between the commit and now): shown as answered.
                let known = deliveries.track(queued, userID: userID, sequence: user.nextSequence)
                for i in trace.records.indices {
                    guard let id = trace.records[i].recordID, let outcome = known[id] else { continue }
                    trace.records[i].delivery = outcome.delivery
                    trace.records[i].deliveryReason = outcome.reason
                }
            }
            let entry = DebugPushEntry(
                sequence: user.nextSequence,
                time: time,
                userID: userID,
                viaHeader: tracing == .header,
                trace: trace
            )
            user.nextSequence += 1
            user.entries.append(entry)
            if user.entries.count > settings.pushesPerUser {
                let evicted = user.entries.prefix(user.entries.count - settings.pushesPerUser)
                deliveries.forget(evicted.flatMap { $0.trace.records.compactMap(\.recordID) })
                user.entries.removeFirst(evicted.count)
            }
            // Yielding never waits: a stream whose buffer is full is finished (its page reconnects and catches up).
            for (id, continuation) in user.subscribers {
                if case .dropped = continuation.yield(.push(entry)) {
                    user.subscribers[id] = nil
                    dropped.append(continuation)
                }
            }
            state.users[userID] = user
        }
        for continuation in dropped { continuation.finish() }
    }

    // MARK: Following

    /// Starts following `userID` (or, when followed, marks them active now).
    /// - Returns: when the user has been followed since.
    @discardableResult
    func follow(_ userID: String) throws(Refusal) -> Date {
        let now = now()
        let result: Result<Date, Refusal> = state.withLock { state in
            if state.closed { return .failure(.closed) }
            if state.users[userID] != nil {
                state.users[userID]!.lastActive = now
                return .success(state.users[userID]!.since)
            }
            _ = expire(&state, now: now)
            if state.users.count >= settings.maximumFollowedUsers {
                // The user followed the longest ago without an open page makes room.
                guard
                    let idle = state.users.filter({ $0.value.openStreams == 0 })
                        .min(by: { $0.value.lastActive < $1.value.lastActive })?.key
                else { return .failure(.tooManyUsers(settings.maximumFollowedUsers)) }
                unfollow(idle, in: &state)
            }
            let since = Date()
            state.users[userID] = Followed(lastActive: now, since: since)
            publishFollowed(state)
            return .success(since)
        }
        return try result.get()
    }

    /// Stops following users without an open stream whose grace period is over; returns how many.
    @discardableResult
    func sweep() -> Int {
        let now = now()
        return state.withLock { expire(&$0, now: now) }
    }

    private func expire(_ state: inout State, now: Duration) -> Int {
        let expired = state.users.filter {
            $0.value.openStreams == 0 && now - $0.value.lastActive > settings.followGrace
        }
        .map(\.key)
        for user in expired { unfollow(user, in: &state) }
        publishFollowed(state)
        return expired.count
    }

    /// Stops following `userID`, forgetting their kept pushes' records.
    private func unfollow(_ userID: String, in state: inout State) {
        guard let user = state.users.removeValue(forKey: userID) else { return }
        deliveries.forget(user.entries.flatMap { $0.trace.records.compactMap(\.recordID) })
    }

    // MARK: Delivery

    /// Notes what the delivery pipeline's destination answered: the kept records it answered for get their
    /// delivery state (`delivered`, `retrying` with the error, `rejected` with the reason), and the pages showing
    /// their pushes an update. With nobody followed it reads one atomic; a browser that cannot take the update is
    /// dropped, as for a push. While no traced push is in flight, an answer of no tracked record costs a load of the
    /// tracked records' filter and a hash of each record's ID (nothing at all while no record is tracked).
    func noteDelivery(_ result: DeliveryResult) {
        guard followedFilter.load(ordering: .relaxed) != 0 else { return }
        // A push's records are committed after its tracing question counted it in flight, and answered after their
        // commit: a count of 0 read here comes after the push ended, so after its records were tracked.
        let remembering = tracesInFlight.load(ordering: .sequentiallyConsistent) > 0
        let updates = deliveries.updates(for: result, remembering: remembering)
        guard !updates.isEmpty else { return }
        var dropped: [AsyncStream<DebugStreamMessage>.Continuation] = []
        state.withLock { state in
            var changed = Set<DebugDeliveryTracker.Location>()
            for update in updates {
                let location = update.location
                guard let first = state.users[location.userID]?.entries.first?.sequence,
                    state.users[location.userID]!.entries.indices.contains(location.sequence - first)
                else { continue }
                // In place: the ring is not copied.
                let index = location.sequence - first
                for i in state.users[location.userID]!.entries[index].trace.records.indices
                where state.users[location.userID]!.entries[index].trace.records[i].recordID == update.recordID {
                    state.users[location.userID]!.entries[index].trace.records[i].delivery = update.outcome.delivery
                    state.users[location.userID]!.entries[index].trace.records[i].deliveryReason =
                        update.outcome.reason
                }
                changed.insert(location)
            }
            for location in changed {
                guard let user = state.users[location.userID], let first = user.entries.first?.sequence else {
                    continue
                }
                let entry = user.entries[location.sequence - first]
                for (id, continuation) in user.subscribers {
                    if case .dropped = continuation.yield(.delivery(entry)) {
                        state.users[location.userID]!.subscribers[id] = nil
                        dropped.append(continuation)
                    }
                }
            }
        }
        for continuation in dropped { continuation.finish() }
    }

    /// Whether `userID` is followed.
    func isFollowed(_ userID: String) -> Bool { state.withLock { $0.users[userID] != nil } }

    /// The followed users, the most recently active first.
    var followedUsers: [(userID: String, since: Date, pushes: Int, openStreams: Int)] {
        state.withLock { state in
            state.users.sorted { $0.value.lastActive > $1.value.lastActive }.map {
                ($0.key, $0.value.since, $0.value.entries.count, $0.value.openStreams)
            }
        }
    }

    /// The user's kept pushes, the newest first (empty when not followed).
    func pushes(of userID: String) -> [DebugPushEntry] {
        state.withLock { $0.users[userID]?.entries.reversed() ?? [] }
    }

    /// How many streams are open.
    var openStreams: Int { state.withLock { $0.streams } }

    // MARK: Streams

    /// Opens a live stream of `userID`'s pushes (following them), starting with the kept pushes numbered after
    /// `after`. The stream counts as an open page until it ends; it ends when the browser goes, when it falls
    /// behind by more than its buffer, or at ``close()``.
    func subscribe(_ userID: String, after: Int) throws(Refusal) -> Subscription {
        try follow(userID)
        let now = now()
        let (stream, continuation) = AsyncStream<DebugStreamMessage>.makeStream(
            bufferingPolicy: .bufferingOldest(settings.pushesPerUser + 16)
        )
        let id = state.withLock { state in
            defer { state.nextStream += 1 }
            return state.nextStream
        }
        continuation.onTermination = { [weak self] _ in self?.ended(stream: id, of: userID) }
        let refusal: Refusal? = state.withLock { state in
            if state.closed { return .closed }
            guard state.streams < settings.maximumStreams else { return .tooManyStreams(settings.maximumStreams) }
            guard state.users[userID] != nil else { return .closed }
            state.streams += 1
            state.live.insert(id)
            state.users[userID]!.openStreams += 1
            state.users[userID]!.lastActive = now
            state.users[userID]!.subscribers[id] = continuation
            for entry in state.users[userID]!.entries where entry.sequence > after {
                continuation.yield(.push(entry))
            }
            return nil
        }
        if let refusal {
            continuation.finish()
            throw refusal
        }
        return Subscription(messages: stream) { [weak self] in self?.ended(stream: id, of: userID) }
    }

    /// An open stream: its messages, and how to end it (its response ended: the browser went).
    struct Subscription: Sendable {
        let messages: AsyncStream<DebugStreamMessage>
        let end: @Sendable () -> Void
    }

    private func ended(stream id: Int, of userID: String) {
        let now = now()
        let continuation: AsyncStream<DebugStreamMessage>.Continuation? = state.withLock { state in
            guard state.live.remove(id) != nil else { return nil }
            state.streams -= 1
            guard state.users[userID] != nil else { return nil }
            state.users[userID]!.openStreams -= 1
            state.users[userID]!.lastActive = now
            return state.users[userID]!.subscribers.removeValue(forKey: id)
        }
        continuation?.finish()
    }

    /// Sends a heartbeat to every open stream (one that cannot take it is finished).
    func heartbeat() {
        let dropped = state.withLock { state in
            var dropped: [AsyncStream<DebugStreamMessage>.Continuation] = []
            for userID in state.users.keys {
                for (id, continuation) in state.users[userID]!.subscribers {
                    if case .dropped = continuation.yield(.heartbeat) {
                        state.users[userID]!.subscribers[id] = nil
                        dropped.append(continuation)
                    }
                }
            }
            return dropped
        }
        for continuation in dropped { continuation.finish() }
    }

    /// Ends every stream and refuses new ones (graceful shutdown: the debug listener's open responses end).
    func close() {
        let continuations = state.withLock { state in
            state.closed = true
            var all: [AsyncStream<DebugStreamMessage>.Continuation] = []
            for userID in state.users.keys {
                all += state.users[userID]!.subscribers.values
                state.users[userID]!.subscribers = [:]
            }
            return all
        }
        for continuation in continuations { continuation.finish() }
    }
}
