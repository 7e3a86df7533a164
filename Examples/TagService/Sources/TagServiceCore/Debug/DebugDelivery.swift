import ContainerKit
import ContainerKitBraze
import Synchronization

/// Where the records of followed users' pushes are on their way to the destination: the page's records show
/// `queued`, then `delivered`, `retrying` (with the error) or `rejected` (with the reason) as the delivery pipeline's
/// destination answers (``DebugObservedDestination``).
///
/// It tracks the records of the pushes kept in the followed users' rings only (``track(_:userID:sequence:)`` when a
/// push is recorded, ``forget(_:)`` when it leaves the ring), so its size is bounded by the rings'.
///
/// **What an answer costs the others.** The tracked records' IDs set bits of a 64-bit filter (an atomic, by the hash
/// of the ID). An answer is looked at in one of two ways (``updates(for:remembering:)``):
/// - while no traced push is in flight (the usual case, ``DebugHub``'s count): only the tracked records matter. With
///   the filter clear (nothing tracked, or every tracked record settled) the answer costs one atomic load; else each
///   answered record's ID is hashed, and only an answer with a record on a set bit takes the lock to look it up.
/// - while a traced push is in flight (between its tracing question and its end): a record of that push can be
///   answered before the push is recorded (the pipeline can deliver it between the commit and the push's answer),
///   so every answered record not tracked is remembered among the last ``recentCapacity`` answers, and applied
///   when its push is recorded.
final class DebugDeliveryTracker: Sendable {
    /// Where a tracked record's push is kept.
    struct Location: Sendable, Hashable {
        var userID: String
        var sequence: Int
    }

    /// A record's delivery state and why.
    struct Outcome: Sendable, Hashable {
        var delivery: PushTrace.Record.Delivery
        var reason: String?
    }

    /// A delivery state that became known for a tracked record.
    struct Update: Sendable, Hashable {
        var location: Location
        var recordID: String
        var outcome: Outcome
    }

    /// How many answers of records not (yet) tracked are remembered.
    static let recentCapacity = 4096

    private struct State {
        var tracked: [String: Location] = [:]
        /// How many tracked records fall on each bit of the filter (``DebugFilterBit``), and the bits with any.
        var perBit = [Int](repeating: 0, count: 64)
        var filter: UInt64 = 0
        var recent: [String: Outcome] = [:]
        /// The IDs in ``recent``, oldest first (a ring: ``next`` is the oldest once full).
        var order: [String] = []
        var next = 0

        mutating func startTracking(_ id: String, at location: Location) {
            guard tracked.updateValue(location, forKey: id) == nil else { return }
            let bit = DebugFilterBit.index(of: id)
            perBit[bit] += 1
            filter |= 1 << UInt64(bit)
        }

        mutating func stopTracking(_ id: String) {
            guard tracked.removeValue(forKey: id) != nil else { return }
            let bit = DebugFilterBit.index(of: id)
            perBit[bit] -= 1
            if perBit[bit] == 0 { filter &= ~(1 << UInt64(bit)) }
        }

        mutating func remember(_ id: String, _ outcome: Outcome) {
            if recent.updateValue(outcome, forKey: id) != nil { return }
            if order.count < DebugDeliveryTracker.recentCapacity {
                order.append(id)
            } else {
                recent[order[next]] = nil
                order[next] = id
                next = (next + 1) % DebugDeliveryTracker.recentCapacity
            }
        }
    }

    private let state = Mutex(State())
    /// The bits of the tracked records' IDs (``DebugFilterBit``), published under the lock after each change: a clear
    /// bit says, without the lock, that no record on it is tracked.
    private let trackedFilter = Atomic<UInt64>(0)

    /// Tracks the records `ids` of the push `sequence` of `userID`; returns the outcomes already answered.
    func track(_ ids: [String], userID: String, sequence: Int) -> [String: Outcome] {
        state.withLock { state in
            var known: [String: Outcome] = [:]
            for id in ids {
                if let outcome = state.recent[id] {
                    known[id] = outcome
                    if outcome.delivery == .retrying {
                        state.startTracking(id, at: Location(userID: userID, sequence: sequence))
                    }
                } else {
                    state.startTracking(id, at: Location(userID: userID, sequence: sequence))
                }
            }
            trackedFilter.store(state.filter, ordering: .releasing)
            return known
        }
    }

