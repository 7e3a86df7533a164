import Synchronization

/// The pushes that arrived before any container was live, queued per data layer and replayed in order
/// once one is (delayed initialization).
///
/// Pushes are queued while no container is live and an open is in progress or
/// ``DelayedInitialization/isEnabled`` is set, and also while a data layer's queue is being replayed (so
/// that a new push cannot overtake the queued ones). A push made during the replay by the replay itself
/// (from a tag handler) is processed directly, as it would be without queueing.
///
/// The replay runs in the task that made a container live, once it holds no lock (``replayIfDue(_:)``):
/// the holder's loading in ``TagManager/open(id:openType:timeout:callback:)`` or ``TagManager/run()``, or
/// the caller of ``TagManager/add(_:)``. A push that finds a replay due and nobody replaying replays first.
///
/// Across all data layers at most ``DelayedInitialization/maximumTotalQueuedPushes`` pushes wait; a push
/// beyond that is dropped (``PushResult/dropped``), with one warning per waiting period and the count
/// logged at the replay.
final class DeferredPushes: Sendable {
    /// True while a push may have to be queued; a push that reads `false` goes straight through.
    let mayDefer = Atomic<Bool>(false)

    /// A queued push: its message, its event ID (with its hash; empty: none), and when it arrived (or happened,
    /// when its push said: seconds since 1970).
    struct Held {
        var message: ValueMap
        var eventID: String
        var eventIDHash: UInt64
        var eventTime: Double

        /// What stays in a queue's place once its push is dropped or taken (its message released).
        static let taken = Held(message: ValueMap(), eventID: "", eventIDHash: 0, eventTime: 0)

        /// The push to replay.
        var pending: DataLayer.Pending {
            DataLayer.Pending(
                message: message,
                event: nil,
                eventID: eventID,
                eventIDHash: eventIDHash,
                eventTime: eventTime
            )
        }
    }

    private struct Queue {
        let dataLayer: DataLayer
        var messages: [Held] = []
        var head = 0
        var dropped = 0

        /// Appends `message`, dropping the oldest beyond `limit`; returns whether this was the first drop.
        mutating func append(_ message: Held, limit: Int) -> Bool {
            messages.append(message)
            var firstDrop = false
            while messages.count - head > limit {
                messages[head] = .taken
                head += 1
                dropped += 1
                firstDrop = firstDrop || dropped == 1
            }
            if head > 64 && head * 2 > messages.count {
                messages.removeFirst(head)
                head = 0
            }
            return firstDrop
        }

        /// Takes the oldest message.
        mutating func next() -> Held? {
            guard head < messages.count else { return nil }
            defer {
                messages[head] = .taken
                head += 1
            }
            return messages[head]
        }
    }

    private struct State {
        var opensInProgress = 0
        var enabled = false
        var limit = DelayedInitialization().maximumQueuedPushes
        var available = false
        var queues: [ObjectIdentifier: Queue] = [:]
        /// The data layers with a queue, in the order their first push was queued, from `orderHead` on.
        var order: [ObjectIdentifier] = []
        var orderHead = 0
        var replaying = false
        var replayDue = false
        var totalLimit = DelayedInitialization().maximumTotalQueuedPushes
        var total = 0
        var droppedByTotal = 0

        var waiting: Bool { !available && (opensInProgress > 0 || enabled) }
        var mustReplay: Bool { !waiting && !queues.isEmpty && !replaying }

        /// Claims the replay if one is due and nobody is replaying.
        mutating func claimReplay() -> Bool {
            guard mustReplay else { return false }
            replaying = true
            return true
        }
    }

    private let state = Mutex(State())

    // MARK: Transitions

    /// Applies a new configuration.
    func configure(_ setting: DelayedInitialization, tagManager: TagManager) {
        let available = tagManager.hasLiveContainers
        update(tagManager) { state in
            state.enabled = setting.isEnabled
            state.limit = setting.maximumQueuedPushes
            state.totalLimit = setting.maximumTotalQueuedPushes
            state.available = available
        }
    }

    /// An open started: pushes wait until it resolves, if no container is live.
    func openStarted(_ tagManager: TagManager) {
        let available = tagManager.hasLiveContainers
        update(tagManager) { state in
            state.opensInProgress += 1
            state.available = available
        }
    }

    /// An open resolved (with or without a container).
    func openFinished(_ tagManager: TagManager) {
        update(tagManager) { state in state.opensInProgress = max(0, state.opensInProgress - 1) }
    }

