import ContainerKit
import Synchronization

/// The overview's figures over the last minutes: per tag, how often it fired, did not fire and was blocked in
/// the traced pushes (counted when a traced push is recorded: nothing on the path of a push that is not traced),
/// and the delivery backlog and latency, sampled by the debug service's own task (``sample(_:at:)``).
final class DebugOverview: Sendable {
    /// The width of one bar of a chart.
    static let bucket: Duration = .seconds(20)
    /// How many bars a chart has (10 minutes).
    static let buckets = 30
    /// How many delivery samples are kept (one per ``DebugService`` tick: 10 minutes at 5 s).
    static let samples = 120

    /// A tag of a container.
    struct TagKey: Hashable, Sendable, Comparable {
        var containerID: String
        var index: Int
        var name: String

        static func < (lhs: TagKey, rhs: TagKey) -> Bool {
            (lhs.containerID, lhs.index) < (rhs.containerID, rhs.index)
        }
    }

    /// Fired, not fired and blocked counts in one bucket.
    struct Counts: Sendable, Hashable {
        var fired = 0
        var notFired = 0
        var blocked = 0
    }

    /// One reading of the delivery pipeline.
    struct DeliverySample: Sendable, Hashable {
        /// When (monotonic).
        var time: Duration
        /// Records durable and not yet delivered or rejected.
        var backlog: Int
        /// Records delivered so far (a running total).
        var delivered: Int
        /// The time a record waits before it is delivered, estimated from the backlog and the delivery rate since
        /// the previous sample (Little's law); `nil` when nothing was delivered meanwhile.
        var latency: Duration?
    }

    private struct State {
        /// Per tag, counts by bucket number (monotonic time / ``bucket``).
        var tags: [TagKey: [Int: Counts]] = [:]
        var deliveries: [DeliverySample] = []
    }

    private let state = Mutex(State())

    /// Counts the tags of a traced push.
    func count(_ trace: PushTrace, at now: Duration) {
        let bucket = Self.bucketNumber(now)
        state.withLock { state in
            for evaluation in trace.evaluations {
                for tag in evaluation.tags {
                    let key = TagKey(
                        containerID: evaluation.containerID,
                        index: tag.index,
                        name: tag.name ?? "tag \(tag.index)"
                    )
                    var counts = state.tags[key, default: [:]][bucket, default: Counts()]
                    switch tag.outcome {
                    case .fired, .pending, .unsupported: counts.fired += 1
                    case .blocked, .blockedByConsent: counts.blocked += 1
                    case .notFired, .paused, .alreadyFired: counts.notFired += 1
                    case .duplicate: continue
                    }
                    state.tags[key, default: [:]][bucket] = counts
                }
            }
            // Buckets older than the charts are forgotten.
            for key in state.tags.keys {
                state.tags[key] = state.tags[key]!.filter { $0.key > bucket - Self.buckets }
            }
        }
    }

    /// Per tag, the counts of the last ``buckets`` buckets, oldest first, ending with the one of `now`.
    func tagSeries(at now: Duration) -> [(tag: TagKey, counts: [Counts])] {
        let last = Self.bucketNumber(now)
        return state.withLock { state in
            state.tags.keys.sorted().map { key in
                let buckets = state.tags[key]!
                return (key, ((last - Self.buckets + 1)...last).map { buckets[$0] ?? Counts() })
            }
        }
    }

    /// Adds a reading of the delivery pipeline: `backlog` records waiting, `delivered` delivered so far.
    func sample(backlog: Int, delivered: Int, at now: Duration) {
        state.withLock { state in
            var latency: Duration?
            if let previous = state.deliveries.last, delivered > previous.delivered, now > previous.time {
                let perSecond = Double(delivered - previous.delivered) / (now - previous.time).inSeconds
                latency = .milliseconds(Int64((Double(backlog) / perSecond * 1000).rounded()))
            } else if backlog == 0 {
                latency = .zero
            }
            state.deliveries.append(DeliverySample(time: now, backlog: backlog, delivered: delivered, latency: latency))
            if state.deliveries.count > Self.samples { state.deliveries.removeFirst() }
        }
    }

    /// The delivery samples kept, oldest first.
    var deliveries: [DeliverySample] { state.withLock { $0.deliveries } }

    static func bucketNumber(_ time: Duration) -> Int {
        Int(time.components.seconds / bucket.components.seconds)
    }
}

extension Duration {
    /// The duration in seconds.
    var inSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