    /// Stops tracking `ids` (their push left its ring, or its user is no longer followed).
    func forget(_ ids: some Sequence<String>) {
        state.withLock { state in
            for id in ids { state.stopTracking(id) }
            trackedFilter.store(state.filter, ordering: .releasing)
        }
    }

    /// How many records are tracked.
    var trackedCount: Int { state.withLock { $0.tracked.count } }

    /// How many answers of records that were not tracked are remembered.
    var rememberedCount: Int { state.withLock { $0.recent.count } }

    /// What a destination's answer says of the tracked records: one update per tracked record it answered (a
    /// delivered or rejected record is then no longer tracked). With `remembering` (a traced push is in flight),
    /// the answers of the records not tracked are remembered for a while (``track(_:userID:sequence:)`` applies them);
    /// without, they are not looked at past the filter.
    func updates(for result: DeliveryResult, remembering: Bool) -> [Update] {
        if !remembering {
            let filter = trackedFilter.load(ordering: .acquiring)
            guard filter != 0, Self.answers(result, onAnyOf: filter) else { return [] }
        }
        return state.withLock { state in
            var updates: [Update] = []
            var changed = false
            func note(_ id: String, _ outcome: Outcome) {
                if let location = state.tracked[id] {
                    updates.append(Update(location: location, recordID: id, outcome: outcome))
                    if outcome.delivery != .retrying {
                        state.stopTracking(id)
                        changed = true
                    }
                } else if remembering {
                    state.remember(id, outcome)
                }
            }
            for record in result.accepted { note(record.id, Outcome(delivery: .delivered)) }
            for rejection in result.rejected {
                let reason = Self.reason(rejection.error)
                for record in rejection.records { note(record.id, Outcome(delivery: .rejected, reason: reason)) }
            }
            if !result.retryable.isEmpty {
                let reason = result.retryError.map(Self.reason) ?? "the destination asked to retry"
                for record in result.retryable { note(record.id, Outcome(delivery: .retrying, reason: reason)) }
            }
            if changed { trackedFilter.store(state.filter, ordering: .releasing) }
            return updates
        }
    }

    /// Whether `result` answers a record whose ID falls on a bit of `filter`.
    private static func answers(_ result: DeliveryResult, onAnyOf filter: UInt64) -> Bool {
        func onFilter(_ record: AnalyticsRecord) -> Bool { filter & DebugFilterBit.mask(of: record.id) != 0 }
        return result.accepted.contains(where: onFilter) || result.retryable.contains(where: onFilter)
            || result.rejected.contains { $0.records.contains(where: onFilter) }
    }

    /// An error's code and message (a destination's errors name no credential).
    static func reason(_ error: DeliveryError) -> String {
        var text = "\(error.code.rawValue): \(error.message)"
        if let status = error.status { text += " (HTTP \(status))" }
        return text
    }
}

/// The delivery pipeline's destination while the debug page is on: the service's own (Braze, or the JSON-lines
/// file), whose answers, while somebody is followed, update the delivery state of the followed users' records
/// (``DebugHub/noteDelivery(_:)``). It changes nothing in what is delivered or how.
struct DebugObservedDestination: AnalyticsDestination {
    let destination: any AnalyticsDestination
    let hub: DebugHub

    func deliver(_ records: [AnalyticsRecord]) async -> DeliveryResult {
        let result = await destination.deliver(records)
        hub.noteDelivery(result)
        return result
    }

    func deliver(_ records: [AnalyticsRecord], json: RecordsJSON?) async -> DeliveryResult {
        let result = await destination.deliver(records, json: json)
        hub.noteDelivery(result)
        return result
    }

    var preferredBatchSize: Int { destination.preferredBatchSize }

    func run() async throws { try await destination.run() }

    /// `destination`, observed by `debug` when the page is on.
    static func wrapping(_ destination: any AnalyticsDestination, debug: DebugHub?) -> any AnalyticsDestination {
        guard let debug else { return destination }
        return DebugObservedDestination(destination: destination, hub: debug)
    }
}

/// The bit that stands for a string in the debug page's 64-bit filters (the followed users', the tracked records'): one
/// of 64, by the string's hash. A clear bit says, without a lock, that no member of the filter is that string.
enum DebugFilterBit {
    /// The bit's position, 0 to 63.
    static func index(of key: String) -> Int { key.hashValue & 63 }

    /// The bit as a mask.
    static func mask(of key: String) -> UInt64 { 1 << UInt64(index(of: key)) }
}
