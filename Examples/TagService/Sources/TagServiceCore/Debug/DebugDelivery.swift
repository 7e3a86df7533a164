import ContainerKit
import ContainerKitBraze
import Synchronization

/// Where the records of followed users' pushes are on their way to the destination: the page's records show
/// `queued`, then `delivered`, `retrying` (with the error) or `rejected` (with the reason) as the delivery pipeline's
/// destination answers (``DebugObservedDestination``).
///
/// It tracks the records of the pushes kept in the followed users' rings only (``track(_:userID:sequence:)`` when a
/// push is recorded, ``forget(_:)`` when it leaves the ring), so its size is bounded by the rings'. A destination's
/// answer is looked at only while somebody is followed; then each answered record costs one lookup under this
/// tracker's own lock. A record answered before its push was recorded (the pipeline can deliver it between the
/// commit and the push's answer) is remembered among the last ``recentCapacity`` answers and applied when its push
/// is recorded.
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
        var recent: [String: Outcome] = [:]
        /// The IDs in ``recent``, oldest first (a ring: ``next`` is the oldest once full).
        var order: [String] = []
        var next = 0
    }

    private let state = Mutex(State())

    /// Tracks the records `ids` of the push `sequence` of `userID`; returns the outcomes already answered.
    func track(_ ids: [String], userID: String, sequence: Int) -> [String: Outcome] {
        state.withLock { state in
            var known: [String: Outcome] = [:]
            for id in ids {
                if let outcome = state.recent[id] {
                    known[id] = outcome
                    if outcome.delivery == .retrying {
                        state.tracked[id] = Location(userID: userID, sequence: sequence)
                    }
                } else {
                    state.tracked[id] = Location(userID: userID, sequence: sequence)
                }
            }
            return known
        }
    }

    /// Stops tracking `ids` (their push left its ring, or its user is no longer followed).
    func forget(_ ids: some Sequence<String>) {
        state.withLock { state in
            for id in ids { state.tracked[id] = nil }
        }
    }

    /// How many records are tracked.
    var trackedCount: Int { state.withLock { $0.tracked.count } }

    /// What a destination's answer says of the tracked records: one update per tracked record it answered (a
    /// delivered or rejected record is then no longer tracked); the others are remembered for a while.
    func updates(for result: DeliveryResult) -> [Update] {
        state.withLock { state in
            var updates: [Update] = []
            func note(_ id: String, _ outcome: Outcome) {
                if let location = state.tracked[id] {
                    updates.append(Update(location: location, recordID: id, outcome: outcome))
                    if outcome.delivery != .retrying { state.tracked[id] = nil }
                    return
                }
                if state.recent.updateValue(outcome, forKey: id) != nil { return }
                if state.order.count < Self.recentCapacity {
                    state.order.append(id)
                } else {
                    state.recent[state.order[state.next]] = nil
                    state.order[state.next] = id
                    state.next = (state.next + 1) % Self.recentCapacity
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
            return updates
        }
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