    /// A container went live.
    func containerAdded(_ tagManager: TagManager) {
        guard mayDefer.load(ordering: .acquiring) else { return }
        update(tagManager) { state in state.available = true }
    }

    private func update(_ tagManager: TagManager, _ change: (inout State) -> Void) {
        state.withLock { state in
            change(&state)
            mayDefer.store(state.waiting || !state.queues.isEmpty, ordering: .releasing)
        }
    }

    /// Replays the queues in the calling task if a replay is due and nobody else is replaying. Call it
    /// holding no lock: the replayed pushes run tags.
    func replayIfDue(_ tagManager: TagManager) {
        guard mayDefer.load(ordering: .acquiring) else { return }
        if state.withLock({ $0.claimReplay() }) { replay(tagManager) }
    }

    // MARK: Queueing

    /// Queues `push` for `dataLayer` if it must wait; returns the result of a deferred push then, and `nil` when
    /// the push should go through.
    func hold(_ push: consuming Held, for dataLayer: DataLayer) -> PushResult? {
        let key = ObjectIdentifier(dataLayer)
        if DataLayer.replayingSession == key { return nil }
        if DataLayer.replayingSession == nil { replayIfDue(dataLayer.tagManager) }
        let outcome = state.withLock { state -> (firstDrop: Bool, limit: Int, overTotal: Bool)? in
            guard state.waiting || state.queues[key] != nil else { return nil }
            if state.total >= state.totalLimit,
                state.queues[key].map({ $0.messages.count - $0.head < state.limit }) ?? true
            {
                state.droppedByTotal += 1
                return (state.droppedByTotal == 1, state.totalLimit, true)
            }
            if state.queues[key] == nil {
                state.queues[key] = Queue(dataLayer: dataLayer)
                state.order.append(key)
            }
            let before = state.queues[key].map { $0.messages.count - $0.head } ?? 0
            let firstDrop = state.queues[key]?.append(push, limit: state.limit) ?? false
            state.total += (state.queues[key].map { $0.messages.count - $0.head } ?? 0) - before
            return (firstDrop, state.limit, false)
        }
        guard let outcome else { return nil }
        if outcome.overTotal {
            if outcome.firstDrop {
                dataLayer.tagManager.logger.warning(
                    "dropped a push waiting for a container: the cap across all sessions",
                    metadata: ["session": dataLayer.sessionID, "limit": String(outcome.limit)]
                )
            }
            var result = PushResult()
            result.deferred = true
            result.dropped = true
            return result
        }
        if outcome.firstDrop {
            dataLayer.tagManager.logger.warning(
                "dropped the oldest push waiting for a container: the cap per session",
                metadata: ["session": dataLayer.sessionID, "limit": String(outcome.limit)]
            )
        }
        var result = PushResult()
        result.deferred = true
        return result
    }

    /// Replays every queue, oldest push first, one data layer after another.
    private func replay(_ tagManager: TagManager) {
        while true {
            let next = state.withLock { state -> (DataLayer?, Held?, Int)? in
                while !state.waiting, state.orderHead < state.order.count {
                    let key = state.order[state.orderHead]
                    if let message = state.queues[key]?.next(), let dataLayer = state.queues[key]?.dataLayer {
                        state.total -= 1
                        return (dataLayer, message, 0)
                    }
                    let finished = state.queues.removeValue(forKey: key)
                    state.orderHead += 1
                    if let finished, finished.dropped > 0 { return (finished.dataLayer, nil, finished.dropped) }
                }
                state.order.removeFirst(state.orderHead)
                state.orderHead = 0
                state.replaying = false
                if state.queues.isEmpty && state.droppedByTotal > 0 {
                    defer { state.droppedByTotal = 0 }
                    return (nil, nil, state.droppedByTotal)
                }
                mayDefer.store(state.waiting || !state.queues.isEmpty, ordering: .releasing)
                return nil
            }
            guard let (dataLayer, message, dropped) = next else { return }
            guard let dataLayer else {
                tagManager.logger.warning(
                    "pushes were dropped while waiting for a container: the cap across all sessions",
                    metadata: ["dropped": String(dropped)]
                )
                continue
            }
            guard let held = message else {
                tagManager.logger.warning(
                    "pushes were dropped while waiting for a container",
                    metadata: ["session": dataLayer.sessionID, "dropped": String(dropped)]
                )
                continue
            }
            DataLayer.$replayingSession.withValue(ObjectIdentifier(dataLayer)) {
                _ = dataLayer.push(held.pending)
            }
        }
    }
}
