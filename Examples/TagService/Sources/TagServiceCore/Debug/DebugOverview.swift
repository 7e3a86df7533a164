import ContainerKit
import Synchronization

/// The overview's figures over the last minutes: per tag, how often it fired, did not fire and was blocked in
/// **every** push (not only the traced ones), and the delivery backlog and latency, sampled by the debug service's
/// own task (``sample(backlog:delivered:at:)``).
///
/// **Counting every push, cheaply.** With the page on, the tag manager's observer is a ``DebugRuntimeObserver``:
/// each ``RuntimeEvent`` a push reports anyway (an event evaluated in a container, a tag fired, a tag blocked) bumps
/// one counter here — no trace, no allocation — in a ring of ``buckets`` fixed-size time buckets per container
/// (a slot is cleared when its time comes round again). A tag's "not fired" is what is left of its container's
/// evaluated events once its fired and blocked ones are taken away, so a push that fires nothing costs one bump
/// per container. The counters sit behind one short lock, and a bump hashes nothing and divides nothing: the
/// container's counters are found by comparing its ID with the few counted (not by hashing it), and the bucket of the
/// time is the last one's while the time is inside it. With the page off the observer is the metrics' alone and none
/// of this exists.
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

    /// One container's counters: a ring of ``DebugOverview/buckets`` slots, each the counts of one bucket.
    struct ContainerCounters: Sendable {
        /// The bucket number each slot counts (a slot of another number is stale: cleared before it counts).
        var slots = [Int](repeating: -1, count: DebugOverview.buckets)
        /// Events evaluated in the container, per slot.
        var evaluated = [Int](repeating: 0, count: DebugOverview.buckets)
        /// Per tag index, then per slot (`tag * buckets + slot`): fired, and blocked.
        var fired: [Int] = []
        var blocked: [Int] = []

        /// The slot of `bucket`, cleared first when it counted another bucket.
        mutating func slot(_ bucket: Int) -> Int {
            let slot = bucket % DebugOverview.buckets
            if slots[slot] != bucket {
                slots[slot] = bucket
                evaluated[slot] = 0
                var i = slot
                while i < fired.count {
                    fired[i] = 0
                    blocked[i] = 0
                    i += DebugOverview.buckets
                }
            }
            return slot
        }

        /// Counts an event evaluated in `bucket`.
        mutating func countEvaluated(bucket: Int) {
            evaluated[slot(bucket)] += 1
        }

        /// Counts tag `index` fired (or `blocked`) in `bucket`.
        mutating func count(tag index: Int, blocked isBlocked: Bool, bucket: Int) {
            let slot = slot(bucket)
            let needed = (index + 1) * DebugOverview.buckets
            if fired.count < needed {
                fired.append(contentsOf: repeatElement(0, count: needed - fired.count))
                blocked.append(contentsOf: repeatElement(0, count: needed - blocked.count))
            }
            if isBlocked {
                blocked[index * DebugOverview.buckets + slot] += 1
            } else {
                fired[index * DebugOverview.buckets + slot] += 1
            }
        }

        /// Tag `index`'s counts in the slot of `bucket`, or zero when the slot counts another bucket.
        func counts(tag index: Int, bucket: Int) -> Counts {
            let slot = bucket % DebugOverview.buckets
            guard bucket >= 0, slots[slot] == bucket else { return Counts() }
            let at = index * DebugOverview.buckets + slot
            let fired = at < self.fired.count ? self.fired[at] : 0
            let blocked = at < self.blocked.count ? self.blocked[at] : 0
            // A blocked tag that a setup tag's sequence ran anyway counts twice: never below zero.
            return Counts(fired: fired, notFired: max(0, evaluated[slot] - fired - blocked), blocked: blocked)
        }
    }

    private struct State {
        /// Each container's counters, by its ID, in the order first counted (one per container ID: a few).
        var containers: [(id: String, counters: ContainerCounters)] = []
        /// The bucket of the last count, and the times it spans.
        var bucket = 0
        var bucketStart: Duration = .zero
        var bucketEnd: Duration = .zero
        var deliveries: [DeliverySample] = []

        /// The number of the bucket of `time`.
        mutating func bucketNumber(at time: Duration) -> Int {
            if time >= bucketStart, time < bucketEnd { return bucket }
            bucket = DebugOverview.bucketNumber(time)
            bucketStart = DebugOverview.bucket * bucket
            bucketEnd = bucketStart + DebugOverview.bucket
            return bucket
        }

        /// The index of `containerID`'s counters in ``containers`` (added when it is new).
        mutating func index(of containerID: String) -> Int {
            for index in containers.indices where containers[index].id == containerID { return index }
            containers.append((containerID, ContainerCounters()))
            return containers.count - 1
        }

        func counters(of containerID: String) -> ContainerCounters? {
            containers.first { $0.id == containerID }?.counters
        }
    }

    private let state = Mutex(State())
    /// Monotonic time (the hub's: tests move it by hand).
    let now: @Sendable () -> Duration

    init(now: @escaping @Sendable () -> Duration) {
        self.now = now
    }

    /// Counts one report of a push (see ``DebugRuntimeObserver``): an event evaluated in a container, a tag fired
    /// (blocked by consent counts as blocked) or a tag blocked by a trigger.
    func count(_ event: RuntimeEvent) {
        let time = now()
        switch event {
        case .eventEvaluated(let containerID, _):
            state.withLock { state in
                let bucket = state.bucketNumber(at: time)
                state.containers[state.index(of: containerID)].counters.countEvaluated(bucket: bucket)
            }
        case .tagFired(let containerID, let index, _, _, let status):
            let blocked: Bool
            if case .blockedByConsent = status { blocked = true } else { blocked = false }
            bump(containerID, tag: index, blocked: blocked, at: time)
        case .tagBlocked(let containerID, let index, _):
            bump(containerID, tag: index, blocked: true, at: time)
        }
    }

    private func bump(_ containerID: String, tag index: Int, blocked: Bool, at time: Duration) {
        guard index >= 0 else { return }
        state.withLock { state in
            let bucket = state.bucketNumber(at: time)
            state.containers[state.index(of: containerID)].counters.count(
                tag: index,
                blocked: blocked,
                bucket: bucket
            )
        }
    }

    /// Per tag of `containers` (the live ones), the counts of the last ``buckets`` buckets, oldest first, ending
    /// with the one of `now`.
    func tagSeries(of containers: [Container], at now: Duration) -> [(tag: TagKey, counts: [Counts])] {
        let last = Self.bucketNumber(now)
        let counters = state.withLock { state in containers.map { state.counters(of: $0.id) } }
        var series: [(tag: TagKey, counts: [Counts])] = []
        for (container, counters) in zip(containers, counters) {
            for tag in container.tags {
                let key = TagKey(
                    containerID: container.id,
                    index: tag.index,
                    name: tag.name ?? tag.tagID.map { "tag \($0)" } ?? "tag #\(tag.index)"
                )
                let counts = ((last - Self.buckets + 1)...last).map {
                    counters?.counts(tag: tag.index, bucket: $0) ?? Counts()
                }
                series.append((key, counts))
            }
        }
        return series
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
